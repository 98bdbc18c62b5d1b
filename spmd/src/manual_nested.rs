//! Fully manual regions nested in a partially manual one, in GSPMD's form. JAX lowers
//! `axis_index` inside a partially manual `shard_map` (and a `shard_map` over the
//! remaining axes inside one) as a region manual on every axis: its exit
//! (`SPMDShardToFullShape`) goes back to a sharding with a `manual` subgroup, and an
//! entry (`SPMDFullToShardShape` to `{manual}`) reads a value annotated with one. Such a
//! sharding says how the enclosing region's value is tiled over the automatic axes
//! within each manual coordinate, so the exit's value is that region's value tiled `B`
//! (the sharding with its manual subgroup read as devices holding the same tile), keyed
//! by the manual subgroup's coordinate, and the entry reshards the enclosing region's
//! value to `B` within each manual coordinate (checked as every partitioner collective
//! of a partially manual region is). Shardy's form needs nothing of this: its nested
//! region names its own manual axes and its boundaries are read as any region's.

use hlo::sharding::{Sharding, ShardingKind, SubgroupKind};
use hlo::Instruction;

use crate::context::{text, with_value, Ctx};
use crate::decision::{Decision, ValueTiling};
use crate::emit::local_shape;
use crate::error::SpmdError;
use crate::manual_ops::{enters, leaves};
use crate::tiling::Tiling;

/// The tiling within each manual coordinate and each device's manual coordinate that
/// `s`, a tiled sharding with a `manual` subgroup, gives a value of `rank` dimensions;
/// `None` for any other sharding.
pub(crate) fn partial_sharding(
    s: &Sharding,
    rank: usize,
    devices: usize,
) -> Option<Result<(Tiling, Vec<i64>), String>> {
    let ShardingKind::Tiled(t) = &s.kind else {
        return None;
    };
    let at = t
        .subgroups
        .iter()
        .position(|k| *k == SubgroupKind::Manual)?;
    let mut open = t.clone();
    open.subgroups[at] = SubgroupKind::Replicated;
    let b = Sharding::new(ShardingKind::Tiled(open));
    let data_rank = t.tiles.dims().len() - t.subgroups.len();
    let keys = (0..devices as i64)
        .map(|d| {
            t.index_of(d)
                .and_then(|i| i.get(data_rank + at).copied())
                .ok_or_else(|| format!("sharding {s} does not name device {d}"))
        })
        .collect::<Result<Vec<i64>, String>>();
    Some(keys.and_then(|keys| Ok((Tiling::from_sharding(&b, rank, devices)?, keys))))
}

