//! Data movement: constants, iota, broadcast, reshape, transpose, reverse, slices,
//! concatenate, pad, bitcast, tuples.

use super::{
    array, dim, distinct_dims, is_int_scalar, join, permutation, same_shape, show, Ctx, Inferred, R,
};
use crate::shape::{ElementType, Shape, UNBOUNDED_SIZE};

pub(super) fn constant(ctx: &Ctx<'_>) -> R {
    ctx.arity(0)?;
    let lit = ctx.instr.literal().ok_or("constant has no literal")?;
    let ok = match lit.as_array() {
        Some(a) => same_shape(a.shape(), ctx.declared()),
        None => same_shape(&lit.shape(), ctx.declared()),
    };
    if ok {
        Ok(Inferred::Declared)
    } else {
        Err(format!(
            "the literal's shape {} differs from the declared shape",
            show(&lit.shape())
        ))
    }
}

pub(super) fn iota(ctx: &Ctx<'_>) -> R {
    ctx.arity(0)?;
    let d = ctx.declared_array()?;
    let i = &ctx.need(ctx.instr.iota_dimension(), "iota_dimension=")?;
    if d.dims().is_empty() {
        return Err("iota needs a result of rank at least 1".into());
    }
    if d.element_type() == ElementType::Pred {
        return Err("iota of pred is not allowed: expected a number type, got PRED".into());
    }
    if *i < 0 {
        return Err(format!("iota_dimension {i} is negative"));
    }
    dim(*i, d.dims().len(), "iota_dimension")?;
    Ok(Inferred::Declared)
}

/// `dimensions` maps operand dimension i to result dimension dimensions[i] (increasing in
/// XLA's canonical form, which is not required), with equal sizes.
pub(super) fn broadcast(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let a = ctx.array(0)?;
    let d = ctx.declared_array()?;
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions=")?;
    if dims.len() != a.dims().len() {
        return Err(format!(
            "broadcast dimensions={{{}}} must have one entry per operand dimension ({})",
            join(dims),
            a.dims().len()
        ));
    }
    let ds = distinct_dims(dims, d.dims().len(), "broadcast dimension")?;
    for (i, &o) in ds.iter().enumerate() {
        if a.dims()[i] != d.dims()[o] {
            return Err(format!(
                "broadcast maps operand dimension {i} (size {}) to result dimension {o} (size {})",
                a.dims()[i],
                d.dims()[o]
            ));
        }
    }
    if a.element_type() != d.element_type() {
        return Err(format!(
            "broadcast changes the element type from {} to {}",
            a.element_type(),
            d.element_type()
        ));
    }
    Ok(Inferred::Declared)
}

pub(super) fn reshape(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let a = ctx.array(0)?;
    let d = ctx.declared_array()?;
    if a.element_type() != d.element_type() {
        return Err(format!(
            "reshape changes the element type from {} to {}",
            a.element_type(),
            d.element_type()
        ));
    }
    let (n, m) = (ctx.ops[0].element_count(), ctx.declared().element_count());
    match (n, m) {
        (Ok(n), Ok(m)) if n == m => Ok(Inferred::Declared),
        (Ok(n), Ok(m)) => Err(format!(
            "reshape from {} ({n} elements) to {} ({m} elements) changes the element count",
            show(ctx.ops[0]),
            show(ctx.declared())
        )),
        // Unbounded dimensions: nothing to compare.
        _ => Ok(Inferred::Declared),
    }
}

pub(super) fn dynamic_reshape(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    let a = ctx.array(0)?;
    let d = ctx.declared_array()?;
    if ctx.ops.len() != d.dims().len() + 1 {
        return Err(format!(
            "dynamic-reshape takes one size operand per result dimension ({}), not {}",
            d.dims().len(),
            ctx.ops.len() - 1
        ));
    }
    if let Some(i) = (1..ctx.ops.len()).find(|&i| {
        !is_int_scalar(ctx.ops[i]) || ctx.ops[i].element_type() != Some(ElementType::S32)
    }) {
        return Err(format!(
            "size operand {i} of dynamic-reshape must be s32[], not {}",
            show(ctx.ops[i])
        ));
    }
    if a.element_type() != d.element_type() {
        return Err("dynamic-reshape changes the element type".into());
    }
    // Counted at the bounds: a dynamic dimension holds at most its bound.
    let count = |dims: &[i64]| dims.iter().try_fold(1i64, |acc, &x| acc.checked_mul(x));
    let unbounded = a.dims().contains(&UNBOUNDED_SIZE) || d.dims().contains(&UNBOUNDED_SIZE);
    if !unbounded && count(a.dims()) != count(d.dims()) {
        return Err(format!(
            "dynamic-reshape from {} to {} changes the number of elements (at their bounds)",
            show(ctx.ops[0]),
            show(ctx.declared())
        ));
    }
    Ok(Inferred::Declared)
}

