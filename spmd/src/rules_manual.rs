//! Manual regions (`shard_map`): JAX wraps the body between custom calls that turn global
//! values into each device's piece and back — `xla.sdy.GlobalToLocalShape` /
//! `xla.sdy.LocalToGlobalShape` with Shardy shardings in frontend attributes, or
//! `SPMDFullToShardShape` / `SPMDShardToFullShape` around `sharding={manual}` (the GSPMD
//! form). The body is already per-device code: its shapes are the pieces' and its
//! collectives name the devices. So the partitioner keeps it as it is ([`ValueTiling::Manual`])
//! and works only at the boundaries: a region's input is resharded to the region's input
//! sharding (its per-device piece is then the body's value), and a region's output is
//! the global value tiled by the region's output sharding. A value from outside that the
//! body reads (a constant, a closed-over array) is every device's whole value, so it is
//! made whole first.
//!
//! A partially manual region (`shard_map(..., axis_names={...})`: manual on some mesh
//! axes, automatic on the others) runs per manual coordinate with its values tiled over
//! the automatic axes as any other value (`rules_partial.rs`, `manual_partial.rs`): its
//! boundaries split over the manual axes, its inputs keep their split over the automatic
//! ones, and its body's collectives (which group devices over the manual axes) keep
//! their operands' tiling. A fully manual region nested in one (`axis_index`, in
//! GSPMD's form) is `manual_nested.rs`'s. A Shardy boundary sharding that names an
//! automatic axis (which JAX's `shard_map` refuses to write) is named unsupported.

use hlo::sharding::{Sharding, ShardingKind, SubgroupKind};
use hlo::{Instruction, Opcode, Shape};

pub(crate) use crate::manual_ops::{enters, leaves, manual_constraint, per_device};

use crate::context::{text, with_value, Ctx};
use crate::decision::{Decision, ValueTiling};
use crate::emit::local_shape;
use crate::error::SpmdError;
use crate::manual_partial;
use crate::tiling::Tiling;
use hlo::sdy;

