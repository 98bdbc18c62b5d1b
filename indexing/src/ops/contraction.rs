//! Dot (batch and free dimensions to output dimensions, contracting dimensions as range
//! variables) and convolution (window positions and input features as range variables;
//! padding, strides, base and window dilation as constraints; kernel reversal; feature and
//! batch groups).

use affine::{Expr, Interval};

use super::util::{c, map, OpView};
use crate::{IndexingError, OperandIndexing};

struct DotDims {
    lhs_batch: Vec<usize>,
    rhs_batch: Vec<usize>,
    lhs_contract: Vec<usize>,
    rhs_contract: Vec<usize>,
    lhs_free: Vec<usize>,
    rhs_free: Vec<usize>,
}

fn dot_dims(v: &OpView<'_>) -> Result<DotDims, IndexingError> {
    let dn = v.instr.dot_dimension_numbers();
    let (lr, rr) = (v.operand_dims(0)?.len(), v.operand_dims(1)?.len());
    let conv = |xs: &[i64], rank: usize| -> Result<Vec<usize>, IndexingError> {
        xs.iter()
            .map(|&x| {
                usize::try_from(x)
                    .ok()
                    .filter(|&x| x < rank)
                    .ok_or_else(|| v.malformed(format!("bad dot dimension {x}")))
            })
            .collect()
    };
    let lhs_batch = conv(&dn.lhs_batch_dims, lr)?;
    let rhs_batch = conv(&dn.rhs_batch_dims, rr)?;
    let lhs_contract = conv(&dn.lhs_contracting_dims, lr)?;
    let rhs_contract = conv(&dn.rhs_contracting_dims, rr)?;
    if lhs_batch.len() != rhs_batch.len() || lhs_contract.len() != rhs_contract.len() {
        return Err(v.malformed("lhs and rhs dimension lists differ in length"));
    }
    let free = |rank: usize, a: &[usize], b: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|i| !a.contains(i) && !b.contains(i))
            .collect()
    };
    let lhs_free = free(lr, &lhs_batch, &lhs_contract);
    let rhs_free = free(rr, &rhs_batch, &rhs_contract);
    let out_rank = lhs_batch.len() + lhs_free.len() + rhs_free.len();
    if out_rank != v.out_dims(0)?.len() {
        return Err(v.malformed("result rank does not match the dot dimensions"));
    }
    Ok(DotDims {
        lhs_batch,
        rhs_batch,
        lhs_contract,
        rhs_contract,
        lhs_free,
        rhs_free,
    })
}

/// The contracting sizes (the range variables' extents), then the lhs and rhs results of a
/// dot's output-to-input maps (batch and free dimensions from the output).
type DotResults = (Vec<i64>, Vec<Expr>, Vec<Expr>);

/// [`DotResults`] of dot-like instruction `v`.
fn dot_operand_results(v: &OpView<'_>) -> Result<DotResults, IndexingError> {
    let dd = dot_dims(v)?;
    let lhs = v.operand_dims(0)?;
    let nb = dd.lhs_batch.len();
    let contract_sizes: Vec<i64> = dd.lhs_contract.iter().map(|&i| lhs[i]).collect();
    let side = |rank: usize, batch: &[usize], contract: &[usize], free: &[usize], first: usize| {
        let mut r = vec![c(0); rank];
        for (k, &b) in batch.iter().enumerate() {
            r[b] = Expr::dim(k as u32);
        }
        for (k, &x) in contract.iter().enumerate() {
            r[x] = Expr::range(k as u32);
        }
        for (k, &f) in free.iter().enumerate() {
            r[f] = Expr::dim((first + k) as u32);
        }
        r
    };
    let l = side(lhs.len(), &dd.lhs_batch, &dd.lhs_contract, &dd.lhs_free, nb);
    let r = side(
        v.operand_dims(1)?.len(),
        &dd.rhs_batch,
        &dd.rhs_contract,
        &dd.rhs_free,
        nb + dd.lhs_free.len(),
    );
    Ok((contract_sizes, l, r))
}

