//! Propagation of `reduce`: kept dimensions keep their tiles; a reduced dimension that is
//! split leaves partial results, combined by an all-reduce over the devices that split it
//! (the reduce's own computation as the combiner) when that is exact — a reducer
//! `hlo::ir::reducer` recognizes, whose init value each device may fold in once (the
//! identity, or any value for max/min/and/or) — and is gathered first otherwise.

use hlo::ir::reducer::{classify, Reducer};
use hlo::{Instruction, Opcode};

use crate::context::{with_value, Ctx};
use crate::decision::{Decision, PartialSums, ValueTiling};
use crate::error::SpmdError;
use crate::tiling::Tiling;

/// The decision for reduce `instr`.
pub(crate) fn reduce(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    let n = instr.operands().len() / 2;
    let reduced: Vec<usize> = instr
        .dimensions()
        .unwrap_or_default()
        .iter()
        .map(|&d| d as usize)
        .collect();
    // A variadic reduce's inputs are read together: the most split one leads.
    let mut a = ctx.operand_array(instr, 0)?.clone();
    let mut inputs = Vec::with_capacity(n);
    for i in 0..n {
        let t = ctx.operand_array(instr, i)?;
        if t.tile_count() > a.tile_count() {
            a = t.clone();
        }
        inputs.push(t.clone());
    }
    let to = |want: &Tiling| -> Vec<Option<Tiling>> {
        inputs
            .iter()
            .map(|t| (t != want).then(|| want.clone()))
            .collect()
    };
    let value = |t: Tiling| match n {
        1 => ValueTiling::Array(t),
        _ => ValueTiling::Tuple(vec![t; n]),
    };
    let kept: Vec<Option<usize>> = (0..a.tiles.len())
        .filter(|d| !reduced.contains(d))
        .map(Some)
        .collect();
    let split: Vec<usize> = reduced
        .iter()
        .copied()
        .filter(|&d| a.tiles[d] > 1)
        .collect();
    // Init values are scalars: every device holds them whole.
    let inits: Vec<Option<Tiling>> = vec![None; n];
    if split.is_empty() {
        let mut operands = to(&a);
        operands.extend(inits);
        return Ok(with_value(
            value(a.remap(&kept)),
            operands,
            "reduce over whole dimensions: kept dimensions keep their tiles".into(),
        ));
    }
    if n == 1 {
        if let Some(r) = exact_partials(ctx, instr) {
            let groups = a
                .groups_along(&split)
                .map_err(|e| SpmdError::invalid(instr.name(), e))?;
            let out = a.remap(&kept);
            let why = format!(
                "reduce of split dimension(s) {split:?}: local {} reductions, all-reduced over {}",
                format!("{r:?}").to_lowercase(),
                groups_text(&groups)
            );
            let mut operands = vec![None];
            operands.extend(inits);
            return Ok(Decision {
                out: ValueTiling::Array(out.clone()),
                local: ValueTiling::Array(out),
                operands,
                partial: Some(PartialSums { groups }),
                tuple_operands: Vec::new(),
                window: None,
                halos: Vec::new(),
                called: Vec::new(),
                why,
            });
        }
    }
    let whole = a.gathered(&split);
    let mut operands = to(&whole);
    operands.extend(inits);
    Ok(with_value(
        value(whole.remap(&kept)),
        operands,
        format!(
            "reduce of split dimension(s) {split:?} with a reducer or init value that partial results cannot take: gathered first"
        ),
    ))
}

/// The reducer, when each device may reduce its part with the init value and an
/// all-reduce with the same computation gives the whole reduction.
fn exact_partials(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Reducer> {
    let r = classify(ctx.module, instr.to_apply()?)?;
    if matches!(r, Reducer::Max | Reducer::Min | Reducer::And | Reducer::Or) {
        return Some(r);
    }
    let init = ctx.comp.instr(instr.operand(1)?);
    if init.opcode() != Opcode::Constant {
        return None;
    }
    let v = init.literal()?.as_array()?.get_f64(0)?;
    let identity = match r {
        Reducer::Mul => 1.0,
        _ => 0.0,
    };
    (v == identity).then_some(r)
}

/// `{0,1},{2,3}`.
pub(crate) fn groups_text(groups: &[Vec<i64>]) -> String {
    groups
        .iter()
        .map(|g| {
            let ids: Vec<String> = g.iter().map(i64::to_string).collect();
            format!("{{{}}}", ids.join(","))
        })
        .collect::<Vec<_>>()
        .join(",")
}
