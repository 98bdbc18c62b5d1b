//! The partitioner's errors: an op or sharding it does not handle yet (named, so the user
//! sees what to avoid or what to implement next), or a module it cannot read.

use thiserror::Error;

/// Why partitioning failed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SpmdError {
    /// The partitioner does not handle this instruction or sharding yet.
    #[error("unsupported: {opcode} `{instr}`: {detail}")]
    Unsupported {
        /// The opcode (or custom-call target).
        opcode: String,
        /// The instruction's name.
        instr: String,
        /// What is not handled.
        detail: String,
    },
    /// The module is not one the partitioner can take (bad annotation, bad device count).
    #[error("invalid: `{instr}`: {detail}")]
    Invalid {
        /// The instruction (or `module`).
        instr: String,
        /// What is wrong.
        detail: String,
    },
}

impl SpmdError {
    /// An [`SpmdError::Unsupported`] for `instr`.
    pub fn unsupported(instr: &hlo::Instruction, detail: impl Into<String>) -> SpmdError {
        SpmdError::Unsupported {
            opcode: instr.opcode().as_str().to_string(),
            instr: instr.name().to_string(),
            detail: detail.into(),
        }
    }

    /// An [`SpmdError::Invalid`] about `what`.
    pub fn invalid(what: &str, detail: impl Into<String>) -> SpmdError {
        SpmdError::Invalid {
            instr: what.to_string(),
            detail: detail.into(),
        }
    }
}
