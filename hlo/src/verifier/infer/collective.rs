//! Collectives and the legacy async pairs: all-reduce, all-gather, reduce-scatter,
//! all-to-all, ragged-all-to-all, collective-permute/broadcast, their -start/-done forms,
//! copy-start/-done.

use super::reduce::check_scalar_reducer;
use super::{array, dim, same_shape, show, strip_layouts, Ctx, Inferred, R};
use crate::attrs::ReplicaGroups;
use crate::shape::Shape;

/// Participants per group, when the replica groups say (`None` for empty groups, which
/// mean "all replicas", a number the module does not record).
fn group_size(ctx: &Ctx<'_>) -> Result<Option<i64>, String> {
    match ctx.instr.replica_groups() {
        None => Ok(None),
        Some(ReplicaGroups::List(g)) if g.is_empty() => Ok(None),
        Some(ReplicaGroups::List(g)) => {
            let n = g[0].len();
            if g.iter().any(|x| x.len() != n) {
                return Err("replica groups have different sizes".into());
            }
            Ok(Some(n as i64))
        }
        Some(ReplicaGroups::Iota { group_size, .. }) => Ok(Some(*group_size)),
        Some(g @ ReplicaGroups::Mesh { .. }) => g
            .group_size()
            .map(Some)
            .ok_or_else(|| format!("replica groups {g} name an axis the mesh does not have")),
    }
}

/// One result per operand: the operand itself, or a tuple of them.
fn per_operand(ctx: &Ctx<'_>) -> Inferred {
    if ctx.ops.len() == 1 {
        Inferred::Operand(0)
    } else {
        Inferred::Shape(Shape::tuple(
            ctx.ops.iter().map(|s| strip_layouts(s)).collect(),
        ))
    }
}

/// `collective-broadcast` / `collective-reduce` with `has_dynamic_root=true` take one
/// more operand after their data: the root, a one-element array whose value (at run time)
/// names the participant the data comes from or goes to. The data operands are inferred
/// by `data` as without the root.
pub(super) fn with_dynamic_root(ctx: &Ctx<'_>, data: fn(&Ctx<'_>) -> R) -> R {
    let dynamic = matches!(
        ctx.instr.attr(&crate::attrs::AttrName::HasDynamicRoot),
        Some(crate::attrs::AttrValue::Bool(true))
    );
    if !dynamic {
        return data(ctx);
    }
    ctx.min_arity(2)
        .map_err(|e| format!("{e} (has_dynamic_root=true: the data operands, then the root)"))?;
    let last = ctx.ops.len() - 1;
    let root = ctx.ops[last];
    if root.element_count().ok() != Some(1) {
        return Err(format!(
            "the root operand of has_dynamic_root=true must be a one-element array, not {}",
            show(root)
        ));
    }
    data(&Ctx {
        module: ctx.module,
        instr: ctx.instr,
        ops: &ctx.ops[..last],
    })
}

pub(super) fn all_reduce(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    for i in 0..ctx.ops.len() {
        ctx.array(i)?;
    }
    let f = ctx.required_comp(ctx.instr.to_apply(), "to_apply=")?;
    let t = ctx.array(0)?.element_type();
    check_scalar_reducer(ctx, f, &[Shape::scalar(t)], "reduction computation")?;
    group_size(ctx)?;
    Ok(per_operand(ctx))
}

/// The declared results, one per operand.
fn declared_results<'a>(ctx: &Ctx<'a>, declared: &'a Shape) -> Result<Vec<&'a Shape>, String> {
    if ctx.ops.len() == 1 && declared.is_array() {
        return Ok(vec![declared]);
    }
    let t = declared.tuple_shapes();
    if !declared.is_tuple() || t.len() != ctx.ops.len() {
        return Err(format!(
            "{} of {} operands must return {} results, not {}",
            ctx.instr.opcode(),
            ctx.ops.len(),
            ctx.ops.len(),
            show(declared)
        ));
    }
    Ok(t.iter().collect())
}

/// Operand and result agree outside dimension `d`, where `result = operand * g`
/// (`gather`) or `operand = result * g` (scatter), g the group size when known.
fn scaled_dimension(ctx: &Ctx<'_>, declared: &Shape, gather: bool) -> R {
    ctx.min_arity(1)?;
    let dims = ctx.required(ctx.instr.dimensions(), "dimensions=")?;
    let [d] = dims else {
        return Err(format!("{} takes one dimension", ctx.instr.opcode()));
    };
    let g = group_size(ctx)?;
    let results = declared_results(ctx, declared)?;
    for (i, r) in results.iter().enumerate() {
        let a = ctx.array(i)?;
        let du = dim(*d, a.dims().len(), "dimension")?;
        let (small, big) = if gather {
            (a.dims()[du], r.dims().get(du).copied().unwrap_or(-1))
        } else {
            (r.dims().get(du).copied().unwrap_or(-1), a.dims()[du])
        };
        let factor = match g {
            Some(g) => g,
            None if small > 0 && big % small == 0 => big / small,
            None => 0,
        };
        let mut want = a.dims().to_vec();
        want[du] = if gather {
            small.saturating_mul(factor)
        } else if factor > 0 && big % factor == 0 {
            big / factor
        } else {
            return Err(format!(
                "dimension {d} of operand {i} ({big}) is not divisible by the group size"
            ));
        };
        let want = array(r.element_type().unwrap_or(a.element_type()), want);
        if r.element_type() != Some(a.element_type()) || !same_shape(r, &want) {
            return Err(format!(
                "result {i} is {} but operand {i} {} gives {}",
                show(r),
                show(ctx.ops[i]),
                show(&array(a.element_type(), want.dims().to_vec()))
            ));
        }
    }
    Ok(Inferred::Declared)
}

