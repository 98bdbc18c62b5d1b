//! `scaled-dot(lhs, rhs, lhs_scale, rhs_scale)`: a dot of block-scaled operands (the
//! microscaling formats: narrow floats with one scale per block of elements).

use super::dot::Contraction;
use super::util::{dims_of, operand, product, strides};
use super::widen::{load, with_bufs, Buf, Domain, Num};
use super::KernelError;
use hlo::literal::ArrayLiteral;
use hlo::{Instruction, Literal};

/// Every element of `values` (an array of `dims`) times the scale of its block. `scale`
/// is a scalar, or has `dims`' rank with each dimension dividing `dims`' (block size
/// `dims[d] / scale_dims[d]`).
fn apply_scale(
    values: &Buf,
    dims: &[usize],
    scale: &Buf,
    scale_dims: &[usize],
    side: &str,
) -> Result<Buf, KernelError> {
    let n = product(dims);
    let index: Vec<usize> = if scale_dims.is_empty() {
        vec![0; n]
    } else {
        if scale_dims.len() != dims.len()
            || dims
                .iter()
                .zip(scale_dims)
                .any(|(&o, &s)| s == 0 || o % s != 0)
        {
            return Err(KernelError::Invalid(format!(
                "scaled-dot: {side} scale dimensions {scale_dims:?} do not divide the {side}'s {dims:?}"
            )));
        }
        let block: Vec<usize> = dims.iter().zip(scale_dims).map(|(o, s)| o / s).collect();
        let sst = strides(scale_dims);
        let mut idx = vec![0usize; dims.len()];
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(
                idx.iter()
                    .zip(&block)
                    .zip(&sst)
                    .map(|((&i, &b), &st)| i / b * st)
                    .sum(),
            );
            // Row-major odometer step.
            for d in (0..dims.len()).rev() {
                idx[d] += 1;
                if idx[d] < dims[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        out
    };
    let per_element = scale.pick(&index);
    Ok(with_bufs!(
        (values => v, &per_element => s),
        v.iter().zip(s).map(|(&x, &y)| x.mul(y)).collect(),
        scaled_dot
    ))
}

/// Evaluates `scaled-dot`: each operand is multiplied by its scales in the widest domain
/// of the operands, scales and result (`f32` for the narrow floats), then contracted as
/// a `dot` with the instruction's dimension numbers.
pub(crate) fn scaled_dot(
    instr: &Instruction,
    operands: &[&Literal],
) -> Result<Literal, KernelError> {
    let what = "scaled-dot";
    let (lhs, rhs) = (operand(operands, 0, what)?, operand(operands, 1, what)?);
    let scales = [operand(operands, 2, what)?, operand(operands, 3, what)?];
    let c = Contraction::new(instr, lhs, rhs, what)?;
    let domain = Domain::of(&[
        lhs.element_type(),
        rhs.element_type(),
        scales[0].element_type(),
        scales[1].element_type(),
        c.out_ty,
    ]);
    let scaled = |side: &str, values, dims: &[usize], scale: &ArrayLiteral| {
        apply_scale(
            &load(domain, values, &format!("{what} {side}"))?,
            dims,
            &load(domain, scale, &format!("{what} {side} scale"))?,
            &dims_of(scale.shape(), &format!("{what} {side} scale"))?,
            side,
        )
    };
    let a = scaled("lhs", lhs, &c.ld, scales[0])?;
    let b = scaled("rhs", rhs, &c.rd, scales[1])?;
    c.finish(instr, &a, &b, what)
}