pub(super) fn transpose(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let a = ctx.array(0)?;
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions=")?;
    let p = permutation(dims, a.dims().len(), "transpose dimension")?;
    let out = p.iter().map(|&i| a.dims()[i]).collect();
    Ok(Inferred::Shape(array(a.element_type(), out)))
}

pub(super) fn reverse(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let a = ctx.array(0)?;
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions=")?;
    distinct_dims(dims, a.dims().len(), "reverse dimension")?;
    Ok(Inferred::Operand(0))
}

pub(super) fn slice(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let a = ctx.array(0)?;
    let s = ctx.required(ctx.instr.slice(), "slice=")?;
    if s.len() != a.dims().len() {
        return Err(format!(
            "slice has {} ranges for an operand of rank {}",
            s.len(),
            a.dims().len()
        ));
    }
    let mut out = Vec::with_capacity(s.len());
    for (i, (r, &n)) in s.iter().zip(a.dims()).enumerate() {
        if r.start < 0 || r.limit < r.start || (n != UNBOUNDED_SIZE && r.limit > n) || r.stride < 1
        {
            return Err(format!(
                "slice dimension {i}: [{}:{}:{}] is not within [0, {n}] with a positive stride",
                r.start, r.limit, r.stride
            ));
        }
        out.push((r.limit - r.start + r.stride - 1) / r.stride);
    }
    Ok(Inferred::Shape(array(a.element_type(), out)))
}

/// Start indices: one integer scalar per dimension (or XLA's old form, one rank-1 vector).
fn start_indices(ctx: &Ctx<'_>, first: usize, rank: usize) -> Result<(), String> {
    let idx = &ctx.ops[first..];
    let old_form = idx.len() == 1
        && rank != 1
        && idx[0]
            .as_array()
            .is_some_and(|a| a.dims() == [rank as i64] && a.element_type().is_integral());
    if old_form {
        return Ok(());
    }
    if idx.len() != rank {
        return Err(format!(
            "{} takes {rank} start indices (one per dimension), not {}",
            ctx.instr.opcode(),
            idx.len()
        ));
    }
    let mut ty: Option<ElementType> = None;
    for (k, s) in idx.iter().enumerate() {
        if !is_int_scalar(s) {
            return Err(format!(
                "start index {k} must be an integer scalar, not {}",
                show(s)
            ));
        }
        let t = s.element_type();
        if ty.is_some_and(|t0| Some(t0) != t) {
            return Err("start indices have different element types".into());
        }
        ty = t;
    }
    Ok(())
}

pub(super) fn dynamic_slice(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    let a = ctx.array(0)?;
    let sizes = ctx.required(ctx.instr.dynamic_slice_sizes(), "dynamic_slice_sizes=")?;
    start_indices(ctx, 1, a.dims().len())?;
    if sizes.len() != a.dims().len() {
        return Err(format!(
            "dynamic_slice_sizes has {} entries for an operand of rank {}",
            sizes.len(),
            a.dims().len()
        ));
    }
    for (i, (&s, &n)) in sizes.iter().zip(a.dims()).enumerate() {
        if s < 0 || (n != UNBOUNDED_SIZE && s > n) {
            return Err(format!(
                "dynamic slice size {s} of dimension {i} is not within [0, {n}]"
            ));
        }
    }
    Ok(Inferred::Shape(array(a.element_type(), sizes.to_vec())))
}

pub(super) fn dynamic_update_slice(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(2)?;
    let a = ctx.array(0)?;
    let u = ctx.array(1)?;
    if u.dims().len() != a.dims().len() {
        return Err(format!(
            "the update {} must have the operand's rank {}",
            show(ctx.ops[1]),
            a.dims().len()
        ));
    }
    if u.element_type() != a.element_type() {
        return Err(format!(
            "the update's element type {} differs from the operand's {}",
            u.element_type(),
            a.element_type()
        ));
    }
    if let Some(i) = (0..a.dims().len()).find(|&i| u.dims()[i] > a.dims()[i] || u.dims()[i] < 0) {
        return Err(format!(
            "the update's dimension {i} ({}) is larger than the operand's ({})",
            u.dims()[i],
            a.dims()[i]
        ));
    }
    start_indices(ctx, 2, a.dims().len())?;
    Ok(Inferred::Operand(0))
}

