//! Sort (each output reads the whole sorted dimension of every operand), top-k and
//! select-and-scatter (windows that cover an element, as constraints).

use affine::{Expr, Interval};

use super::util::{check_dims, dims_of, from_scalar, map, to_scalar, OpView};
use crate::{IndexingError, OperandIndexing};

fn sort_dim(v: &OpView<'_>) -> Result<usize, IndexingError> {
    let rank = v.operand_dims(0)?.len();
    let dims = v.dimensions()?;
    check_dims(v, dims, rank)?;
    match dims {
        [d] => Ok(*d as usize),
        _ => Err(v.malformed("sort needs one dimension")),
    }
}

/// `(d...)[s] -> (d... with d_dim = s)`: the whole sorted dimension.
fn along(dims: &[i64], dim: usize, size: i64) -> Result<OperandIndexing, IndexingError> {
    let mut r = dims_of(dims.len());
    r[dim] = Expr::range(0);
    Ok(OperandIndexing::map(map(dims, &[size], r, vec![])?))
}

pub(crate) fn sort_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let dim = sort_dim(v)?;
    let out = v.out_dims(k)?;
    let m = along(out, dim, out[dim])?;
    Ok(vec![m; v.arity()])
}

pub(crate) fn sort_in_to_out(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let dim = sort_dim(v)?;
    let n = v.instr.shape().leaf_count().max(1);
    let d = v.operand_dims(0)?;
    Ok(vec![along(d, dim, d[dim])?; n])
}

pub(crate) fn topk_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let input = v.operand_dims(0)?;
    let out = v.out_dims(k)?;
    if input.is_empty() || out.len() != input.len() {
        return Err(v.malformed("top-k needs operand and results of equal rank >= 1"));
    }
    let last = input.len() - 1;
    let mut r = dims_of(out.len());
    r[last] = Expr::range(0);
    Ok(vec![OperandIndexing::map(map(
        out,
        &[input[last]],
        r,
        vec![],
    )?)])
}

pub(crate) fn topk_in_to_out(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let input = v.operand_dims(0)?;
    (0..v.instr.shape().leaf_count().max(1))
        .map(|k| {
            let out = v.out_dims(k)?;
            if input.is_empty() || out.len() != input.len() {
                return Err(v.malformed("top-k needs operand and results of equal rank >= 1"));
            }
            let last = input.len() - 1;
            let mut r = dims_of(out.len());
            r[last] = Expr::range(0);
            Ok(OperandIndexing::map(map(input, &[out[last]], r, vec![])?))
        })
        .collect()
}

fn sas_window<'a>(v: &OpView<'a>) -> Result<Option<&'a [hlo::attrs::WindowDim]>, IndexingError> {
    let w = v
        .instr
        .window()
        .ok_or_else(|| v.malformed("missing window={...}"))?;
    if w.dims.len() != v.operand_dims(0)?.len()
        || w.dims.iter().any(|d| d.stride <= 0 || d.size <= 0)
    {
        return Err(v.malformed("window does not fit the operand"));
    }
    if w.dims
        .iter()
        .any(|d| d.base_dilation != 1 || d.window_dilation != 1)
    {
        return Ok(None);
    }
    Ok(Some(&w.dims))
}

/// Source element `s` (range variables `src`) has the window of operand positions
/// `s * stride + w - low`; the output elements it may write are exactly those.
pub(crate) fn sas_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let Some(w) = sas_window(v)? else {
        let u = OperandIndexing::undefined("select-and-scatter with dilation");
        return Ok(vec![u.clone(), u, to_scalar(v.out_dims(0)?)?]);
    };
    let out = v.out_dims(0)?;
    let src = v.operand_dims(1)?;
    let rank = out.len();
    let mut ranges: Vec<i64> = src.to_vec();
    let mut cover = Vec::new();
    let mut op_r = Vec::new();
    for (i, wd) in w.iter().enumerate() {
        let s = Expr::range(i as u32);
        let d = Expr::dim(i as u32);
        cover.push((
            d - s * wd.stride + wd.padding_low,
            Interval::new(0, wd.size - 1),
        ));
        let mut p = s * wd.stride - wd.padding_low;
        if wd.size > 1 {
            p = p + Expr::range(ranges.len() as u32);
            ranges.push(wd.size);
        }
        op_r.push(p);
    }
    let mut op_cons = cover.clone();
    for (i, &p) in op_r.iter().enumerate() {
        op_cons.push((p, Interval::new(0, out[i] - 1)));
    }
    let src_r: Vec<Expr> = (0..rank as u32).map(Expr::range).collect();
    Ok(vec![
        OperandIndexing::map(map(out, &ranges, op_r, op_cons)?),
        OperandIndexing::map(map(out, src, src_r, cover)?),
        to_scalar(out)?,
    ])
}

pub(crate) fn sas_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    if operand == 2 {
        return Ok(vec![from_scalar(out)?]);
    }
    let Some(w) = sas_window(v)? else {
        return Ok(vec![OperandIndexing::undefined(
            "select-and-scatter with dilation",
        )]);
    };
    let src = v.operand_dims(1)?;
    let from = v.operand_dims(operand)?;
    let mut ranges = Vec::new();
    let mut results = Vec::new();
    let mut cons = Vec::new();
    for (i, wd) in w.iter().enumerate() {
        let d = Expr::dim(i as u32);
        let s = if operand == 0 {
            // The source elements whose window covers d.
            let s = Expr::range(ranges.len() as u32);
            ranges.push(src[i]);
            cons.push((
                d - s * wd.stride + wd.padding_low,
                Interval::new(0, wd.size - 1),
            ));
            s
        } else {
            d
        };
        let mut p = s * wd.stride - wd.padding_low;
        if wd.size > 1 {
            p = p + Expr::range(ranges.len() as u32);
            ranges.push(wd.size);
        }
        cons.push((p, Interval::new(0, out[i] - 1)));
        results.push(p);
    }
    Ok(vec![OperandIndexing::map(map(
        from, &ranges, results, cons,
    )?)])
}
