//! Why evaluation failed: [`EvalError`].

use hlo::Opcode;

/// Why evaluation failed.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The opcode (or custom-call target) is not implemented.
    #[error("unsupported operation `{opcode}` (instruction `{instr}`){}", detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Unsupported {
        /// The opcode.
        opcode: Opcode,
        /// The instruction's name.
        instr: String,
        /// More detail (e.g. the custom-call target).
        detail: Option<String>,
    },
    /// The module or an operand is malformed for the operation.
    #[error("instruction `{instr}`: {message}")]
    Invalid {
        /// The instruction's name.
        instr: String,
        /// What is wrong.
        message: String,
    },
    /// Wrong number of arguments for the entry computation.
    #[error("the entry computation takes {expected} argument(s), got {got}")]
    ArgumentCount {
        /// Parameters of the entry computation.
        expected: usize,
        /// Arguments given.
        got: usize,
    },
    /// An argument's shape or type does not match its parameter.
    #[error("argument {index} (parameter `{name}`) must be {expected}, got {got}")]
    ArgumentMismatch {
        /// Parameter number.
        index: usize,
        /// Parameter instruction name.
        name: String,
        /// The parameter's shape.
        expected: String,
        /// The argument's shape.
        got: String,
    },
    /// A result would exceed the size limit.
    #[error(
        "instruction `{instr}` would allocate {}, more than the limit of {}",
        crate::memory::describe_bytes(*bytes),
        crate::memory::describe_bytes(*limit)
    )]
    TooLarge {
        /// The instruction's name.
        instr: String,
        /// Bytes the result needs (saturated at `u64::MAX`).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// A result would take the run's live values together past the size limit.
    #[error(
        "instruction `{instr}` would allocate {} while the run holds {} of live values, \
         more than the limit of {} together",
        crate::memory::describe_bytes(*bytes),
        crate::memory::describe_bytes(*live),
        crate::memory::describe_bytes(*limit)
    )]
    LiveTooLarge {
        /// The instruction's name.
        instr: String,
        /// Bytes its result needs.
        bytes: u64,
        /// Bytes of the values and arguments live when it runs.
        live: u64,
        /// The limit.
        limit: u64,
    },
    /// A `while` loop ran more iterations than the limit.
    #[error("while loop `{instr}` did not finish within {limit} iterations")]
    LoopLimit {
        /// The while instruction's name.
        instr: String,
        /// The iteration limit.
        limit: u64,
    },
}

impl EvalError {
    /// An [`EvalError::Invalid`] for instruction `instr`.
    pub(crate) fn invalid(instr: &str, message: impl Into<String>) -> EvalError {
        EvalError::Invalid {
            instr: instr.to_string(),
            message: message.into(),
        }
    }
}
