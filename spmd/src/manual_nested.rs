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
//! of a partially manual region is). Shardy's form (`sdy_nested.rs`) names only the
//! nested region's own manual axes at its boundaries; its tilings are read from them the
//! same way, within each coordinate of the enclosing region's manual axes. A Shardy
//! region nested in a partially manual one that leaves axes automatic itself runs as a
//! partially manual region (`manual_partial.rs`) per coordinate of both regions' manual
//! axes: its entry refines the enclosing value's tiling by its split, its exit composes
//! them back.

use hlo::sharding::{Sharding, ShardingKind, SubgroupKind};
use hlo::Instruction;

use crate::context::{text, with_value, Ctx};
use crate::decision::{Decision, ValueTiling};
use crate::emit::local_shape;
use crate::error::SpmdError;
use crate::manual_ops::{enters, leaves};
use crate::manual_partial;
use crate::sdy_nested;
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
fn gspmd_nested(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Sharding> {
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

/// Whether `instr` is a boundary of a region nested in a partially manual one, in
/// either form.
fn is_nested(ctx: &Ctx<'_>, instr: &Instruction) -> bool {
    sdy_nested::is_nested(instr) || gspmd_nested(ctx, instr).is_some()
}

/// The global values (the enclosing region's) of boundary `instr`: an entry's operands,
/// an exit's results.
fn globals(ctx: &Ctx<'_>, instr: &Instruction) -> Vec<hlo::Shape> {
    match enters(instr) {
        true => instr
            .operands()
            .iter()
            .map(|&o| ctx.comp.instr(o).shape().clone())
            .collect(),
        false => element_shapes(instr),
    }
}

/// The per-device shapes of `instr`'s value: its own, or its tuple's elements.
fn element_shapes(instr: &Instruction) -> Vec<hlo::Shape> {
    match instr.shape().is_tuple() {
        true => instr.shape().tuple_shapes().to_vec(),
        false => vec![instr.shape().clone()],
    }
}

/// Each global value's tiling within each manual coordinate of the enclosing region, and
/// the coordinate each device serves.
type NestedTilings = (Vec<Tiling>, Vec<i64>);

/// The [`NestedTilings`] of nested boundary `instr`, in either form.
fn nested_tilings(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Result<NestedTilings, SpmdError>> {
    let globals = globals(ctx, instr);
    if sdy_nested::is_nested(instr) {
        return Some(sdy_nested::tilings(ctx, instr, &globals));
    }
    let s = gspmd_nested(ctx, instr)?;
    let bad = |e: String| SpmdError::unsupported(instr, e);
    let [global] = globals.as_slice() else {
        return Some(Err(SpmdError::invalid(
            instr.name(),
            "a GSPMD boundary of one value",
        )));
    };
    let Some(rank) = global.as_array().map(|a| a.dims().len()) else {
        return Some(Err(bad(
            "a tuple crossing a nested manual region's boundary".into(),
        )));
    };
    Some(
        partial_sharding(&s, rank, ctx.devices)?
            .map(|(b, keys)| (vec![b], keys))
            .map_err(bad),
    )
}

/// The manual coordinate each device serves where `instr` is the exit of a nested region
/// (its value the enclosing region's), else `None`.
pub(crate) fn exit_keys(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Vec<i64>> {
    if !leaves(instr) {
        return None;
    }
    nested_tilings(ctx, instr)?.ok().map(|(_, k)| k)
}

/// The decision for a boundary of a region nested in a partially manual one, `None` for
/// any other op.
pub(crate) fn decide(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Result<Decision, SpmdError>> {
    if !is_nested(ctx, instr) {
        return None;
    }
    let tilings = match nested_tilings(ctx, instr)? {
        Ok(t) => t,
        Err(e) => return Some(Err(e)),
    };
    Some(match enters(instr) {
        true => enter(ctx, instr, tilings),
        false => leave(ctx, instr, tilings),
    })
}

/// Checks that each tiling in `bs` cuts its global value into the nested region's
/// per-device `pieces`.
fn check_pieces(
    instr: &Instruction,
    bs: &[Tiling],
    globals: &[hlo::Shape],
    pieces: &[hlo::Shape],
) -> Result<(), SpmdError> {
    if bs.len() != pieces.len() || globals.len() != pieces.len() {
        return Err(SpmdError::invalid(
            instr.name(),
            format!("{} values, {} pieces", globals.len(), pieces.len()),
        ));
    }
    for ((b, global), piece) in bs.iter().zip(globals).zip(pieces) {
        let local = local_shape(global, b, instr.name())?;
        if local.dims() != piece.dims() {
            return Err(SpmdError::unsupported(
                instr,
                format!(
                    "{} splits {global} into pieces of {:?}, the nested region's value is {piece}",
                    text(b),
                    local.dims()
                ),
            ));
        }
    }
    Ok(())
}

/// Entering a fully manual region from a partially manual one: the enclosing region's
/// values (keyed by the same manual coordinates, or whole on every device) resharded to
/// the annotation's tilings; each device's piece is the nested body's value.
fn enter(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    (bs, keys): NestedTilings,
) -> Result<Decision, SpmdError> {
    let gspmd = !sdy_nested::is_nested(instr);
    // GSPMD's partially manual region nested in a partially manual one enters to a
    // sharding with a manual subgroup (both regions' manual axes) instead of `{manual}`.
    let gspmd_partial = gspmd && manual_partial::keys(instr, &[], None, ctx.devices).is_some();
    if gspmd
        && (instr.operands().len() != 1
            || !(gspmd_partial
                || matches!(
                    instr.sharding().map(|s| &s.kind),
                    Some(ShardingKind::Manual)
                )))
    {
        return Err(SpmdError::unsupported(
            instr,
            "a nested manual region's entry of several values, or to a sharding that is neither manual nor partially manual",
        ));
    }
    let globals = globals(ctx, instr);
    let pieces = element_shapes(instr);
    check_pieces(instr, &bs, &globals, &pieces)?;
    // A partially manual region nested in a partially manual one: per coordinate of both
    // regions' manual axes, its values tiled over the axes left automatic.
    let nested_partial = gspmd_partial || crate::sdy_nested::all_manual(ctx, instr).is_some();
    let inner_keys = nested_partial
        .then(|| crate::region_keys::region_keys(ctx, instr))
        .flatten();
    let mut reshards = Vec::with_capacity(bs.len());
    let mut names = Vec::with_capacity(bs.len());
    let mut bodies = Vec::with_capacity(bs.len());
    for (i, b) in bs.into_iter().enumerate() {
        let operand = instr.operands()[i];
        let now = ctx.operand_array(instr, i)?;
        let same_keys = ctx.decisions.partial_keys(operand) == Some(keys.as_slice());
        // A whole value made outside any region's dataflow (a constant) is the same on
        // every manual coordinate.
        let whole = ctx.decisions.partial_keys(operand).is_none() && now.is_replicated();
        if !same_keys && !whole {
            return Err(SpmdError::unsupported(
                instr,
                "a nested manual region whose manual subgroup is not its enclosing partially manual region's",
            ));
        }
        let b = match &inner_keys {
            Some(k) => {
                let (t, body) = manual_partial::input(&b, now, k, &globals[i], &pieces[i]);
                bodies.push(body);
                t
            }
            None => b,
        };
        names.push(format!(
            "{}{}",
            text(&b),
            if &b == now { "" } else { " (resharded)" }
        ));
        reshards.push(Some(b).filter(|b| b != now));
    }
    if inner_keys.is_some() {
        let out = match instr.shape().is_tuple() {
            true => ValueTiling::Tuple(bodies),
            false => ValueTiling::Array(bodies.remove(0)),
        };
        let why = format!(
            "enters a partially manual region nested in a partially manual one: input {} within each enclosing manual coordinate; the body runs per coordinate of both regions' manual axes, tiled {} over the others",
            names.join(", "),
            out.text()
        );
        return Ok(with_value(out, reshards, why));
    }
    let why = format!(
        "enters a manual region nested in a partially manual one: input {} within each manual coordinate; the body runs per device",
        names.join(", "),
    );
    Ok(with_value(ValueTiling::Manual, reshards, why))
}

/// Leaving a fully manual region into a partially manual one: each device's value is its
/// piece of its manual coordinate's value tiled by the exit's sharding.
fn leave(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    (mut bs, _): NestedTilings,
) -> Result<Decision, SpmdError> {
    let pieces: Vec<hlo::Shape> = instr
        .operands()
        .iter()
        .map(|&o| ctx.comp.instr(o).shape().clone())
        .collect();
    let globals = globals(ctx, instr);
    check_pieces(instr, &bs, &globals, &pieces)?;
    let mut gathers = vec![None; instr.operands().len()];
    for i in 0..instr.operands().len() {
        let inner_keys = ctx.decisions.partial_keys(instr.operands()[i]);
        match ctx.operand(instr, i)? {
            ValueTiling::Manual => {}
            ValueTiling::Array(t) if t.is_replicated() => {}
            // A partially manual region's value (nested in a partially manual one): its
            // tiling composed with the exit's split within each enclosing coordinate.
            ValueTiling::Array(t) if inner_keys.is_some() => {
                let (to, gather) =
                    manual_partial::output(&bs[i], t, inner_keys, &globals[i], &pieces[i]);
                bs[i] = to;
                gathers[i] = gather;
            }
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
    }
    let names: Vec<String> = bs.iter().map(text).collect();
    let why = format!(
        "leaves a manual region into a partially manual one: each device's value is its piece of its manual coordinate's value, {}",
        names.join(", ")
    );
    let out = match instr.shape().is_tuple() {
        true => ValueTiling::Tuple(bs),
        false => ValueTiling::Array(bs.remove(0)),
    };
    Ok(with_value(out, gathers, why))
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