/// The decision for `instr` when it is a region boundary or inside a region, else `None`.
pub(crate) fn decide(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Result<Decision, SpmdError>> {
    if let Some(d) = crate::manual_nested::decide(ctx, instr) {
        return Some(d);
    }
    if enters(instr) {
        return Some(enter(ctx, instr));
    }
    if leaves(instr) {
        return Some(leave(ctx, instr));
    }
    if let Some(d) = crate::rules_partial::partial_region_op(ctx, instr) {
        return Some(d);
    }
    let reads_manual = (0..instr.operands().len())
        .any(|i| matches!(ctx.operand(instr, i), Ok(ValueTiling::Manual)));
    if reads_manual || per_device(instr.opcode()) || manual_constraint(instr) {
        return Some(inside(ctx, instr));
    }
    None
}

/// An op of the body: copied as it is; operands from outside the region made whole.
fn inside(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    if instr.opcode() == Opcode::CustomCall && instr.custom_call_target() == Some("Sharding") {
        // A partially manual region's constraint says how the automatic axes may split
        // the value (replicated here).
        if !manual_constraint(instr) && !open_sdy_constraint(ctx, instr) {
            return Err(SpmdError::unsupported(
                instr,
                "a sharding constraint other than {manual} inside a manual region",
            ));
        }
    }
    let mut operands = Vec::with_capacity(instr.operands().len());
    let mut whole = 0;
    for i in 0..instr.operands().len() {
        operands.push(match ctx.operand(instr, i)? {
            ValueTiling::Manual => None,
            ValueTiling::Array(t) if t.is_replicated() => None,
            ValueTiling::Array(t) => {
                whole += 1;
                Some(Tiling::replicated(t.tiles.len(), ctx.devices))
            }
            ValueTiling::Tuple(ts) if ts.iter().all(Tiling::is_replicated) => None,
            ValueTiling::Tuple(_) => {
                return Err(SpmdError::unsupported(
                    instr,
                    format!("operand {i} is a split tuple from outside the manual region"),
                ))
            }
        });
    }
    let why = match whole {
        0 => "manual region: per-device op kept as it is".to_string(),
        n => {
            format!("manual region: per-device op kept as it is; {n} outside operand(s) made whole")
        }
    };
    Ok(with_value(ValueTiling::Manual, operands, why))
}

/// Whether `Sharding` call `instr` carries Shardy's constraint that names no mesh axis
/// (`[{?}, {}]`: the dimensions open or whole), as JAX writes inside a partially manual
/// region for the automatic axes to split as propagation chooses.
fn open_sdy_constraint(ctx: &Ctx<'_>, instr: &Instruction) -> bool {
    let Some((_, v)) = instr
        .frontend_attributes()
        .iter()
        .find(|(k, _)| k == "xla.sdy.sharding")
    else {
        return false;
    };
    let Ok(meshes) = sdy::meshes(ctx.module) else {
        return false;
    };
    sdy::sharding_per_value(v.as_str(), &meshes).is_ok_and(|shardings| {
        shardings.iter().all(|s| match &s.kind {
            ShardingKind::Named(n) => n.dims.iter().all(Vec::is_empty),
            ShardingKind::Replicated => true,
            _ => false,
        })
    })
}

/// The per-device shapes of `instr`'s value: its own, or its tuple's elements.
fn element_shapes(instr: &Instruction) -> Vec<Shape> {
    match instr.shape().is_tuple() {
        true => instr.shape().tuple_shapes().to_vec(),
        false => vec![instr.shape().clone()],
    }
}

/// The tilings a region boundary names for its `n` values (Shardy's per-value
/// shardings in frontend attribute `key`, or the GSPMD call's tiled sharding).
fn boundary_shardings(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    key: &str,
    gspmd: Option<&Sharding>,
) -> Result<Vec<Sharding>, SpmdError> {
    let bad = |e: String| SpmdError::unsupported(instr, e);
    if instr
        .custom_call_target()
        .is_some_and(|t| t.starts_with("xla.sdy."))
    {
        let attrs = instr.frontend_attributes();
        let get = |k: &str| {
            attrs
                .iter()
                .find(|(name, _)| name == k)
                .map(|(_, v)| v.as_str().to_string())
                .ok_or_else(|| {
                    SpmdError::invalid(instr.name(), format!("no frontend attribute {k}"))
                })
        };
        let meshes = sdy::meshes(ctx.module).map_err(bad)?;
        let shardings = sdy::sharding_per_value(&get(key)?, &meshes).map_err(bad)?;
        let manual = sdy::manual_axes(&get("xla.sdy.manual_axes")?).map_err(bad)?;
        for s in &shardings {
            if let ShardingKind::Named(n) = &s.kind {
                let named_auto: Vec<&str> = n
                    .dims
                    .iter()
                    .flatten()
                    .map(|a| a.name.as_str())
                    .filter(|a| !manual.iter().any(|m| m == a))
                    .collect();
                if !named_auto.is_empty() {
                    return Err(SpmdError::unsupported(
                        instr,
                        format!(
                            "a partially manual shard_map whose boundary splits over automatic mesh axes {named_auto:?}"
                        ),
                    ));
                }
            }
        }
        return Ok(shardings);
    }
    let s = gspmd
        .ok_or_else(|| SpmdError::invalid(instr.name(), "a region boundary without a sharding"))?;
    if let ShardingKind::Tiled(t) = &s.kind {
        if t.subgroups.contains(&SubgroupKind::Manual) {
            // The global side of a boundary is an automatic sharding; a manual subgroup
            // belongs to the region's side.
            return Err(SpmdError::unsupported(
                instr,
                "a region boundary whose global sharding has a manual subgroup",
            ));
        }
    }
    Ok(vec![s.clone()])
}

/// The tiling of `s` for a value of `global` shape whose per-device piece is `piece`.
fn tiling_of(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    s: &Sharding,
    global: &Shape,
    piece: &Shape,
) -> Result<Tiling, SpmdError> {
    if !global.is_array() {
        return Err(SpmdError::unsupported(
            instr,
            "a tuple crossing a manual region's boundary",
        ));
    }
    let t = Tiling::from_sharding(s, global.dims().len(), ctx.devices)
        .map_err(|e| SpmdError::unsupported(instr, e))?;
    let local = local_shape(global, &t, instr.name())?;
    if local.dims() != piece.dims() {
        return Err(SpmdError::unsupported(
            instr,
            format!(
                "{} splits {global} into pieces of {:?}, the region's value is {piece} (an uneven shard_map)",
                text(&t),
                local.dims()
            ),
        ));
    }
    Ok(t)
}

/// Entering a region: each operand resharded to the region's input sharding; its piece is
/// the body's value.
fn enter(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let pieces = element_shapes(instr);
    // GSPMD form: the input's tiling is its operand's annotation (the `Sharding` call
    // before it), else what propagation decided for the operand.
    let operand_sharding = instr
        .operand(0)
        .and_then(|o| ctx.comp.instr(o).sharding().cloned());
    let shardings = match operand_sharding {
        Some(s) => boundary_shardings(ctx, instr, "xla.sdy.in_shardings", Some(&s))?,
        None if !instr
            .custom_call_target()
            .is_some_and(|t| t.starts_with("xla.sdy.")) =>
        {
            vec![ctx.operand_array(instr, 0)?.to_sharding()]
        }
        None => boundary_shardings(ctx, instr, "xla.sdy.in_shardings", None)?,
    };
    if shardings.len() != instr.operands().len() || pieces.len() != instr.operands().len() {
        return Err(SpmdError::invalid(
            instr.name(),
            format!(
                "{} operands, {} shardings, {} values",
                instr.operands().len(),
                shardings.len(),
                pieces.len()
            ),
        ));
    }
    let keys = crate::region_keys::region_keys(ctx, instr);
    let mut operands = Vec::with_capacity(pieces.len());
    let mut names = Vec::new();
    let mut bodies = Vec::new();
    for (i, (s, piece)) in shardings.iter().zip(&pieces).enumerate() {
        let global = ctx.comp.instr(instr.operands()[i]).shape();
        let mut t = tiling_of(ctx, instr, s, global, piece)?;
        let now = ctx.operand_array(instr, i)?;
        if let Some(keys) = &keys {
            // Partially manual: the input keeps its split over the automatic axes where
            // it refines the manual one.
            let (to, body) = manual_partial::input(&t, now, keys, global, piece);
            t = to;
            bodies.push(body);
        }
        names.push(text(&t));
        operands.push(Some(t.clone()).filter(|t| t != now));
    }
    let moved = operands.iter().filter(|o| o.is_some()).count();
    if keys.is_some() {
        let out = match instr.shape().is_tuple() {
            true => ValueTiling::Tuple(bodies),
            false => ValueTiling::Array(bodies.remove(0)),
        };
        let why = format!(
            "enters a partially manual region: inputs {}{}; the body runs per manual coordinate, tiled {} over the automatic axes",
            names.join(", "),
            match moved {
                0 => String::new(),
                n => format!(" ({n} resharded)"),
            },
            out.text()
        );
        return Ok(with_value(out, operands, why));
    }
    let why = format!(
        "enters a manual region: inputs {}{}; the body runs per device",
        names.join(", "),
        match moved {
            0 => String::new(),
            n => format!(" ({n} resharded)"),
        }
    );
    Ok(with_value(ValueTiling::Manual, operands, why))
}

/// Leaving a region: each device's value is its piece of the global value tiled by the
/// region's output sharding.
fn leave(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    for i in 0..instr.operands().len() {
        if matches!(ctx.operand(instr, i)?, ValueTiling::Tuple(_)) {
            return Err(SpmdError::unsupported(
                instr,
                format!("operand {i} is a tuple leaving the manual region"),
            ));
        }
    }
    let keys = instr
        .operands()
        .iter()
        .find_map(|&o| ctx.decisions.partial_keys(o));
    let shardings = boundary_shardings(ctx, instr, "xla.sdy.out_shardings", instr.sharding())?;
    let globals = element_shapes(instr);
    if shardings.len() != instr.operands().len() || globals.len() != shardings.len() {
        return Err(SpmdError::invalid(
            instr.name(),
            format!(
                "{} operands, {} shardings, {} values",
                instr.operands().len(),
                shardings.len(),
                globals.len()
            ),
        ));
    }
    let mut tilings = Vec::with_capacity(shardings.len());
    let mut operands = Vec::with_capacity(shardings.len());
    for (i, (s, global)) in shardings.iter().zip(&globals).enumerate() {
        let piece = ctx.comp.instr(instr.operands()[i]).shape();
        let m = tiling_of(ctx, instr, s, global, piece)?;
        let (t, gather) = match ctx.operand(instr, i)? {
            // A value tiled over the automatic axes (a partially manual region's, or a
            // whole one made in the body): composed with the manual split, or made whole.
            ValueTiling::Array(b) => manual_partial::output(&m, b, keys, global, piece),
            _ => (m, None),
        };
        tilings.push(t);
        operands.push(gather);
    }
    let names: Vec<String> = tilings.iter().map(text).collect();
    let out = match instr.shape().is_tuple() {
        true => ValueTiling::Tuple(tilings),
        false => ValueTiling::Array(tilings.remove(0)),
    };
    let why = format!(
        "leaves a manual region: each device's value is its piece of {}",
        names.join(", ")
    );
    Ok(with_value(out, operands, why))
}
