//! Reduce (variadic; reduced dimensions become range variables; init values map to `()`)
//! and reduce-window (strides, padding, base and window dilation as constraints).

use affine::{Expr, Interval};

use super::util::{c, from_scalar, map, to_scalar, OpView};
use crate::{IndexingError, OperandIndexing};

fn reduce_parts<'a>(v: &OpView<'a>) -> Result<(usize, &'a [i64]), IndexingError> {
    let n = v.arity() / 2;
    if n == 0 || v.arity() != 2 * n {
        return Err(v.malformed("reduce needs inputs and as many init values"));
    }
    let dims = v.dimensions()?;
    super::util::check_dims(v, dims, v.operand_dims(0)?.len())?;
    Ok((n, dims))
}

pub(crate) fn reduce_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let (n, reduced) = reduce_parts(v)?;
    let input = v.operand_dims(0)?;
    let out = v.out_dims(k)?;
    let mut results = Vec::new();
    let mut ranges = Vec::new();
    let mut kept = 0u32;
    for (i, &size) in input.iter().enumerate() {
        if reduced.contains(&(i as i64)) {
            results.push(Expr::range(ranges.len() as u32));
            ranges.push(size);
        } else {
            results.push(Expr::dim(kept));
            kept += 1;
        }
    }
    if kept as usize != out.len() {
        return Err(v.malformed("result rank does not match the kept dimensions"));
    }
    let m = map(out, &ranges, results, vec![])?;
    let mut ops = vec![OperandIndexing::map(m); n];
    for _ in 0..n {
        ops.push(to_scalar(out)?);
    }
    Ok(ops)
}

pub(crate) fn reduce_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let (n, reduced) = reduce_parts(v)?;
    let input = v.operand_dims(0)?;
    (0..n)
        .map(|k| {
            let out = v.out_dims(k)?;
            if operand >= n {
                return from_scalar(out);
            }
            let results = (0..input.len())
                .filter(|i| !reduced.contains(&(*i as i64)))
                .map(|i| Expr::dim(i as u32))
                .collect();
            Ok(OperandIndexing::map(map(input, &[], results, vec![])?))
        })
        .collect()
}

fn window<'a>(v: &OpView<'a>) -> Result<&'a [hlo::attrs::WindowDim], IndexingError> {
    let w = v
        .instr
        .window()
        .ok_or_else(|| v.malformed("missing window={...}"))?;
    let rank = v.operand_dims(0)?.len();
    if w.dims.len() != rank
        || w.dims
            .iter()
            .any(|d| d.stride <= 0 || d.base_dilation <= 0 || d.window_dilation <= 0 || d.size <= 0)
    {
        return Err(v.malformed("window does not fit the operand"));
    }
    Ok(&w.dims)
}

pub(crate) fn reduce_window_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let n = v.arity() / 2;
    let w = window(v)?;
    let input = v.operand_dims(0)?;
    let out = v.out_dims(k)?;
    let mut results = Vec::new();
    let mut ranges = Vec::new();
    let mut cons = Vec::new();
    for (i, wd) in w.iter().enumerate() {
        let mut p = Expr::dim(i as u32) * wd.stride - wd.padding_low;
        if wd.size > 1 {
            p = p + Expr::range(ranges.len() as u32) * wd.window_dilation;
            ranges.push(wd.size);
        }
        let b = wd.base_dilation;
        cons.push((p, Interval::new(0, (input[i] - 1) * b)));
        if b > 1 {
            cons.push((p.modulo(c(b)), Interval::point(0)));
            results.push(p.floor_div(c(b)));
        } else {
            results.push(p);
        }
    }
    let m = map(out, &ranges, results, cons)?;
    let mut ops = vec![OperandIndexing::map(m); n];
    for _ in 0..n {
        ops.push(to_scalar(out)?);
    }
    Ok(ops)
}

pub(crate) fn reduce_window_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let n = v.arity() / 2;
    let w = window(v)?;
    let input = v.operand_dims(0)?;
    (0..n)
        .map(|k| {
            let out = v.out_dims(k)?;
            if operand >= n {
                return from_scalar(out);
            }
            let mut results = Vec::new();
            let mut ranges = Vec::new();
            let mut cons = Vec::new();
            for (i, wd) in w.iter().enumerate() {
                // Output o reads dilated position o * stride + s * wdil - low = d * b.
                let mut x = Expr::dim(i as u32) * wd.base_dilation + wd.padding_low;
                if wd.size > 1 {
                    x = x - Expr::range(ranges.len() as u32) * wd.window_dilation;
                    ranges.push(wd.size);
                }
                let q = if wd.stride == 1 {
                    x
                } else {
                    cons.push((x.modulo(c(wd.stride)), Interval::point(0)));
                    x.floor_div(c(wd.stride))
                };
                cons.push((q, Interval::new(0, out[i] - 1)));
                results.push(q);
            }
            Ok(OperandIndexing::map(map(input, &ranges, results, cons)?))
        })
        .collect()
}
