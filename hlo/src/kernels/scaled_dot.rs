//! `scaled-dot(lhs, rhs, lhs_scale, rhs_scale)`: a dot of block-scaled operands (the
//! microscaling formats: narrow floats with one scale per block of elements).

use super::dot::{dot_bufs, DotDims};
use super::numeric::{load, store, with_bufs, Buf, Domain, Num};
use super::util::{dims_of, operand, product, strides};
use super::KernelError;
use crate::{Instruction, Literal};

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
    let lhs = operand(operands, 0, "scaled-dot")?;
    let rhs = operand(operands, 1, "scaled-dot")?;
    let ls = operand(operands, 2, "scaled-dot")?;
    let rs = operand(operands, 3, "scaled-dot")?;
    let ld = dims_of(lhs.shape(), "scaled-dot lhs")?;
    let rd = dims_of(rhs.shape(), "scaled-dot rhs")?;
    let lsd = dims_of(ls.shape(), "scaled-dot lhs scale")?;
    let rsd = dims_of(rs.shape(), "scaled-dot rhs scale")?;
    let dd = DotDims::new(&instr.dot_dimension_numbers(), &ld, &rd, "scaled-dot")?;
    let out_shape = instr.shape();
    let out_dims = dims_of(out_shape, "scaled-dot result")?;
    let expected = dd.out_dims(&ld, &rd);
    if out_dims != expected {
        return Err(KernelError::Invalid(format!(
            "scaled-dot: result dimensions {out_dims:?} differ from batch, lhs free, rhs free {expected:?}"
        )));
    }
    let out_ty = super::util::elem_type(out_shape, "scaled-dot result")?;
    let domain = Domain::of(&[
        lhs.element_type(),
        rhs.element_type(),
        ls.element_type(),
        rs.element_type(),
        out_ty,
    ]);
    let a = apply_scale(
        &load(domain, lhs, "scaled-dot lhs")?,
        &ld,
        &load(domain, ls, "scaled-dot lhs scale")?,
        &lsd,
        "lhs",
    )?;
    let b = apply_scale(
        &load(domain, rhs, "scaled-dot rhs")?,
        &rd,
        &load(domain, rs, "scaled-dot rhs scale")?,
        &rsd,
        "rhs",
    )?;
    store(dot_bufs(&a, &ld, &b, &rd, &dd)?, out_shape, "scaled-dot")
}
