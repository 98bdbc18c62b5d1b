//! Dot, scaled dot and convolution: dimension numbers, group counts and the preferred
//! result element type (ragged dot, a dot with groups, is `ragged_dot.rs`).

use super::reduce::window_output;
use super::{array, dim, join, Ctx, Inferred, R};
use crate::shape::{ArrayShape, ElementType};

/// Operand element types must agree, up to floating-point precision (XLA's
/// `SameElementTypeIgnoringFpPrecision`); returns the wider one.
pub(super) fn operand_type(lhs: &ArrayShape, rhs: &ArrayShape) -> Result<ElementType, String> {
    let (a, b) = (lhs.element_type(), rhs.element_type());
    if a == b {
        return Ok(a);
    }
    if a.is_float() && b.is_float() {
        let wider = if a.bit_width() >= b.bit_width() { a } else { b };
        return Ok(wider);
    }
    Err(format!(
        "operands have different element types ({a} vs {b})"
    ))
}

/// The result element type: the declared one when XLA accepts it as a preferred element
/// type (never narrower than an integer operand type), else the operands'.
pub(super) fn result_type(ctx: &Ctx<'_>, from: ElementType) -> Result<ElementType, String> {
    let Some(want) = ctx.declared().element_type() else {
        return Ok(from);
    };
    if want == from || !want.is_array_type() {
        return Ok(from);
    }
    if !from.is_float() && want.bit_width() < from.bit_width() {
        return Err(format!(
            "the preferred element type {want} is narrower than the operands' {from}"
        ));
    }
    Ok(want)
}

/// Checks one side's dimension lists and returns its free (neither batch nor contracting
/// nor excluded) dimensions in order.
fn free_dims(a: &ArrayShape, lists: &[&[i64]], side: &str) -> Result<Vec<i64>, String> {
    let rank = a.dims().len();
    let mut used = vec![false; rank];
    for l in lists {
        for &d in *l {
            let u = dim(d, rank, &format!("{side} dimension"))?;
            if std::mem::replace(&mut used[u], true) {
                return Err(format!(
                    "{side} dimension {d} is used twice in the dimension numbers"
                ));
            }
        }
    }
    Ok((0..rank)
        .filter(|&i| !used[i])
        .map(|i| a.dims()[i])
        .collect())
}

fn pairs_match(
    lhs: &ArrayShape,
    rhs: &ArrayShape,
    l: &[i64],
    r: &[i64],
    what: &str,
) -> Result<Vec<i64>, String> {
    if l.len() != r.len() {
        return Err(format!(
            "lhs {what} dimensions {{{}}} and rhs {what} dimensions {{{}}} differ in number",
            join(l),
            join(r)
        ));
    }
    let mut sizes = Vec::with_capacity(l.len());
    for (&x, &y) in l.iter().zip(r) {
        let (xs, ys) = (
            lhs.dims()[dim(x, lhs.dims().len(), "lhs dimension")?],
            rhs.dims()[dim(y, rhs.dims().len(), "rhs dimension")?],
        );
        if xs != ys {
            return Err(format!(
                "{what} dimension sizes differ: lhs dimension {x} is {xs}, rhs dimension {y} is {ys}"
            ));
        }
        sizes.push(xs);
    }
    Ok(sizes)
}

pub(super) fn dot(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    let (lhs, rhs) = (ctx.array(0)?, ctx.array(1)?);
    let t = result_type(ctx, operand_type(lhs, rhs)?)?;
    Ok(Inferred::Shape(array(t, dot_dims(ctx, lhs, rhs, &[])?)))
}

/// The result dimensions of a dot (batch, lhs free, rhs free), with `rhs_excluded` also
/// left out of the rhs free dimensions.
pub(super) fn dot_dims(
    ctx: &Ctx<'_>,
    lhs: &ArrayShape,
    rhs: &ArrayShape,
    rhs_excluded: &[i64],
) -> Result<Vec<i64>, String> {
    let dn = ctx.instr.dot_dimension_numbers();
    let batch = pairs_match(lhs, rhs, &dn.lhs_batch_dims, &dn.rhs_batch_dims, "batch")?;
    pairs_match(
        lhs,
        rhs,
        &dn.lhs_contracting_dims,
        &dn.rhs_contracting_dims,
        "contracting",
    )?;
    let lf = free_dims(lhs, &[&dn.lhs_batch_dims, &dn.lhs_contracting_dims], "lhs")?;
    let rf = free_dims(
        rhs,
        &[&dn.rhs_batch_dims, &dn.rhs_contracting_dims, rhs_excluded],
        "rhs",
    )?;
    let mut out = batch;
    out.extend(lf);
    out.extend(rf);
    Ok(out)
}

