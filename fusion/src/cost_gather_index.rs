//! How often a CPU kernel evaluates a gather's start indices: once per gathered run, not
//! once per gathered element.
//!
//! A gather's output-to-input map reads its start indices once per output element (the
//! index vector, `k` values), so [`crate::cost::evaluate`] would price a fused producer of
//! the indices (iotas, multiplies, a compare: conv-to-gemm's im2col positions) as
//! recomputed for every element of every slice. The CPU code generator places each value
//! in the innermost loop it depends on: the start index of a slice depends only on the
//! output's batch (non-offset) dimensions, so along the trailing offset dimensions (a
//! feature row of the slice, the loop the C compiler vectorizes) it is computed once and
//! the row is copied. Priced per element, a patch kernel's index arithmetic looked 64
//! times (the features) dearer than it is, and priority fusion left it a materialized
//! `s32` array of its own (a kernel and a buffer per convolution geometry).
//!
//! Only the trailing offset dimensions count: an offset dimension before a batch one is an
//! outer loop, inside which the index is computed again.

use hlo::{Instruction, Opcode};

/// The elements of one run of a gather's output along which its start indices are
/// invariant: the product of the sizes of its trailing dimensions that are offset
/// dimensions (1 for any other op, or a gather with a batch dimension last).
pub fn index_run(instr: &Instruction) -> f64 {
    if instr.opcode() != Opcode::Gather {
        return 1.0;
    }
    let Some(dn) = instr.gather_dimension_numbers() else {
        return 1.0;
    };
    let dims = instr.shape().dims();
    let mut run = 1.0;
    for d in (0..dims.len()).rev() {
        if !dn.offset_dims.contains(&(d as i64)) {
            break;
        }
        run *= dims[d].max(1) as f64;
    }
    run
}

/// The evaluations per output element of operand `k` of an op whose start-index run is
/// `run` ([`index_run`]), where the map says `reads`: the start indices (operand 1) of a
/// gather once per run when the code generator hoists invariant values (`hoist`: the CPU
/// emitters; a GPU thread computes its own element's index).
pub fn operand_reads(opcode: Opcode, k: usize, reads: f64, run: f64, hoist: bool) -> f64 {
    if hoist && opcode == Opcode::Gather && k == 1 && run > 1.0 {
        reads / run
    } else {
        reads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlo::parse_module;

    fn gather_of(text: &str) -> f64 {
        let m = parse_module(text).unwrap();
        index_run(m.entry().root_instr())
    }

    #[test]
    fn trailing_offset_dimensions_make_the_run() {
        // im2col patches: [blocks, rows, taps, features], the features a slice.
        let run = gather_of(
            "HloModule m\nENTRY e {\n  x = f32[100,64] parameter(0)\n  i = s32[4,8,2] parameter(1)\n  ROOT g = f32[4,8,2,64] gather(x, i), offset_dims={3}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=3, slice_sizes={1,64}\n}\n",
        );
        assert_eq!(run, 64.0);
    }

    #[test]
    fn an_offset_dimension_before_a_batch_one_is_not_in_the_run() {
        let run = gather_of(
            "HloModule m\nENTRY e {\n  x = f32[64,100] parameter(0)\n  i = s32[8] parameter(1)\n  ROOT g = f32[64,8] gather(x, i), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={64,1}\n}\n",
        );
        assert_eq!(run, 1.0);
        assert_eq!(operand_reads(Opcode::Gather, 1, 1.0, run, true), 1.0);
    }

    #[test]
    fn only_hoisting_emitters_read_the_indices_once_per_run() {
        assert_eq!(
            operand_reads(Opcode::Gather, 1, 1.0, 64.0, true),
            1.0 / 64.0
        );
        assert_eq!(operand_reads(Opcode::Gather, 1, 1.0, 64.0, false), 1.0);
        assert_eq!(operand_reads(Opcode::Gather, 0, 1.0, 64.0, true), 1.0);
    }
}
