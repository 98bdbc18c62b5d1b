//! Propagation inside partially manual regions (`manual_partial.rs` has the tilings): a
//! `Sharding` call on a region's value (or GSPMD's input split with the automatic axes
//! open) passes its operand through, a body collective keeps its operand's tiling where
//! it can, and every value made from a region's value carries the region's manual
//! coordinates (`Decisions::partial`), which the exit composes and the partitioner's own
//! collectives are checked against.

use hlo::{Instruction, Opcode};

use crate::context::{text, Ctx};
use crate::decision::{Decision, ValueTiling};
use crate::error::SpmdError;
use crate::manual_ops::{enters, leaves, manual_constraint, per_device};
use crate::manual_partial;

/// An op of a partially manual region on a value tiled over the automatic axes: a
/// constraint passes its operand through (its tiling kept); a collective keeps its
/// operand's tiling where it can (`manual_partial::collective`). `None` for other ops.
pub(crate) fn partial_region_op(
    ctx: &Ctx<'_>,
    instr: &Instruction,
) -> Option<Result<Decision, SpmdError>> {
    let in_partial = instr
        .operands()
        .iter()
        .any(|&o| ctx.decisions.partial_keys(o).is_some());
    let sharding_call =
        instr.opcode() == Opcode::CustomCall && instr.custom_call_target() == Some("Sharding");
    let partial_constraint = sharding_call
        && manual_constraint(instr)
        && manual_partial::keys(instr, &[], None, ctx.devices).is_some();
    let Ok(ValueTiling::Array(t)) = ctx.operand(instr, 0) else {
        return None;
    };
    if sharding_call && (in_partial || partial_constraint || opens_into_partial(ctx, instr)) {
        let why = format!(
            "partially manual region: constraint passes its operand's {} through",
            text(t)
        );
        return Some(Ok(crate::context::simple(t.clone(), vec![None], why)));
    }
    let single = instr.operands().len() == 1 && instr.shape().is_array();
    if in_partial && per_device(instr.opcode()) && single {
        return Some(manual_partial::collective(ctx, instr, t));
    }
    None
}

/// Whether `Sharding` call `instr` is GSPMD's split of a partially manual region's input
/// over the manual axes with the automatic ones open (`unspecified_dims`), read only by
/// the region's entries: the entry reads the manual split from it and keeps the
/// operand's split over the automatic axes, so the call itself moves nothing.
fn opens_into_partial(ctx: &Ctx<'_>, instr: &Instruction) -> bool {
    let open = instr
        .backend_config()
        .is_some_and(|c| c.as_str().contains("unspecified_dims="));
    let Some(id) = ctx.comp.find(instr.name()) else {
        return false;
    };
    let users = ctx.comp.users(id);
    open && !users.is_empty()
        && users.iter().all(|&u| {
            let u = ctx.comp.instr(u);
            enters(u) && crate::region_keys::region_keys(ctx, u).is_some()
        })
}

/// The manual coordinate each device serves where `instr` (decided `d`) is a partially
/// manual region's value tiled over the automatic axes: an entry's, a partially manual
/// constraint's, an op's that reads one (but a region's exit), or a nested fully manual
/// region's exit (`manual_nested.rs`).
pub(crate) fn partial_keys(ctx: &Ctx<'_>, instr: &Instruction, d: &Decision) -> Option<Vec<i64>> {
    if leaves(instr) {
        return crate::manual_nested::exit_keys(ctx, instr);
    }
    if matches!(d.out, ValueTiling::Manual) {
        return None;
    }
    if enters(instr) {
        return crate::region_keys::region_keys(ctx, instr);
    }
    if manual_constraint(instr) {
        if let Some(k) = manual_partial::keys(instr, &[], None, ctx.devices) {
            return Some(k);
        }
    }
    instr
        .operands()
        .iter()
        .find_map(|&o| ctx.decisions.partial_keys(o).map(<[i64]>::to_vec))
}
