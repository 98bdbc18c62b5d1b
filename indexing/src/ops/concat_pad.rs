//! Concatenate (per operand, restricted to its slab of the output) and pad (low, high,
//! negative and interior padding as constraints; the padding value maps from every output
//! element, a superset).

use affine::{Expr, Interval};

use super::util::{c, dims_of, from_scalar, map, to_scalar, OpView};
use crate::{IndexingError, OperandIndexing};

fn concat_dim(v: &OpView<'_>) -> Result<usize, IndexingError> {
    let dims = v.dimensions()?;
    match dims {
        [d] if (*d as usize) < v.out_dims(0)?.len() && *d >= 0 => Ok(*d as usize),
        _ => Err(v.malformed("concatenate needs one dimension")),
    }
}

/// Offsets of each operand along the concatenated dimension.
fn offsets(v: &OpView<'_>, dim: usize) -> Result<Vec<i64>, IndexingError> {
    let mut off = 0;
    let mut out = Vec::with_capacity(v.arity());
    for j in 0..v.arity() {
        out.push(off);
        let d = v.operand_dims(j)?;
        off += d
            .get(dim)
            .ok_or_else(|| v.malformed("operand rank differs"))?;
    }
    Ok(out)
}

pub(crate) fn concat_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let dim = concat_dim(v)?;
    let out = v.out_dims(0)?;
    let offs = offsets(v, dim)?;
    (0..v.arity())
        .map(|j| {
            let size = v.operand_dims(j)?[dim];
            let mut results = dims_of(out.len());
            results[dim] = Expr::dim(dim as u32) - offs[j];
            let cons = vec![(
                Expr::dim(dim as u32),
                Interval::new(offs[j], offs[j] + size - 1),
            )];
            Ok(OperandIndexing::map(map(out, &[], results, cons)?))
        })
        .collect()
}

pub(crate) fn concat_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let dim = concat_dim(v)?;
    let offs = offsets(v, dim)?;
    let od = v.operand_dims(operand)?;
    let mut results = dims_of(od.len());
    results[dim] = Expr::dim(dim as u32) + offs[operand];
    Ok(vec![OperandIndexing::map(map(od, &[], results, vec![])?)])
}

fn padding<'a>(v: &OpView<'a>) -> Result<&'a [hlo::attrs::PaddingDim], IndexingError> {
    let p = v
        .instr
        .padding()
        .ok_or_else(|| v.malformed("missing padding=..."))?;
    if p.dims.len() != v.operand_dims(0)?.len() || p.dims.iter().any(|d| d.interior < 0) {
        return Err(v.malformed("padding does not fit the operand"));
    }
    Ok(&p.dims)
}

pub(crate) fn pad_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let pads = padding(v)?;
    let out = v.out_dims(0)?;
    let input = v.operand_dims(0)?;
    let mut results = Vec::new();
    let mut cons = Vec::new();
    for (i, p) in pads.iter().enumerate() {
        let x = Expr::dim(i as u32) - p.low;
        let step = p.interior + 1;
        // Output positions holding operand elements: low + k * step, k in [0, n - 1].
        cons.push((x, Interval::new(0, (input[i] - 1) * step)));
        if step == 1 {
            results.push(x);
        } else {
            cons.push((x.modulo(c(step)), Interval::point(0)));
            results.push(x.floor_div(c(step)));
        }
    }
    let operand = OperandIndexing::map(map(out, &[], results, cons)?);
    Ok(vec![operand, to_scalar(out)?])
}

pub(crate) fn pad_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    if operand == 1 {
        return Ok(vec![from_scalar(out)?]);
    }
    let pads = padding(v)?;
    let input = v.operand_dims(0)?;
    let mut results = Vec::new();
    let mut cons = Vec::new();
    for (i, p) in pads.iter().enumerate() {
        let e = Expr::dim(i as u32) * (p.interior + 1) + p.low;
        results.push(e);
        cons.push((e, Interval::new(0, out[i] - 1)));
    }
    Ok(vec![OperandIndexing::map(map(input, &[], results, cons)?)])
}
