//! Errors of code generation.

/// Why code generation failed.
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// An operation (or a form of one) no emitter supports yet (worded as the
    /// evaluator's unsupported-operation error).
    #[error("unsupported operation `{op}` (instruction `{instr}`): {reason}")]
    Unsupported {
        /// The opcode (or feature) name.
        op: String,
        /// The instruction.
        instr: String,
        /// What exactly is missing.
        reason: String,
    },
    /// The indexing analysis failed for an instruction.
    #[error("indexing of `{instr}`: {source}")]
    Indexing {
        /// The instruction.
        instr: String,
        /// The analysis error.
        source: indexing::IndexingError,
    },
    /// An emitted kernel failed verification (a bug in an emitter).
    #[error("internal error: {0}")]
    Verify(#[from] crate::kir::VerifyError),
    /// Any other internal inconsistency (a bug, never bad input).
    #[error("internal error: {0}")]
    Internal(String),
}

impl CodegenError {
    /// An [`CodegenError::Unsupported`] error.
    pub fn unsupported(
        op: impl Into<String>,
        instr: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        CodegenError::Unsupported {
            op: op.into(),
            instr: instr.into(),
            reason: reason.into(),
        }
    }

    /// The unsupported op's name, if this is an [`CodegenError::Unsupported`] error.
    pub fn unsupported_op(&self) -> Option<&str> {
        match self {
            CodegenError::Unsupported { op, .. } => Some(op),
            _ => None,
        }
    }
}
