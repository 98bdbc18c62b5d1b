//! Errors of the indexing analysis: malformed instructions, not unsupported ops (those give
//! UNDEFINED maps for the operands they affect).

use thiserror::Error;

/// Why an indexing question could not be answered.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum IndexingError {
    /// An instruction lacks an attribute its opcode needs, or has an inconsistent one.
    #[error("instruction `{instr}` ({opcode}): {message}")]
    Malformed {
        /// Instruction name.
        instr: String,
        /// Its opcode.
        opcode: String,
        /// What is wrong.
        message: String,
    },
    /// No instruction of that name in the module.
    #[error("no instruction named `{0}`")]
    NoSuchInstruction(String),
    /// An operand number outside the instruction's operands.
    #[error("instruction `{instr}` has {count} operands; operand {operand} does not exist")]
    NoSuchOperand {
        /// Instruction name.
        instr: String,
        /// Operands it has.
        count: usize,
        /// Operand asked for.
        operand: usize,
    },
    /// An output number outside the instruction's outputs.
    #[error("instruction `{instr}` has {count} outputs; output {output} does not exist")]
    NoSuchOutput {
        /// Instruction name.
        instr: String,
        /// Outputs it has.
        count: usize,
        /// Output asked for.
        output: usize,
    },
    /// The question needs a fusion (or an instruction calling a computation).
    #[error("instruction `{0}` is not a fusion")]
    NotAFusion(String),
    /// The producer is not an operand of the consumer.
    #[error("`{producer}` is not an operand of `{consumer}`")]
    NotProducerConsumer {
        /// Producer name.
        producer: String,
        /// Consumer name.
        consumer: String,
    },
    /// A grouped walk's start is neither the region, an operand of it, nor an instruction
    /// of the computation it calls (or an epilogue's root is not in the hero's computation).
    #[error("`{start}` is not in the region of `{region}` (itself, an operand, or an instruction of its computation)")]
    NotInRegion {
        /// Starting instruction.
        start: String,
        /// The region's instruction.
        region: String,
    },
    /// An error of the map algebra (arity mismatch: a bug or an inconsistent shape).
    #[error("map algebra: {0}")]
    Map(#[from] affine::MapError),
}
