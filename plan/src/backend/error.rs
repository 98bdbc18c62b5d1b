//! Why a backend failed to compile or run a program: one error type for every backend, so
//! the driver reports (and tests match) them without knowing which backend ran.

use std::fmt;
use std::path::PathBuf;

/// Why compiling or running on a backend failed.
#[derive(Debug)]
pub enum BackendError {
    /// No compiler for the target's source could be run.
    NoCompiler {
        /// The command tried.
        compiler: String,
        /// Why it failed.
        reason: String,
    },
    /// The compiler rejected generated code: a bug in hloc.
    CompilerRejected {
        /// The first kernel named in the compiler's messages (or `?`).
        kernel: String,
        /// The compiler's messages.
        message: String,
        /// Where the source was kept.
        source_path: PathBuf,
    },
    /// Loading the compiled object failed.
    Load {
        /// The object file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A file-system operation on the cache failed.
    Cache {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Arguments do not match the executable's parameters.
    Argument {
        /// Parameter number.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// A `while` loop ran more iterations than allowed (the evaluator's wording).
    LoopLimit {
        /// The `while` instruction.
        instr: String,
        /// The limit (`--max-while-iterations`).
        limit: u64,
    },
    /// The kernel printer cannot print a kernel of the program.
    Unsupported {
        /// The printer (`c`, `cuda-host`).
        printer: &'static str,
        /// What it cannot print.
        what: String,
    },
    /// Any other internal inconsistency.
    Internal(String),
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendError::NoCompiler { compiler, reason } => write!(
                f,
                "no C compiler: cannot run `{compiler}` ({reason}); install gcc or clang, or use `--backend reference`"
            ),
            BackendError::CompilerRejected {
                kernel,
                message,
                source_path,
            } => write!(
                f,
                "internal error: the C compiler rejected kernel `{kernel}` (source kept at {}):\n{message}",
                source_path.display()
            ),
            BackendError::Load { path, message } => {
                write!(f, "loading {}: {message}", path.display())
            }
            BackendError::Cache { path, source } => {
                write!(f, "kernel cache {}: {source}", path.display())
            }
            BackendError::Argument { index, message } => {
                write!(f, "argument {index}: {message}")
            }
            BackendError::LoopLimit { instr, limit } => write!(
                f,
                "while loop `{instr}` did not finish within {limit} iterations"
            ),
            BackendError::Unsupported { printer, what } => {
                write!(f, "unsupported by the {printer} printer: {what}")
            }
            BackendError::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BackendError::Cache { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_failed() {
        let e = BackendError::Argument {
            index: 2,
            message: "not an array".into(),
        };
        assert_eq!(e.to_string(), "argument 2: not an array");
        let e = BackendError::Cache {
            path: "/c".into(),
            source: std::io::Error::other("full"),
        };
        assert_eq!(e.to_string(), "kernel cache /c: full");
        assert!(std::error::Error::source(&e).is_some());
        let e = BackendError::LoopLimit {
            instr: "w".into(),
            limit: 3,
        };
        assert_eq!(
            e.to_string(),
            "while loop `w` did not finish within 3 iterations"
        );
    }
}
