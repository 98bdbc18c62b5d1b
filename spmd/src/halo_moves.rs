//! Slice and pad along a split dimension, as windows of one element (`halo.rs`): a slice
//! `[start:limit:stride]` reads output element `i` from input `start + i*stride` — a window
//! of size one, stride `stride`, low padding `-start` — and a pad `lo_hi` (no interior
//! padding) from input `i - lo`, low padding `lo`, the pad value outside the array. Each
//! device then needs its tile and at most a few elements of its neighbours' (a shifted
//! slice, an edge of padding), exchanged by collective-permute instead of gathering the
//! dimension. Where a halo would reach past a neighbour's tile (a slice far from the
//! tile it lands on) the pass-through rule gathers the dimension instead.

use hlo::attrs::WindowDim;
use hlo::{Instruction, Opcode};

use crate::context::{text, Ctx};
use crate::decision::{Decision, Halo, ValueTiling};
use crate::error::SpmdError;
use crate::halo::plan;

/// The decision for a slice or pad whose operand splits a dimension the op moves, when
/// every such dimension takes a halo; `None` otherwise.
pub(crate) fn slice_or_pad(
    ctx: &Ctx<'_>,
    instr: &Instruction,
) -> Option<Result<Decision, SpmdError>> {
    let t = ctx.operand_array(instr, 0).ok()?.clone();
    let n_in = ctx.operand_dims(instr, 0);
    let n_out = instr.shape().dims().to_vec();
    if t.tiles.len() != n_in.len() || n_out.len() != n_in.len() {
        return None;
    }
    let window = |d: usize| -> Option<WindowDim> {
        let (stride, low, high) = match instr.opcode() {
            Opcode::Slice => {
                let s = instr.slice()?.get(d)?;
                (s.stride, -s.start, s.limit - n_in[d])
            }
            Opcode::Pad => {
                let p = instr.padding()?.dims.get(d)?;
                if p.interior != 0 {
                    return None;
                }
                (1, p.low, p.high)
            }
            _ => return None,
        };
        Some(WindowDim {
            size: 1,
            stride,
            padding_low: low,
            padding_high: high,
            base_dilation: 1,
            window_dilation: 1,
            reversal: false,
        })
    };
    let mut halos = Vec::new();
    for d in 0..n_in.len() {
        if t.tiles[d] == 1 {
            continue;
        }
        let w = window(d)?;
        if crate::dims_map::trivial(&w) {
            continue;
        }
        let tile_of: Vec<i64> = t.of_device.iter().map(|i| i[d]).collect();
        let (low, high, offsets, length) = plan(n_in[d], n_out[d], t.tiles[d], &tile_of, &w)?;
        halos.push(Halo {
            operand: 0,
            dim: d,
            low,
            high,
            offsets,
            length,
            fill: (instr.opcode() == Opcode::Pad).then_some(1),
        });
    }
    if halos.is_empty() {
        return None;
    }
    let h: Vec<String> = halos
        .iter()
        .map(|h| format!("dimension {}: {}+{}", h.dim, h.low, h.high))
        .collect();
    let why = format!(
        "{} along split dimension(s): halos from the neighbouring tiles ({}) instead of gathering; {}",
        instr.opcode().as_str(),
        h.join(", "),
        text(&t)
    );
    let mut operands = vec![None; instr.operands().len()];
    if let Some(slot) = operands.get_mut(1) {
        // A pad value is a scalar every device holds.
        *slot = None;
    }
    Some(Ok(Decision {
        out: ValueTiling::Array(t.clone()),
        local: ValueTiling::Array(t),
        operands,
        tuple_operands: Vec::new(),
        partial: None,
        window: None,
        halos,
        called: Vec::new(),
        why,
    }))
}
