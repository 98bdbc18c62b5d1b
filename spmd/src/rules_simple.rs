//! Propagation rules of the ops that move or combine elements without exchanging them:
//! parameters, constants, elementwise ops, broadcasts, reshapes, transposes, tuples and
//! the `Sharding` custom call. Each follows its operands' sharding forward.

use hlo::Instruction;

use crate::context::{simple, text, Ctx};
use crate::decision::{Decision, ValueTiling};
use crate::error::SpmdError;
use crate::tiling::Tiling;

pub(crate) use crate::backward::is_elementwise;

/// The annotated tiling of `instr` (`sharding=`), if it has one that tiles or replicates.
pub(crate) fn annotation(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Option<Tiling>, SpmdError> {
    let Some(s) = instr.sharding() else {
        return Ok(None);
    };
    if matches!(s.kind, hlo::sharding::ShardingKind::Unknown) {
        return Ok(None);
    }
    if !instr.shape().is_array() {
        return Err(SpmdError::unsupported(
            instr,
            "a sharding on a tuple-shaped instruction",
        ));
    }
    let rank = instr.shape().dims().len();
    Tiling::from_sharding(s, rank, ctx.devices)
        .map(Some)
        .map_err(|e| SpmdError::unsupported(instr, e))
}

/// A parameter: the caller's sharding (a loop body's), else its annotation, else
/// replicated.
pub(crate) fn parameter(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    if !ctx.params.is_empty() {
        let number = instr.parameter_number().unwrap_or(0) as usize;
        let t = ctx.params.get(number).cloned().ok_or_else(|| {
            SpmdError::invalid(
                instr.name(),
                "a parameter the caller passes no sharding for",
            )
        })?;
        return Ok(Decision {
            out: t.clone(),
            local: t,
            operands: Vec::new(),
            tuple_operands: Vec::new(),
            partial: None,
            window: None,
            halos: Vec::new(),
            called: Vec::new(),
            why: "parameter: the caller's sharding".into(),
        });
    }
    if !instr.shape().is_array() {
        return Err(SpmdError::unsupported(instr, "a tuple-shaped parameter"));
    }
    let rank = instr.shape().dims().len();
    Ok(match annotation(ctx, instr)? {
        Some(t) => {
            let why = format!("parameter: annotated {}", text(&t));
            simple(t, vec![], why)
        }
        None => simple(
            Tiling::replicated(rank, ctx.devices),
            vec![],
            "parameter without a sharding: replicated".into(),
        ),
    })
}

/// Constants, iotas: every device makes the whole value.
pub(crate) fn everywhere(ctx: &Ctx<'_>, instr: &Instruction) -> Decision {
    let rank = instr.shape().dims().len();
    simple(
        Tiling::replicated(rank, ctx.devices),
        vec![],
        format!("{}: every device makes it whole", instr.opcode().as_str()),
    )
}

/// An elementwise op follows its most split operand (the first among equals); the others
/// are resharded to it (scalars of a `select` or `clamp` stay whole).
pub(crate) fn elementwise(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let rank = instr.shape().dims().len();
    let mut best: Option<(usize, &Tiling)> = None;
    for i in 0..instr.operands().len() {
        let t = ctx.operand_array(instr, i)?;
        if t.tiles.len() != rank {
            continue;
        }
        if best.is_none_or(|(_, b)| t.tile_count() > b.tile_count()) {
            best = Some((i, t));
        }
    }
    let Some((lead, out)) = best else {
        return Ok(everywhere(ctx, instr));
    };
    let out = out.clone();
    let operands = (0..instr.operands().len())
        .map(|i| {
            let t = ctx.operand_array(instr, i)?;
            Ok(match t.tiles.len() == rank && *t != out {
                true => Some(out.clone()),
                false => None,
            })
        })
        .collect::<Result<Vec<_>, SpmdError>>()?;
    let moved = operands.iter().filter(|o| o.is_some()).count();
    let why = match (out.is_replicated(), moved) {
        (true, _) => "elementwise on whole operands".to_string(),
        (false, 0) => format!("elementwise: operands agree on {}", text(&out)),
        (false, n) => format!(
            "elementwise: follows operand {lead} ({} tiles), {n} other operand(s) resharded",
            out.tile_count()
        ),
    };
    Ok(simple(out, operands, why))
}

/// A broadcast keeps its operand's tiles on the dimensions it maps them to.
pub(crate) fn broadcast(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let t = ctx.operand_array(instr, 0)?;
    let dims = instr.dimensions().unwrap_or_default();
    let rank = instr.shape().dims().len();
    let from: Vec<Option<usize>> = (0..rank as i64)
        .map(|o| dims.iter().position(|&d| d == o))
        .collect();
    let out = t.remap(&from);
    let why = match t.is_replicated() {
        true => "broadcast of a whole operand".to_string(),
        false => "broadcast: operand dimensions keep their tiles, new ones whole".to_string(),
    };
    Ok(simple(out, vec![None], why))
}

/// A transpose permutes its operand's tiles.
pub(crate) fn transpose(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let t = ctx.operand_array(instr, 0)?;
    let perm = instr.dimensions().unwrap_or_default();
    let from: Vec<Option<usize>> = perm.iter().map(|&p| Some(p as usize)).collect();
    Ok(simple(
        t.remap(&from),
        vec![None],
        format!("transpose: tiles permuted by {perm:?}"),
    ))
}

/// A reshape keeps a split dimension that it maps whole onto one output dimension (the
/// same size after the same number of elements); a split dimension it merges or splits
/// is gathered first.
pub(crate) fn reshape(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let t = ctx.operand_array(instr, 0)?;
    let in_dims = ctx.operand_dims(instr, 0);
    let out_dims = instr.shape().dims();
    let prefix = |dims: &[i64], d: usize| dims[..d].iter().product::<i64>();
    let mut from = vec![None; out_dims.len()];
    let mut gather = Vec::new();
    for (d, &tiles) in t.tiles.iter().enumerate() {
        if tiles == 1 {
            continue;
        }
        let e = (0..out_dims.len())
            .find(|&e| out_dims[e] == in_dims[d] && prefix(out_dims, e) == prefix(&in_dims, d));
        match e {
            Some(e) => from[e] = Some(d),
            None => gather.push(d),
        }
    }
    let kept = t.gathered(&gather);
    let out = kept.remap(&from);
    let (operands, why) = match gather.is_empty() {
        true if t.is_replicated() => (vec![None], "reshape of a whole operand".to_string()),
        true => (
            vec![None],
            "reshape: split dimensions map whole onto output dimensions".to_string(),
        ),
        false => (
            vec![Some(kept)],
            format!("reshape merges or splits split dimension(s) {gather:?}: gathered first"),
        ),
    };
    Ok(simple(out, operands, why))
}

/// A tuple holds its operands' shardings.
pub(crate) fn tuple(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let parts = (0..instr.operands().len())
        .map(|i| ctx.operand_array(instr, i).cloned())
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Decision {
        out: ValueTiling::Tuple(parts.clone()),
        local: ValueTiling::Tuple(parts),
        operands: vec![None; instr.operands().len()],
        partial: None,
        tuple_operands: Vec::new(),
        window: None,
        halos: Vec::new(),
        called: Vec::new(),
        why: "tuple: its elements' shardings".into(),
    })
}

/// A get-tuple-element takes its element's sharding.
pub(crate) fn get_tuple_element(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let index = instr.tuple_index().unwrap_or(0) as usize;
    let ValueTiling::Tuple(parts) = ctx.operand(instr, 0)? else {
        return Err(SpmdError::invalid(instr.name(), "operand is not a tuple"));
    };
    let t = parts
        .get(index)
        .cloned()
        .ok_or_else(|| SpmdError::invalid(instr.name(), "tuple index out of range"))?;
    Ok(simple(
        t,
        vec![None],
        format!("element {index} of the tuple"),
    ))
}

/// The `Sharding` custom call (`with_sharding_constraint`): its operand is resharded to
/// the annotation, and the call itself disappears.
pub(crate) fn sharding_call(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let t = annotation(ctx, instr)?
        .ok_or_else(|| SpmdError::unsupported(instr, "a Sharding custom call without sharding="))?;
    let from = ctx.operand_array(instr, 0)?;
    let moved = *from != t;
    let why = format!(
        "sharding constraint {}{}",
        text(&t),
        if moved { ": operand resharded" } else { "" }
    );
    Ok(simple(t.clone(), vec![Some(t).filter(|_| moved)], why))
}
