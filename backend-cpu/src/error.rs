//! Errors of compiling and running a program on the CPU.

use std::path::PathBuf;

/// Why compiling or running on the CPU failed.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// No C compiler could be run.
    #[error("no C compiler: cannot run `{compiler}` ({reason}); install gcc or clang, or use `--backend reference`")]
    NoCompiler {
        /// The command tried.
        compiler: String,
        /// Why it failed.
        reason: String,
    },
    /// The C compiler rejected generated code: a bug in hloc.
    #[error("internal error: the C compiler rejected kernel `{kernel}` (source kept at {}):\n{message}", source_path.display())]
    CompilerRejected {
        /// The first kernel named in the compiler's messages (or `?`).
        kernel: String,
        /// The compiler's messages.
        message: String,
        /// Where the source was kept.
        source_path: PathBuf,
    },
    /// Loading the compiled object failed.
    #[error("loading {}: {message}", path.display())]
    Load {
        /// The object file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// A file-system operation on the cache failed.
    #[error("kernel cache {}: {source}", path.display())]
    Cache {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Arguments do not match the executable's parameters.
    #[error("argument {index}: {message}")]
    Argument {
        /// Parameter number.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// A `while` loop ran more iterations than allowed (the evaluator's wording).
    #[error("while loop `{instr}` did not finish within {limit} iterations")]
    LoopLimit {
        /// The `while` instruction.
        instr: String,
        /// The limit (`--max-while-iterations`).
        limit: u64,
    },
    /// The kernel printer cannot print a kernel of the program.
    #[error("unsupported by the {printer} printer: {what}")]
    Unsupported {
        /// The printer (`c`, `cuda-host`).
        printer: &'static str,
        /// What it cannot print.
        what: String,
    },
    /// Any other internal inconsistency.
    #[error("internal error: {0}")]
    Internal(String),
}
