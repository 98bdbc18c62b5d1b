//! The generic async ops with late binding. A chain `async-start(x0..xk)` ->
//! `async-update(prev, xk+1, ...)`* -> `async-done(prev)` runs one called computation on
//! every operand bound along it: the start binds the first ones (possibly none), each
//! update binds the next ones. Every start and update returns `((bound so far...),
//! result, context...)`; the done returns the result. Binding more operands than the
//! computation has parameters is an error wherever it happens; binding fewer is an error
//! at the done, which runs the computation.

use super::control::aliasing;
use super::{same_shape, show, strip_layouts, Ctx, Inferred, R};
use crate::attrs::{AttrName, AttrValue};
use crate::shape::Shape;

/// The thread an async op names (`main` unless `async_execution_thread=` says).
fn thread<'a>(ctx: &Ctx<'a>) -> &'a str {
    match ctx.instr.attr(&AttrName::AsyncExecutionThread) {
        Some(AttrValue::String(t)) => t.as_str(),
        _ => "main",
    }
}

/// `bound` (the operands bound so far) is a prefix of the parameters of the called
/// computation; with `all`, every parameter.
fn check_bound(ctx: &Ctx<'_>, bound: &[&Shape], all: bool) -> Result<(), String> {
    let c = ctx.required_comp(ctx.instr.calls(), "calls=")?;
    let sig = ctx.signature(c)?;
    let op = ctx.instr.opcode();
    if bound.len() > sig.params.len() || all && bound.len() < sig.params.len() {
        return Err(format!(
            "{op} binds {} operand{} to the async computation `{}`, which takes {}",
            bound.len(),
            if bound.len() == 1 { "" } else { "s" },
            sig.name,
            sig.params.len()
        ));
    }
    for (i, (p, b)) in sig.params.iter().zip(bound).enumerate() {
        if !same_shape(p, b) {
            return Err(format!(
                "{op} binds {} to parameter {i} of the async computation `{}`, which is {}",
                show(b),
                sig.name,
                show(p)
            ));
        }
    }
    Ok(())
}

/// The parts of an async state `((bound...), result, context...)`, or why it is none.
fn state<'s>(s: &'s Shape, what: &str) -> Result<(&'s [Shape], &'s [Shape]), String> {
    let t = s.tuple_shapes();
    if s.is_tuple() && t.len() >= 2 && t[0].is_tuple() {
        Ok((t[0].tuple_shapes(), &t[1..]))
    } else {
        Err(format!(
            "{what} must be an async state ((operands...), result, context...), not {}",
            show(s)
        ))
    }
}

/// `async-start(x...)`: `((x...), result, context...)`, the result that of the called
/// computation, which runs on the start's thread.
pub(super) fn start(ctx: &Ctx<'_>) -> R {
    let c = ctx.required_comp(ctx.instr.calls(), "calls=")?;
    let sig = ctx.signature(c)?;
    let thread = thread(ctx);
    // A computation that names no thread takes its start's; one that names a thread must
    // name the start's.
    let runs_on = ctx
        .module
        .computation(c)
        .and_then(|comp| comp.execution_thread.as_deref())
        .unwrap_or(thread);
    if thread != runs_on {
        return Err(format!(
            "async_execution_thread is {thread} but the wrapped computation `{}` runs on {runs_on}",
            sig.name
        ));
    }
    let (bound, rest) = state(ctx.declared(), "async-start's shape")?;
    if bound.len() != ctx.ops.len() || bound.iter().zip(ctx.ops).any(|(a, b)| !same_shape(a, b)) {
        return Err(format!(
            "async-start's element 0 {} does not match its operands",
            show(&ctx.declared().tuple_shapes()[0])
        ));
    }
    check_bound(ctx, ctx.ops, false)?;
    sig.expect_result(&rest[0], "async computation")
        .map_err(|e| format!("{e} (element 1 of the async-start's shape)"))?;
    Ok(Inferred::Declared)
}

/// `async-update(prev, x...)`: `prev`'s state with `x...` bound after its operands.
/// `output_to_operand_aliasing` may alias a context element of the output (index >= 2)
/// with a context element of `prev` or with a bound operand, of the same shape.
pub(super) fn update(ctx: &Ctx<'_>) -> R {
    ctx.min_arity(1)?;
    let (before, rest) = state(ctx.ops[0], "async-update's operand 0")?;
    let mut bound: Vec<&Shape> = before.iter().collect();
    bound.extend(ctx.ops[1..].iter().copied());
    check_bound(ctx, &bound, false)?;
    for a in ctx.instr.output_to_operand_aliasing() {
        let context = |idx: &[i64]| idx.first().is_some_and(|&i| i >= 2);
        if !context(&a.output_index) || a.operand == 0 && !context(&a.operand_index) {
            return Err(format!(
                "async-update's output_to_operand_aliasing may alias only context elements (index >= 2), not output {{{}}} with operand {} {{{}}}",
                super::join(&a.output_index),
                a.operand,
                super::join(&a.operand_index)
            ));
        }
    }
    aliasing(ctx)?;
    let mut parts = vec![Shape::tuple(
        bound.iter().map(|s| strip_layouts(s)).collect(),
    )];
    parts.extend(rest.iter().map(strip_layouts));
    let want = Shape::tuple(parts);
    if same_shape(&want, ctx.declared()) {
        Ok(Inferred::Declared)
    } else {
        Ok(Inferred::Shape(want))
    }
}

/// `async-done(prev)`: the result of the called computation, once every parameter is
/// bound.
pub(super) fn done(ctx: &Ctx<'_>) -> R {
    ctx.arity(1)?;
    let (bound, rest) = state(ctx.ops[0], "async-done's operand")?;
    let bound: Vec<&Shape> = bound.iter().collect();
    check_bound(ctx, &bound, true)?;
    if same_shape(&rest[0], ctx.declared()) {
        Ok(Inferred::Declared)
    } else {
        Ok(Inferred::Shape(strip_layouts(&rest[0])))
    }
}