pub(crate) fn dot_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    let (contract_sizes, l, r) = dot_operand_results(v)?;
    Ok(vec![
        OperandIndexing::map(map(out, &contract_sizes, l, vec![])?),
        OperandIndexing::map(map(out, &contract_sizes, r, vec![])?),
    ])
}

/// Block sizes of scale operand `scale` for operand `of` of a scaled dot: empty for a
/// scalar scale, else `of`'s dimension over the scale's, per dimension.
fn scale_blocks(v: &OpView<'_>, of: usize, scale: usize) -> Result<Vec<i64>, IndexingError> {
    let (o, s) = (v.operand_dims(of)?, v.operand_dims(scale)?);
    if s.is_empty() {
        return Ok(Vec::new());
    }
    if s.len() != o.len() || o.iter().zip(s).any(|(&a, &b)| b <= 0 || a % b != 0) {
        return Err(v.malformed(format!(
            "scale {s:?} is not one per block of the operand {o:?}"
        )));
    }
    Ok(o.iter().zip(s).map(|(a, b)| a / b).collect())
}

/// `scaled-dot(lhs, rhs, lhs_scale, rhs_scale)`: lhs and rhs as a dot; a scale is read at
/// its operand's index divided by the block size (a scalar scale by every element).
pub(crate) fn scaled_dot_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    let (contract_sizes, l, r) = dot_operand_results(v)?;
    let scaled = |results: &[Expr], blocks: &[i64]| -> Vec<Expr> {
        blocks
            .iter()
            .zip(results)
            .map(|(&b, &e)| e.floor_div(c(b)))
            .collect()
    };
    let ls = scaled(&l, &scale_blocks(v, 0, 2)?);
    let rs = scaled(&r, &scale_blocks(v, 1, 3)?);
    [l, r, ls, rs]
        .into_iter()
        .map(|results| {
            Ok(OperandIndexing::map(map(
                out,
                &contract_sizes,
                results,
                vec![],
            )?))
        })
        .collect()
}

/// Input-to-output maps of a scaled dot: lhs and rhs as a dot; a scale element reaches
/// every output whose batch and free coordinates fall in its block.
pub(crate) fn scaled_dot_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    if operand < 2 {
        return dot_in_to_out(v, operand);
    }
    let side = operand - 2;
    let blocks = scale_blocks(v, side, operand)?;
    side_in_to_out(v, side, operand, &blocks)
}

pub(crate) fn dot_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let unit = vec![1; v.operand_dims(operand)?.len()];
    side_in_to_out(v, operand, operand, &unit)
}

/// From an element of `operand` (the `side` operand of a dot, or its scale) to the dot's
/// outputs: each batch and free coordinate of that side covers `blocks[d]` outputs (all of
/// them when `blocks` is empty: a scalar), the other side's free coordinates all outputs.
fn side_in_to_out(
    v: &OpView<'_>,
    side: usize,
    operand: usize,
    blocks: &[i64],
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let dd = dot_dims(v)?;
    let out = v.out_dims(0)?;
    let nb = dd.lhs_batch.len();
    let nlf = dd.lhs_free.len();
    let (batch, own_free, own_first, other_first, other_count) = if side == 0 {
        (&dd.lhs_batch, &dd.lhs_free, nb, nb + nlf, dd.rhs_free.len())
    } else {
        (&dd.rhs_batch, &dd.rhs_free, nb + nlf, nb, nlf)
    };
    let mut results = vec![c(0); out.len()];
    let mut ranges = Vec::new();
    let own = batch
        .iter()
        .enumerate()
        .chain(own_free.iter().enumerate().map(|(k, f)| (own_first + k, f)));
    for (pos, &d) in own {
        results[pos] = match blocks.get(d) {
            None => {
                ranges.push(out[pos]);
                Expr::range(ranges.len() as u32 - 1)
            }
            Some(&1) => Expr::dim(d as u32),
            Some(&b) => {
                ranges.push(b);
                Expr::dim(d as u32) * b + Expr::range(ranges.len() as u32 - 1)
            }
        };
    }
    for k in 0..other_count {
        ranges.push(out[other_first + k]);
        results[other_first + k] = Expr::range(ranges.len() as u32 - 1);
    }
    Ok(vec![OperandIndexing::map(map(
        v.operand_dims(operand)?,
        &ranges,
        results,
        vec![],
    )?)])
}

