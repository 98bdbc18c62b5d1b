//! Propagation of `conditional`: each branch is partitioned with its parameter tiled as
//! the operand passed to it, and every branch's result is resharded to one tiling (the
//! most split branch result's), the conditional's. The branch index or predicate is a
//! scalar, the same on every device, so every device takes the same branch. A branch
//! operand or result that is not an array or a flat tuple of arrays, or a branch that
//! holds per-device ops, takes the replicated fallback instead.

use hlo::Instruction;

use crate::context::Ctx;
use crate::decision::{Called, Decision, ValueTiling};
use crate::error::SpmdError;

/// The decision for conditional `instr`, `None` where the fallback takes it.
pub(crate) fn conditional(
    ctx: &Ctx<'_>,
    instr: &Instruction,
) -> Option<Result<Decision, SpmdError>> {
    let branches = instr.branch_computations()?;
    let flat = |s: &hlo::Shape| s.is_array() || s.tuple_shapes().iter().all(hlo::Shape::is_array);
    if branches.len() + 1 != instr.operands().len() || !flat(instr.shape()) {
        return None;
    }
    for (i, &b) in branches.iter().enumerate() {
        let operand = ctx.comp.instr(instr.operands()[i + 1]);
        if !flat(operand.shape())
            || crate::rules_fallback::check_called(ctx.module, b, instr, 0).is_err()
        {
            return None;
        }
    }
    Some(decide(ctx, instr, &branches))
}

fn decide(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    branches: &[hlo::CompId],
) -> Result<Decision, SpmdError> {
    let mut partitioned = Vec::with_capacity(branches.len());
    for (i, &b) in branches.iter().enumerate() {
        let param = ctx.operand(instr, i + 1)?.clone();
        let comp = ctx.module.computation(b);
        let d = (ctx.propagate)(ctx.module, comp, ctx.devices, vec![param])?;
        let root = d
            .get(comp.root())
            .map(|r| r.out.clone())
            .ok_or_else(|| SpmdError::invalid(comp.name(), "no decision for the root"))?;
        partitioned.push((b, d, root));
    }
    let tiles = |v: &ValueTiling| match v {
        ValueTiling::Array(t) => t.tile_count(),
        ValueTiling::Tuple(ts) => ts.iter().map(|t| t.tile_count()).sum(),
        ValueTiling::Manual => 0,
    };
    let mut out = partitioned
        .first()
        .map(|(_, _, r)| r.clone())
        .ok_or_else(|| SpmdError::invalid(instr.name(), "a conditional without branches"))?;
    for (_, _, r) in &partitioned {
        if tiles(r) > tiles(&out) {
            out = r.clone();
        }
    }
    if out == ValueTiling::Manual {
        return Err(SpmdError::unsupported(
            instr,
            "a branch result of a manual region",
        ));
    }
    let moved = partitioned.iter().filter(|(_, _, r)| *r != out).count();
    let why = format!(
        "conditional: {} branch(es) partitioned with their operands' shardings, result {}{}",
        branches.len(),
        out.text(),
        match moved {
            0 => String::new(),
            n => format!(" ({n} branch result(s) resharded to it)"),
        }
    );
    Ok(Decision {
        out: out.clone(),
        local: out.clone(),
        operands: vec![None; instr.operands().len()],
        tuple_operands: Vec::new(),
        partial: None,
        window: None,
        halos: Vec::new(),
        called: partitioned
            .into_iter()
            .map(|(comp, decisions, _)| Called {
                comp,
                decisions,
                root: Some(out.clone()),
            })
            .collect(),
        why,
    })
}
