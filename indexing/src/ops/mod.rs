//! Per-op maps: for one instruction on its own, the maps from each output to each operand
//! ([`out_to_in`]) and from an operand to each output ([`in_to_out`]), one file per op
//! family; `table.rs` picks the function by opcode. Nothing here looks at another
//! instruction's maps: composition through a computation, and the folding of runtime
//! variables, are layers above, so a caller that propagates something op by op (tiles,
//! say) can use these tables alone.

mod batch_norm;
mod concat_pad;
mod contraction;
mod dynamic;
mod elementwise;
mod movement;
mod reduce;
pub(crate) mod reshape;
mod scan;
mod sort;
mod structural;
mod table;
mod undefined;
pub(crate) mod util;

use hlo::{InstrRef, Opcode};

use crate::{IndexingError, OperandIndexing};
pub use table::calls_computation;
pub(crate) use table::{op_in_to_out, op_out_to_in};
pub use undefined::undefined_reason;
use util::{output_count, OpView};

/// Which output of its operands output `k` of `instr` reads: the element a
/// get-tuple-element selects, the same element through an optimization barrier, else 0.
pub fn operand_output(instr: &hlo::Instruction, k: usize) -> usize {
    match instr.opcode() {
        Opcode::GetTupleElement => instr.tuple_index().map_or(0, |i| i.max(0) as usize),
        Opcode::OptimizationBarrier => k,
        _ => 0,
    }
}

/// The maps from output `output` of `instr` (0 for an array result; a tuple element
/// otherwise) to each of its operands, from the op's own table: not simplified, runtime
/// variables not folded, UNDEFINED for an op that calls a computation
/// ([`calls_computation`]).
///
/// ```
/// let m = hlo::parse_module("HloModule m\nENTRY e {\n  p = f32[4,8] parameter(0)\n  \
///     ROOT t = f32[8,4] transpose(p), dimensions={1,0}\n}").unwrap();
/// let maps = indexing::ops::out_to_in(&m.instr("t").unwrap(), 0).unwrap();
/// assert_eq!(
///     indexing::format_operand(&maps[0], ""),
///     "(d0, d1) -> (d1, d0), domain: d0 in [0, 7], d1 in [0, 3]\n"
/// );
/// ```
pub fn out_to_in(
    instr: &InstrRef<'_>,
    output: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let count = output_count(instr.instr());
    if output >= count {
        return Err(IndexingError::NoSuchOutput {
            instr: instr.name().to_string(),
            count,
            output,
        });
    }
    op_out_to_in(&OpView::of(instr), output)
}

/// The maps from operand `operand` of `instr` to each of its outputs, from the op's own
/// table: not simplified, runtime variables not folded, UNDEFINED for an op that calls a
/// computation ([`calls_computation`]).
pub fn in_to_out(
    instr: &InstrRef<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let count = instr.instr().operands().len();
    if operand >= count {
        return Err(IndexingError::NoSuchOperand {
            instr: instr.name().to_string(),
            count,
            operand,
        });
    }
    op_in_to_out(&OpView::of(instr), operand)
}
