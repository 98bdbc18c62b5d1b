//! The errors of running passes.

use crate::ir::IrError;

/// Errors of running passes.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    /// The pass met an instruction it cannot handle and that it must not skip.
    #[error("pass `{pass}`: unsupported: {what}")]
    Unsupported {
        /// The pass.
        pass: String,
        /// What is not supported (names the opcode).
        what: String,
    },
    /// An IR mutation failed (a bug in the pass or a malformed module).
    #[error("pass `{pass}`: {source}")]
    Ir {
        /// The pass.
        pass: String,
        /// The IR error.
        source: IrError,
    },
    /// The module is malformed in a way the pass detected.
    #[error("pass `{pass}`: {message}")]
    Invalid {
        /// The pass.
        pass: String,
        /// What is wrong.
        message: String,
    },
    /// The verifier rejected the module after a pass.
    #[error("verifier failed after pass `{pass}`:\n{message}")]
    Verify {
        /// The pass after which verification failed.
        pass: String,
        /// The verifier's report.
        message: String,
    },
    /// Writing a dump failed.
    #[error("writing dump `{path}`: {source}")]
    Dump {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl PassError {
    /// An [`PassError::Ir`] for `pass`.
    pub fn ir(pass: &str, source: IrError) -> PassError {
        PassError::Ir {
            pass: pass.to_string(),
            source,
        }
    }

    /// An [`PassError::Invalid`] for `pass`.
    pub fn invalid(pass: &str, message: impl Into<String>) -> PassError {
        PassError::Invalid {
            pass: pass.to_string(),
            message: message.into(),
        }
    }
}