struct Conv<'a> {
    dn: &'a hlo::attrs::ConvDimensionNumbers,
    window: &'a [hlo::attrs::WindowDim],
    lhs: &'a [i64],
    rhs: &'a [i64],
    out: &'a [i64],
    groups: i64,
    batch_groups: i64,
}

fn conv<'a>(v: &OpView<'a>) -> Result<Conv<'a>, IndexingError> {
    let dn = v
        .instr
        .conv_dimension_numbers()
        .ok_or_else(|| v.malformed("missing dim_labels=..."))?;
    let n = dn.input_spatial_dimensions.len();
    let window: &[hlo::attrs::WindowDim] = match v.instr.window() {
        Some(w) => &w.dims,
        None if n == 0 => &[],
        None => return Err(v.malformed("missing window={...}")),
    };
    let (lhs, rhs, out) = (v.operand_dims(0)?, v.operand_dims(1)?, v.out_dims(0)?);
    let in_rank = |x: i64, r: usize| usize::try_from(x).is_ok_and(|x| x < r);
    let ok = window.len() == n
        && dn.kernel_spatial_dimensions.len() == n
        && dn.output_spatial_dimensions.len() == n
        && window
            .iter()
            .all(|w| w.size > 0 && w.stride > 0 && w.base_dilation > 0 && w.window_dilation > 0)
        && [dn.input_batch_dimension, dn.input_feature_dimension]
            .iter()
            .chain(&dn.input_spatial_dimensions)
            .all(|&x| in_rank(x, lhs.len()))
        && [
            dn.kernel_input_feature_dimension,
            dn.kernel_output_feature_dimension,
        ]
        .iter()
        .chain(&dn.kernel_spatial_dimensions)
        .all(|&x| in_rank(x, rhs.len()))
        && [dn.output_batch_dimension, dn.output_feature_dimension]
            .iter()
            .chain(&dn.output_spatial_dimensions)
            .all(|&x| in_rank(x, out.len()));
    let (groups, batch_groups) = (v.instr.feature_group_count(), v.instr.batch_group_count());
    if !ok || groups <= 0 || batch_groups <= 0 || (groups > 1 && batch_groups > 1) {
        return Err(v.malformed("convolution dimensions or window do not fit the operands"));
    }
    Ok(Conv {
        dn,
        window,
        lhs,
        rhs,
        out,
        groups,
        batch_groups,
    })
}

pub(crate) fn conv_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let cv = conv(v)?;
    let dn = cv.dn;
    let n = cv.window.len();
    let out_dim = |x: i64| Expr::dim(x as u32);
    let in_features = cv.rhs[dn.kernel_input_feature_dimension as usize];
    let out_features = cv.out[dn.output_feature_dimension as usize];
    let d_f = out_dim(dn.output_feature_dimension);
    let d_b = out_dim(dn.output_batch_dimension);
    // Range variables: one per spatial window position, then the input feature.
    let mut ranges: Vec<i64> = cv.window.iter().map(|w| w.size).collect();
    ranges.push(in_features);
    let s_f = Expr::range(n as u32);
    let mut lhs_r = vec![c(0); cv.lhs.len()];
    let mut rhs_r = vec![c(0); cv.rhs.len()];
    let mut cons = Vec::new();
    for (i, w) in cv.window.iter().enumerate() {
        let s = Expr::range(i as u32);
        let p = out_dim(dn.output_spatial_dimensions[i]) * w.stride + s * w.window_dilation
            - w.padding_low;
        let size = cv.lhs[dn.input_spatial_dimensions[i] as usize];
        cons.push((p, Interval::new(0, (size - 1) * w.base_dilation)));
        lhs_r[dn.input_spatial_dimensions[i] as usize] = if w.base_dilation > 1 {
            cons.push((p.modulo(c(w.base_dilation)), Interval::point(0)));
            p.floor_div(c(w.base_dilation))
        } else {
            p
        };
        rhs_r[dn.kernel_spatial_dimensions[i] as usize] =
            if w.reversal { c(w.size - 1) - s } else { s };
    }
    lhs_r[dn.input_feature_dimension as usize] = if cv.groups > 1 {
        d_f.floor_div(c(out_features / cv.groups)) * in_features + s_f
    } else {
        s_f
    };
    lhs_r[dn.input_batch_dimension as usize] = if cv.batch_groups > 1 {
        let out_batch = cv.out[dn.output_batch_dimension as usize];
        d_f.floor_div(c(out_features / cv.batch_groups)) * out_batch + d_b
    } else {
        d_b
    };
    rhs_r[dn.kernel_input_feature_dimension as usize] = s_f;
    rhs_r[dn.kernel_output_feature_dimension as usize] = d_f;
    Ok(vec![
        OperandIndexing::map(map(cv.out, &ranges, lhs_r, cons.clone())?),
        OperandIndexing::map(map(cv.out, &ranges, rhs_r, cons)?),
    ])
}

