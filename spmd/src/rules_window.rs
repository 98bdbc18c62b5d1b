//! Propagation of the ops that move elements along some dimensions and leave others
//! alone: slice, pad, concatenate, reverse, sort, dynamic-slice, dynamic-update-slice,
//! reduce-window, select-and-scatter, gather and scatter. A dimension the op leaves
//! alone (the result's element `i` along it is the operand's element `i`: a full slice,
//! no padding, not the concatenated, reversed or sorted dimension, a full dynamic slice
//! or gather slice or scatter window, a window of one) keeps its tiles; a dimension the
//! op reads across is made whole first (a split window dimension of a reduce-window
//! exchanges halos instead, `halo.rs`, and so do slices and pads, `halo_moves.rs`; a
//! concatenated split dimension keeps its tiles, `concat_split.rs`). The operands that
//! the op reads together (a concatenate's, a sort's, an update and its target) are
//! resharded to the most split one's tiles; scalars (pad and init values, indices) stay
//! whole, and so do a gather's indices where its operand leads (the indices' batch
//! dimensions keep their tiles when they lead).

use hlo::{Instruction, Opcode};

use crate::context::{text, Ctx};
use crate::decision::{Decision, ValueTiling};
use crate::dims_map::{data_of, Data};
use crate::error::SpmdError;
use crate::tiling::Tiling;

/// The rule of the ops this file takes, `None` for other ops.
pub(crate) fn decide(ctx: &Ctx<'_>, instr: &Instruction) -> Option<Result<Decision, SpmdError>> {
    if instr.opcode() == Opcode::ReduceWindow {
        let window = instr.window()?.clone();
        if let Some(d) = crate::halo::reduce_window(ctx, instr, &window) {
            return Some(d);
        }
    }
    if matches!(instr.opcode(), Opcode::Slice | Opcode::Pad) {
        if let Some(d) = crate::halo_moves::slice_or_pad(ctx, instr) {
            return Some(d);
        }
    }
    if instr.opcode() == Opcode::Concatenate {
        if let Some(d) = crate::concat_split::decide(ctx, instr) {
            return Some(d);
        }
    }
    let data = data_of(ctx.comp, instr)?;
    Some(pass_through(ctx, instr, &data))
}

/// The decision for `instr` whose `data` operands keep their tiles on the dimensions they
/// map onto the result: the most split of them (restricted to those dimensions) leads,
/// the others are resharded to it, other operands are made whole.
pub(crate) fn pass_through(
    ctx: &Ctx<'_>,
    instr: &Instruction,
    data: &[Data],
) -> Result<Decision, SpmdError> {
    let out_rank = match instr.shape().is_tuple() {
        true => instr
            .shape()
            .tuple_shapes()
            .first()
            .map_or(0, |s| s.dims().len()),
        false => instr.shape().dims().len(),
    };
    let mut lead: Option<Tiling> = None;
    for dt in data {
        let t = ctx.operand_array(instr, dt.operand)?;
        let across: Vec<usize> = (0..dt.map.len()).filter(|&d| dt.map[d].is_none()).collect();
        let mut from = vec![None; out_rank];
        for (d, m) in dt.map.iter().enumerate() {
            if let Some(o) = m {
                from[*o] = Some(d);
            }
        }
        let candidate = t.gathered(&across).remap(&from);
        if lead
            .as_ref()
            .is_none_or(|l| candidate.tile_count() > l.tile_count())
        {
            lead = Some(candidate);
        }
    }
    let out = lead.unwrap_or_else(|| Tiling::replicated(out_rank, ctx.devices));
    let mut operands = Vec::with_capacity(instr.operands().len());
    for i in 0..instr.operands().len() {
        let now = ctx.operand_array(instr, i)?;
        let want = match data.iter().find(|dt| dt.operand == i) {
            Some(dt) => out.remap(&dt.map),
            None => Tiling::replicated(now.tiles.len(), ctx.devices),
        };
        operands.push((*now != want).then_some(want));
    }
    let moved = operands.iter().filter(|o| o.is_some()).count();
    let op = instr.opcode().as_str();
    let mut why = match out.is_replicated() {
        true => format!("{op}: no split dimension it leaves alone; runs whole"),
        false => format!(
            "{op}: dimensions it leaves alone keep their tiles: {}",
            text(&out)
        ),
    };
    if moved > 0 {
        why.push_str(&format!(
            "; {moved} operand(s) resharded (dimensions it reads across made whole)"
        ));
    }
    let value = match instr.shape().is_tuple() {
        true => ValueTiling::Tuple(vec![out; instr.shape().tuple_shapes().len()]),
        false => ValueTiling::Array(out),
    };
    Ok(Decision {
        out: value.clone(),
        local: value,
        operands,
        tuple_operands: Vec::new(),
        partial: None,
        window: None,
        halos: Vec::new(),
        called: Vec::new(),
        why,
    })
}