/// The sharding with a `manual` subgroup where `instr` is a GSPMD boundary of a region
/// nested in a partially manual one: an exit to such a sharding, or an entry reading a
/// partially manual region's value annotated with one.
fn is_nested(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Sharding> {
    if instr
        .custom_call_target()
        .is_some_and(|t| t.starts_with("xla.sdy."))
    {
        return None;
    }
    let s = match (enters(instr), leaves(instr)) {
        // An entry reading a value of no partially manual region is an outer one (whose
        // global side has no manual subgroup: `rules_manual.rs` names it unsupported).
        (true, _) => {
            let operand = *instr.operands().first()?;
            ctx.decisions.partial_keys(operand)?;
            ctx.comp.instr(operand).sharding()?
        }
        (_, true) => instr.sharding()?,
        _ => return None,
    };
    let ShardingKind::Tiled(t) = &s.kind else {
        return None;
    };
    t.subgroups
        .contains(&SubgroupKind::Manual)
        .then(|| s.clone())
}

/// The manual coordinate each device serves where `instr` is the exit of a nested region
/// (its value the enclosing region's), else `None`.
pub(crate) fn exit_keys(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Vec<i64>> {
    if !leaves(instr) {
        return None;
    }
    let s = is_nested(ctx, instr)?;
    let rank = instr.shape().as_array()?.dims().len();
    partial_sharding(&s, rank, ctx.devices)?
        .ok()
        .map(|(_, k)| k)
}

/// The decision for a boundary of a region nested in a partially manual one, `None` for
/// any other op.
pub(crate) fn decide(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Result<Decision, SpmdError>> {
    let s = is_nested(ctx, instr)?;
    Some(match enters(instr) {
        true => enter(ctx, instr, &s),
        false => leave(ctx, instr, &s),
    })
}

/// The tiling within each manual coordinate `s` gives boundary `instr`'s global value of
/// `global` shape, checked to cut it into the region's per-device `piece`s.
fn body_tiling(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    s: &Sharding,
    global: &hlo::Shape,
    piece: &hlo::Shape,
) -> Result<(Tiling, Vec<i64>), SpmdError> {
    let bad = |e: String| SpmdError::unsupported(instr, e);
    let rank = global
        .as_array()
        .ok_or_else(|| bad("a tuple crossing a nested manual region's boundary".into()))?
        .dims()
        .len();
    let (b, keys) = partial_sharding(s, rank, ctx.devices)
        .ok_or_else(|| SpmdError::invalid(instr.name(), "no manual subgroup"))?
        .map_err(bad)?;
    let local = local_shape(global, &b, instr.name())?;
    if local.dims() != piece.dims() {
        return Err(bad(format!(
            "{} splits {global} into pieces of {:?}, the nested region's value is {piece}",
            text(&b),
            local.dims()
        )));
    }
    Ok((b, keys))
}

/// Entering a fully manual region from a partially manual one: the enclosing region's
/// value (keyed by the same manual coordinates) resharded to the annotation's tiling;
/// each device's piece is the nested body's value.
fn enter(ctx: &Ctx<'_>, instr: &Instruction, s: &Sharding) -> Result<Decision, SpmdError> {
    if instr.operands().len() != 1
        || !matches!(
            instr.sharding().map(|s| &s.kind),
            Some(ShardingKind::Manual)
        )
    {
        return Err(SpmdError::unsupported(
            instr,
            "a partially manual region nested in a partially manual one",
        ));
    }
    let operand = instr.operands()[0];
    let global = ctx.comp.instr(operand).shape();
    let (b, keys) = body_tiling(ctx, instr, s, global, instr.shape())?;
    if ctx.decisions.partial_keys(operand) != Some(keys.as_slice()) {
        return Err(SpmdError::unsupported(
            instr,
            "a nested manual region whose manual subgroup is not its enclosing partially manual region's",
        ));
    }
    let now = ctx.operand_array(instr, 0)?;
    let why = format!(
        "enters a manual region nested in a partially manual one: input {} within each manual coordinate{}; the body runs per device",
        text(&b),
        if &b == now { "" } else { " (resharded)" }
    );
    let reshard = Some(b.clone()).filter(|b| b != now);
    Ok(with_value(ValueTiling::Manual, vec![reshard], why))
}

/// Leaving a fully manual region into a partially manual one: each device's value is its
/// piece of its manual coordinate's value tiled by the exit's sharding.
fn leave(ctx: &Ctx<'_>, instr: &Instruction, s: &Sharding) -> Result<Decision, SpmdError> {
    if instr.operands().len() != 1 {
        return Err(SpmdError::invalid(instr.name(), "an exit of one operand"));
    }
    let piece = ctx.comp.instr(instr.operands()[0]).shape();
    match ctx.operand(instr, 0)? {
        ValueTiling::Manual => {}
        ValueTiling::Array(t) if t.is_replicated() => {}
        other => {
            return Err(SpmdError::unsupported(
                instr,
                format!(
                    "a nested manual region's output tiled {} (not the body's per-device value)",
                    other.text()
                ),
            ))
        }
    }
    let (b, _) = body_tiling(ctx, instr, s, instr.shape(), piece)?;
    let why = format!(
        "leaves a manual region into a partially manual one: each device's value is its piece of its manual coordinate's value, {}",
        text(&b)
    );
    Ok(with_value(ValueTiling::Array(b), vec![None], why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_subgroup_gives_keys_and_a_tiling_within_them() {
        // 2x4 mesh (data, model), devices data*4 + model: rows split by data, manual on
        // model.
        let s = hlo::sharding::parse_sharding("{devices=[2,1,4]<=[8] last_tile_dims={manual}}")
            .expect("parses");
        let (b, keys) = partial_sharding(&s, 2, 8).expect("manual").expect("tiles");
        assert_eq!(keys, vec![0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(b.tiles, vec![2, 1]);
        assert_eq!(b.of_device[5], vec![1, 0]);
        // Manual on model with data replicated, the mesh transposed in the device list.
        let s = hlo::sharding::parse_sharding(
            "{devices=[4,2]<=[2,4]T(1,0) last_tile_dims={manual, replicated}}",
        )
        .expect("parses");
        let (b, keys) = partial_sharding(&s, 0, 8).expect("manual").expect("tiles");
        assert_eq!(keys, vec![0, 1, 2, 3, 0, 1, 2, 3]);
        assert!(b.is_replicated());
        let plain = hlo::sharding::parse_sharding("{devices=[2,4]<=[8]}").expect("parses");
        assert!(partial_sharding(&plain, 2, 8).is_none());
    }
}
