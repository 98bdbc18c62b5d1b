//! Broadcast, transpose, reverse and slice: each result index is one variable, moved,
//! reflected or strided.

use affine::{Expr, Interval};

use super::util::{c, check_dims, map, OpView};
use crate::{IndexingError, OperandIndexing};

pub(crate) fn broadcast_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    let dims = v.dimensions()?;
    check_dims(v, dims, out.len())?;
    if dims.len() != v.operand_dims(0)?.len() {
        return Err(v.malformed("dimensions={...} does not match the operand's rank"));
    }
    let results = dims.iter().map(|&d| Expr::dim(d as u32)).collect();
    Ok(vec![OperandIndexing::map(map(out, &[], results, vec![])?)])
}

pub(crate) fn broadcast_in_to_out(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    let input = v.operand_dims(0)?;
    let dims = v.dimensions()?;
    check_dims(v, dims, out.len())?;
    let mut results = Vec::with_capacity(out.len());
    let mut ranges = Vec::new();
    for (k, &n) in out.iter().enumerate() {
        match dims.iter().position(|&d| d as usize == k) {
            Some(p) => results.push(Expr::dim(p as u32)),
            None => {
                results.push(Expr::range(ranges.len() as u32));
                ranges.push(n);
            }
        }
    }
    Ok(vec![OperandIndexing::map(map(
        input,
        &ranges,
        results,
        vec![],
    )?)])
}

fn permutation<'a>(v: &OpView<'a>) -> Result<&'a [i64], IndexingError> {
    let perm = v.dimensions()?;
    check_dims(v, perm, perm.len())?;
    if perm.len() != v.operand_dims(0)?.len() {
        return Err(v.malformed("dimensions={...} is not a permutation of the operand's dims"));
    }
    Ok(perm)
}

pub(crate) fn transpose_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let perm = permutation(v)?;
    let mut results = vec![c(0); perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        results[p as usize] = Expr::dim(i as u32);
    }
    Ok(vec![OperandIndexing::map(map(
        v.out_dims(0)?,
        &[],
        results,
        vec![],
    )?)])
}

pub(crate) fn transpose_in_to_out(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let perm = permutation(v)?;
    let results = perm.iter().map(|&p| Expr::dim(p as u32)).collect();
    Ok(vec![OperandIndexing::map(map(
        v.operand_dims(0)?,
        &[],
        results,
        vec![],
    )?)])
}

/// The same map both ways: reversed dimensions count down from the end.
pub(crate) fn reverse(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    let dims = v.dimensions()?;
    check_dims(v, dims, out.len())?;
    let results = (0..out.len())
        .map(|i| {
            let d = Expr::dim(i as u32);
            if dims.contains(&(i as i64)) {
                c(out[i] - 1) - d
            } else {
                d
            }
        })
        .collect();
    Ok(vec![OperandIndexing::map(map(out, &[], results, vec![])?)])
}

fn slice_dims<'a>(v: &OpView<'a>) -> Result<&'a [hlo::attrs::SliceDim], IndexingError> {
    let s = v
        .instr
        .slice()
        .ok_or_else(|| v.malformed("missing slice={...}"))?;
    if s.len() != v.operand_dims(0)?.len() || s.iter().any(|d| d.stride <= 0) {
        return Err(v.malformed("slice={...} does not fit the operand"));
    }
    Ok(s)
}

pub(crate) fn slice_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let s = slice_dims(v)?;
    let results = s
        .iter()
        .enumerate()
        .map(|(i, d)| Expr::dim(i as u32) * d.stride + d.start)
        .collect();
    Ok(vec![OperandIndexing::map(map(
        v.out_dims(0)?,
        &[],
        results,
        vec![],
    )?)])
}

pub(crate) fn slice_in_to_out(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let s = slice_dims(v)?;
    let out = v.out_dims(0)?;
    let mut results = Vec::new();
    let mut constraints = Vec::new();
    for (i, d) in s.iter().enumerate() {
        let x = Expr::dim(i as u32) - d.start;
        results.push(if d.stride == 1 {
            x
        } else {
            x.floor_div(c(d.stride))
        });
        let last = d.start + (out[i] - 1) * d.stride;
        constraints.push((Expr::dim(i as u32), Interval::new(d.start, last)));
        if d.stride > 1 {
            constraints.push((x.modulo(c(d.stride)), Interval::point(0)));
        }
    }
    Ok(vec![OperandIndexing::map(map(
        v.operand_dims(0)?,
        &[],
        results,
        constraints,
    )?)])
}
