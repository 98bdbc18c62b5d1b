//! A scan tiled in steps along its scanned dimension (issue 37 item 6, XLA's tile
//! propagation model; [`TilingSpace::scan_steps`]): the programs along that dimension run
//! in order, and the carry hands each step the state after the steps before it. A step
//! then reads the rows at its own positions (every one of them: the carry it hands on
//! needs them), never the earlier (forward) or later (reverse) rows its outputs depend on:
//! those reached it through the carry. So where an order constraint reads a window of rows
//! (`order.rs`: the rows up to or from a position), a step reads the source tile's own
//! positions; the init and a stacked operand keep their other dimensions as before.
//!
//! A carry output is the state after the last step and a carry operand (an init) is read
//! by the first step only, so in steps neither has a tile of its own: propagating from
//! either is refused, as XLA refuses it.

use hlo::{InstrRef, Opcode};

use super::space::TilingSpace;
use super::tile::DimTile;

/// The rows a step reads for the source tile `t` of the scanned dimension: the tile's own
/// positions, whichever of them its outputs depend on (an exclusive scan's output never
/// reads the last row, yet the step reads it for the carry it hands on). The scanned
/// dimension has one length in every input and stacked output, so the source tile's upper
/// bound masks the target's end.
pub(crate) fn step_rows(t: &DimTile) -> DimTile {
    *t
}

/// How many of `instr`'s operands are inputs (the rest are inits) and how many of its
/// outputs are stacked (the rest are carries), when it is a scan.
fn scan_split(instr: &InstrRef<'_>) -> Option<(usize, usize)> {
    let i = instr.instr();
    if i.opcode() != Opcode::Scan {
        return None;
    }
    let carries = usize::try_from(i.scan_num_carries()).ok()?;
    let inputs = i.operands().len().checked_sub(carries)?;
    let outputs = if i.shape().is_tuple() {
        i.shape().tuple_shapes().len()
    } else {
        1
    };
    Some((inputs, outputs.checked_sub(carries)?))
}

/// Why a tile of output `output` of `instr` has no operand tiles in steps: it is a scan's
/// carry output.
pub(crate) fn carry_output(
    space: &TilingSpace,
    instr: &InstrRef<'_>,
    output: usize,
) -> Option<String> {
    let (_, stacked) = scan_split(instr).filter(|_| space.scan_steps)?;
    (output >= stacked).then(|| {
        format!(
            "output {output} of `{}` is a carry: the state after the last step along the scanned dimension, which no step's tile holds",
            instr.name()
        )
    })
}

/// Why a tile of operand `operand` of `instr` has no output tiles in steps: it is a scan's
/// init, read by the first step only.
pub(crate) fn carry_operand(
    space: &TilingSpace,
    instr: &InstrRef<'_>,
    operand: usize,
) -> Option<String> {
    let (inputs, _) = scan_split(instr).filter(|_| space.scan_steps)?;
    (operand >= inputs).then(|| {
        format!(
            "operand {operand} of `{}` is an init: the first step reads it, the later steps the carry",
            instr.name()
        )
    })
}