pub(super) fn concatenate(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions=")?;
    let a = ctx.array(0)?;
    let [d] = dims else {
        return Err("concatenate takes exactly one dimension".into());
    };
    let d = dim(*d, a.dims().len(), "concatenate dimension")?;
    let mut out = a.dims().to_vec();
    for i in 1..ctx.ops.len() {
        let b = ctx.array(i)?;
        if b.element_type() != a.element_type() {
            return Err(format!(
                "concatenate operand {i} is {} but operand 0 is {}",
                b.element_type(),
                a.element_type()
            ));
        }
        let same_rest = b.dims().len() == out.len()
            && (0..out.len()).all(|k| k == d || b.dims()[k] == a.dims()[k]);
        if !same_rest {
            return Err(format!(
                "concatenate operand {i} {} does not match operand 0 {} outside dimension {d}",
                show(ctx.ops[i]),
                show(ctx.ops[0])
            ));
        }
        out[d] = out[d]
            .checked_add(b.dims()[d])
            .ok_or("concatenated size overflows")?;
    }
    Ok(Inferred::Shape(array(a.element_type(), out)))
}

pub(super) fn pad(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    let a = ctx.array(0)?;
    let v = ctx.array(1)?;
    if !v.dims().is_empty() || v.element_type() != a.element_type() {
        return Err(format!(
            "the padding value must be a {} scalar, not {}",
            a.element_type(),
            show(ctx.ops[1])
        ));
    }
    let p = ctx.required(ctx.instr.padding(), "padding=")?;
    if p.dims.len() != a.dims().len() {
        return Err(format!(
            "padding has {} dimensions for an operand of rank {}",
            p.dims.len(),
            a.dims().len()
        ));
    }
    let mut out = Vec::with_capacity(p.dims.len());
    for (i, (pd, &n)) in p.dims.iter().zip(a.dims()).enumerate() {
        if pd.interior < 0 {
            return Err(format!("interior padding of dimension {i} is negative"));
        }
        let size = i128::from(n)
            + i128::from(pd.low)
            + i128::from(pd.high)
            + i128::from(pd.interior) * i128::from((n - 1).max(0));
        if size < 0 || size > i128::from(i64::MAX) {
            return Err(format!(
                "padding {}_{}_{} of dimension {i} (size {n}) gives size {size}",
                pd.low, pd.high, pd.interior
            ));
        }
        out.push(size as i64);
    }
    Ok(Inferred::Shape(array(a.element_type(), out)))
}

/// A bitcast reinterprets the buffer: the byte sizes must agree.
pub(super) fn bitcast(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let (a, d) = (ctx.ops[0].byte_size(), ctx.declared().byte_size());
    match (a, d) {
        (Ok(a), Ok(d)) if a != d => Err(format!(
            "bitcast from {} ({a} bytes) to {} ({d} bytes) changes the byte size",
            show(ctx.ops[0]),
            show(ctx.declared())
        )),
        _ => Ok(Inferred::Declared),
    }
}

pub(super) fn tuple(ctx: &Ctx<'_>) -> R {
    Ok(Inferred::Shape(Shape::tuple(
        ctx.ops.iter().map(|s| super::strip_layouts(s)).collect(),
    )))
}

pub(super) fn get_tuple_element(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let i = *ctx.required(ctx.instr.tuple_index().as_ref(), "index=")?;
    let t = ctx.ops[0];
    if !t.is_tuple() {
        return Err(format!("get-tuple-element of a non-tuple {}", show(t)));
    }
    let e = usize::try_from(i)
        .ok()
        .and_then(|k| t.tuple_shapes().get(k))
        .ok_or_else(|| {
            format!(
                "tuple index {i} is out of range for a tuple of {} elements",
                t.tuple_shapes().len()
            )
        })?;
    if same_shape(e, ctx.declared()) {
        Ok(Inferred::Declared)
    } else {
        Ok(Inferred::Shape(super::strip_layouts(e)))
    }
}

pub(super) fn get_dimension_size(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let a = ctx.array(0)?;
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions=")?;
    let [d] = dims else {
        return Err("get-dimension-size takes one dimension".into());
    };
    dim(*d, a.dims().len(), "dimension")?;
    Ok(Inferred::Shape(Shape::scalar(ElementType::S32)))
}

pub(super) fn set_dimension_size(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    let a = ctx.array(0)?;
    if ctx.ops[1].element_type() != Some(ElementType::S32) || ctx.ops[1].rank() != 0 {
        return Err(format!(
            "the size operand must be s32[], not {}",
            show(ctx.ops[1])
        ));
    }
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions=")?;
    let [d] = dims else {
        return Err("set-dimension-size takes one dimension".into());
    };
    dim(*d, a.dims().len(), "dimension")?;
    Ok(Inferred::Like(0, a.element_type()))
}