pub(super) fn all_gather(ctx: &Ctx<'_>) -> R {
    scaled_dimension(ctx, ctx.declared(), true)
}

/// `all-gather-start` returns `(operands, results)`.
pub(super) fn all_gather_start(ctx: &Ctx<'_>) -> R {
    let d = ctx.declared();
    match d.tuple_shapes() {
        [ops, results] => {
            let expected = if ctx.ops.len() == 1 {
                strip_layouts(ctx.ops[0])
            } else {
                Shape::tuple(ctx.ops.iter().map(|s| strip_layouts(s)).collect())
            };
            if !same_shape(ops, &expected) {
                return Err(format!(
                    "all-gather-start's element 0 {} does not match its operands",
                    show(ops)
                ));
            }
            scaled_dimension(ctx, results, true)
        }
        _ => Err(format!(
            "all-gather-start's shape must be (operands, results), not {}",
            show(d)
        )),
    }
}

pub(super) fn reduce_scatter(ctx: &Ctx<'_>) -> R {
    let f = ctx.required_comp(ctx.instr.to_apply(), "to_apply=")?;
    let t = ctx.array(0)?.element_type();
    check_scalar_reducer(ctx, f, &[Shape::scalar(t)], "reduction computation")?;
    scaled_dimension(ctx, ctx.declared(), false)
}

pub(super) fn all_to_all(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    if let Some(dims) = ctx.instr.dimensions() {
        ctx.arity(1)?;
        let a = ctx.array(0)?;
        let [d] = dims else {
            return Err("all-to-all takes one split dimension".into());
        };
        let du = dim(*d, a.dims().len(), "split dimension")?;
        if let Some(g) = group_size(ctx)? {
            if g > 0 && a.dims()[du] % g != 0 {
                return Err(format!(
                    "split dimension {d} ({}) is not divisible by the group size {g}",
                    a.dims()[du]
                ));
            }
        }
        return Ok(Inferred::Operand(0));
    }
    for i in 0..ctx.ops.len() {
        ctx.array(i)?;
    }
    Ok(Inferred::Shape(Shape::tuple(
        ctx.ops.iter().map(|s| strip_layouts(s)).collect(),
    )))
}

/// `ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets,
/// recv_sizes)` returns the output buffer.
pub(super) fn ragged_all_to_all(ctx: &Ctx<'_>) -> R {
    ctx.arity(6)?;
    let (a, o) = (ctx.array(0)?, ctx.array(1)?);
    if a.element_type() != o.element_type() {
        return Err("ragged-all-to-all's input and output differ in element type".into());
    }
    for i in 2..6 {
        if !ctx.array(i)?.element_type().is_integral() {
            return Err(format!("ragged-all-to-all operand {i} must be integers"));
        }
    }
    Ok(Inferred::Operand(1))
}

pub(super) fn collective_permute(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    if ctx.ops.len() == 1 {
        Ok(Inferred::Operand(0))
    } else {
        // The in-place form (input, output, input offsets, output offsets) and the
        // combined form are accepted as declared.
        Ok(Inferred::Declared)
    }
}

/// `collective-permute-start` returns `(operand, result, context...)`.
pub(super) fn collective_permute_start(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    let d = ctx.declared();
    let t = d.tuple_shapes();
    // One operand: (operand, result, context...). Several (combined): ((operands),
    // (results), context...). In place (input, output, input offsets, output offsets):
    // (input, output, context...).
    let all = Shape::tuple(ctx.ops.iter().map(|s| strip_layouts(s)).collect());
    let in_place = ctx.ops.len() == 4 && ctx.ops[2].is_tuple();
    let (operand, result) = if in_place {
        (ctx.ops[0], ctx.ops[1])
    } else if ctx.ops.len() == 1 {
        (ctx.ops[0], ctx.ops[0])
    } else {
        (&all, &all)
    };
    if t.len() < 2 || !same_shape(&t[0], operand) || !same_shape(&t[1], result) {
        return Err(format!(
            "collective-permute-start's shape must be ({}, {}, context...), not {}",
            show(operand),
            show(result),
            show(d)
        ));
    }
    Ok(Inferred::Declared)
}

/// `copy-start` returns `(destination, source, context)`.
pub(super) fn copy_start(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let d = ctx.declared();
    let t = d.tuple_shapes();
    if t.len() != 3 || !same_shape(&t[0], ctx.ops[0]) || !same_shape(&t[1], ctx.ops[0]) {
        return Err(format!(
            "copy-start's shape must be (operand, operand, context), not {}",
            show(d)
        ));
    }
    Ok(Inferred::Declared)
}

pub(super) fn same_as_operand_done(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    Ok(Inferred::Operand(0))
}

/// A -done whose result is element `i` of its -start's tuple.
pub(super) fn tuple_element_done(ctx: &Ctx<'_>, i: usize) -> R {
    ctx.arity(1)?;
    match ctx.ops[0].tuple_shapes().get(i) {
        Some(e) if same_shape(e, ctx.declared()) => Ok(Inferred::Declared),
        Some(e) => Ok(Inferred::Shape(strip_layouts(e))),
        None => Err(format!(
            "{}'s operand must be a tuple with element {i}, not {}",
            ctx.instr.opcode(),
            show(ctx.ops[0])
        )),
    }
}