/// `scaled-dot(lhs, rhs, lhs_scale, rhs_scale)` (XLA's current operand order): a dot of
/// the scaled operands. Each scale is a scalar or has its operand's rank with every
/// dimension dividing the operand's (one scale per block); the operands may be different
/// narrow float types, so the result element type is the declared one.
pub(super) fn scaled_dot(ctx: &Ctx<'_>) -> R {
    ctx.arity(4)?;
    let (lhs, rhs) = (ctx.array(0)?, ctx.array(1)?);
    for (side, operand, scale) in [("lhs", lhs, ctx.array(2)?), ("rhs", rhs, ctx.array(3)?)] {
        if scale.dims().is_empty() {
            continue;
        }
        if scale.dims().len() != operand.dims().len() {
            return Err(format!(
                "{side} scale has rank {} but the {side} has rank {} (a scale is a scalar or one per block)",
                scale.dims().len(),
                operand.dims().len()
            ));
        }
        for (d, (&o, &s)) in operand.dims().iter().zip(scale.dims()).enumerate() {
            if s == 0 || o % s != 0 {
                return Err(format!(
                    "{side} scale dimension {d} ({s}) does not divide the {side}'s ({o})"
                ));
            }
        }
    }
    let t = match ctx.declared().element_type() {
        Some(t) if t.is_array_type() => t,
        _ => operand_type(lhs, rhs)?,
    };
    Ok(Inferred::Shape(array(t, dot_dims(ctx, lhs, rhs, &[])?)))
}

pub(super) fn convolution(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    let (lhs, rhs) = (ctx.array(0)?, ctx.array(1)?);
    let t = result_type(ctx, operand_type(lhs, rhs)?)?;
    let dn = ctx.required(ctx.instr.conv_dimension_numbers(), "dim_labels=")?;
    let w = ctx
        .required(ctx.instr.window(), "window=")
        .cloned()
        .or_else(|e| {
            // A convolution without spatial dimensions may omit the window.
            if dn.input_spatial_dimensions.is_empty() {
                Ok(crate::attrs::Window::default())
            } else {
                Err(e)
            }
        })?;
    let n = dn.input_spatial_dimensions.len();
    let rank = n + 2;
    if lhs.dims().len() != rank
        || rhs.dims().len() != rank
        || dn.output_spatial_dimensions.len() != n
        || dn.kernel_spatial_dimensions.len() != n
    {
        return Err(format!(
            "dim_labels describe rank {rank} but the input has rank {} and the kernel {}",
            lhs.dims().len(),
            rhs.dims().len()
        ));
    }
    let check = |ds: Vec<i64>, what: &str| super::permutation(&ds, rank, what).map(|_| ());
    let mut input = vec![dn.input_batch_dimension, dn.input_feature_dimension];
    input.extend(&dn.input_spatial_dimensions);
    check(input, "input dimension")?;
    let mut kernel = vec![
        dn.kernel_input_feature_dimension,
        dn.kernel_output_feature_dimension,
    ];
    kernel.extend(&dn.kernel_spatial_dimensions);
    check(kernel, "kernel dimension")?;
    let mut output = vec![dn.output_batch_dimension, dn.output_feature_dimension];
    output.extend(&dn.output_spatial_dimensions);
    check(output, "output dimension")?;
    let at = |a: &ArrayShape, d: i64| a.dims()[d as usize];
    let batch = at(lhs, dn.input_batch_dimension);
    let in_features = at(lhs, dn.input_feature_dimension);
    let k_in = at(rhs, dn.kernel_input_feature_dimension);
    let k_out = at(rhs, dn.kernel_output_feature_dimension);
    let (fgc, bgc) = (
        ctx.instr.feature_group_count(),
        ctx.instr.batch_group_count(),
    );
    if fgc < 1 || bgc < 1 {
        return Err("feature_group_count and batch_group_count must be positive".into());
    }
    if fgc > 1 && bgc > 1 {
        return Err("feature_group_count and batch_group_count cannot both exceed 1".into());
    }
    if in_features % fgc != 0 || in_features / fgc != k_in {
        return Err(format!(
            "input features ({in_features}) / feature_group_count ({fgc}) must equal the kernel's input features ({k_in})"
        ));
    }
    if k_out % fgc != 0 {
        return Err(format!(
            "kernel output features ({k_out}) must be a multiple of feature_group_count ({fgc})"
        ));
    }
    if batch % bgc != 0 || k_out % bgc != 0 {
        return Err(format!(
            "input batch ({batch}) and kernel output features ({k_out}) must be multiples of batch_group_count ({bgc})"
        ));
    }
    if w.dims.len() != n {
        return Err(format!(
            "the window has {} dimensions but the convolution has {n} spatial dimensions",
            w.dims.len()
        ));
    }
    for (i, (wd, &kd)) in w.dims.iter().zip(&dn.kernel_spatial_dimensions).enumerate() {
        if wd.size != at(rhs, kd) {
            return Err(format!(
                "window size {} of spatial dimension {i} differs from the kernel's size {}",
                wd.size,
                at(rhs, kd)
            ));
        }
    }
    let spatial: Vec<i64> = dn
        .input_spatial_dimensions
        .iter()
        .map(|&d| at(lhs, d))
        .collect();
    let spatial_out = window_output(&spatial, &w)?;
    let mut out = vec![0i64; rank];
    out[dn.output_batch_dimension as usize] = batch / bgc;
    out[dn.output_feature_dimension as usize] = k_out;
    for (i, &d) in dn.output_spatial_dimensions.iter().enumerate() {
        out[d as usize] = spatial_out[i];
    }
    Ok(Inferred::Shape(array(t, out)))
}
