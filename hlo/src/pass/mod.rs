//! The pass framework: a [`Pass`] rewrites a [`Module`] and says whether it changed it;
//! [`Pipeline`]s run passes in order and nest; [`FixedPoint`] repeats a pass until nothing
//! changes (with an iteration cap). A [`PassContext`] carries what a run is instrumented
//! with: passes disabled by name, the verifier hook run after every pass, per-pass timing
//! and change counts ([`PassStats`]), and XLA-style dumps ([`DumpConfig`]).
//!
//! ```
//! use hlo::pass::{Pass, PassContext, Pipeline};
//! let mut module = hlo::parse_module("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n}\n").unwrap();
//! let mut pipeline = Pipeline::new("empty");
//! let mut ctx = PassContext::default();
//! assert_eq!(pipeline.run_in(&mut module, &mut ctx).unwrap(), false);
//! ```

mod context;
mod dump;
mod pipeline;
mod stats;
pub mod verify;

pub use context::{PassContext, VerifyHook};
pub use dump::{dump_file_name, module_dump_prefix, DumpConfig};
pub use pipeline::{FixedPoint, Pipeline};
pub use stats::{PassStat, PassStats};

use crate::ir::{IrError, Module};

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

/// A module-level transformation.
///
/// `run` returns whether the module changed; a pass that reports `false` must leave the
/// module exactly as it was (the fixed-point wrapper and the dumps rely on it).
pub trait Pass {
    /// The pass name (`dce`, `algsimp`, ...), used to disable it and in dumps and timing.
    fn name(&self) -> &str;

    /// One line saying what the pass does (for `hloc opt --list-passes`).
    fn description(&self) -> &str;

    /// Runs the pass on `module`, returning whether it changed anything.
    fn run(&mut self, module: &mut Module) -> Result<bool, PassError>;

    /// Runs the pass under `ctx`. Leaf passes keep this default; pipelines override it to
    /// instrument each of their passes.
    fn run_in(&mut self, module: &mut Module, ctx: &mut PassContext) -> Result<bool, PassError> {
        let _ = ctx;
        self.run(module)
    }

    /// True for passes made of other passes (pipelines, fixed points): they are not timed
    /// or dumped as one pass, their passes are.
    fn is_composite(&self) -> bool {
        false
    }
}