pub(crate) fn conv_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let cv = conv(v)?;
    let dn = cv.dn;
    let in_features = cv.rhs[dn.kernel_input_feature_dimension as usize];
    let out_features = cv.out[dn.output_feature_dimension as usize];
    let out_batch = cv.out[dn.output_batch_dimension as usize];
    let mut results = vec![c(0); cv.out.len()];
    let mut ranges = Vec::new();
    let mut cons = Vec::new();
    let range = |size: i64, ranges: &mut Vec<i64>| {
        ranges.push(size);
        Expr::range(ranges.len() as u32 - 1)
    };
    if operand == 0 {
        let d = |x: i64| Expr::dim(x as u32);
        let (b, f) = (d(dn.input_batch_dimension), d(dn.input_feature_dimension));
        for (i, w) in cv.window.iter().enumerate() {
            let mut x = d(dn.input_spatial_dimensions[i]) * w.base_dilation + w.padding_low;
            if w.size > 1 {
                x = x - range(w.size, &mut ranges) * w.window_dilation;
            }
            let o = if w.stride > 1 {
                cons.push((x.modulo(c(w.stride)), Interval::point(0)));
                x.floor_div(c(w.stride))
            } else {
                x
            };
            let size = cv.out[dn.output_spatial_dimensions[i] as usize];
            cons.push((o, Interval::new(0, size - 1)));
            results[dn.output_spatial_dimensions[i] as usize] = o;
        }
        let (fo, bo) = if cv.groups > 1 {
            let per = out_features / cv.groups;
            (
                f.floor_div(c(in_features)) * per + range(per, &mut ranges),
                b,
            )
        } else if cv.batch_groups > 1 {
            let per = out_features / cv.batch_groups;
            (
                b.floor_div(c(out_batch)) * per + range(per, &mut ranges),
                b.modulo(c(out_batch)),
            )
        } else {
            (range(out_features, &mut ranges), b)
        };
        results[dn.output_feature_dimension as usize] = fo;
        results[dn.output_batch_dimension as usize] = bo;
    } else {
        let d = |x: i64| Expr::dim(x as u32);
        for (i, w) in cv.window.iter().enumerate() {
            let size = cv.out[dn.output_spatial_dimensions[i] as usize];
            let o = range(size, &mut ranges);
            let k = d(dn.kernel_spatial_dimensions[i]);
            let k = if w.reversal { c(w.size - 1) - k } else { k };
            let p = o * w.stride + k * w.window_dilation - w.padding_low;
            let n = cv.lhs[dn.input_spatial_dimensions[i] as usize];
            cons.push((p, Interval::new(0, (n - 1) * w.base_dilation)));
            if w.base_dilation > 1 {
                cons.push((p.modulo(c(w.base_dilation)), Interval::point(0)));
            }
            results[dn.output_spatial_dimensions[i] as usize] = o;
        }
        results[dn.output_batch_dimension as usize] = range(out_batch, &mut ranges);
        results[dn.output_feature_dimension as usize] = d(dn.kernel_output_feature_dimension);
    }
    let from = if operand == 0 { cv.lhs } else { cv.rhs };
    Ok(vec![OperandIndexing::map(map(
        from, &ranges, results, cons,
    )?)])
}
