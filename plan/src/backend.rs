//! What a target is to the driver: something that turns a [`Program`] into an executable.
//! The runtime drives every backend through this trait and no backend imports the runtime,
//! as XLA's CPU and GPU compilers both consume one buffer assignment and thunk sequence.

use std::sync::Arc;
use std::time::Duration;

use crate::Program;

/// A target that compiles [`Program`]s.
pub trait Backend {
    /// A compiled program, ready to run.
    type Executable;
    /// Why compiling failed.
    type Error: std::error::Error;

    /// The target's name, as `--backend` spells it.
    fn name(&self) -> &'static str;

    /// The program's kernels in the target's source language (for dumps; what
    /// [`Backend::compile`] compiles).
    fn source(&self, program: &Program) -> String;

    /// Compiles `program`, whose kernels [`Backend::source`] printed as `source`; the wall
    /// time of each stage goes to `stages` (name and time, in order).
    fn compile(
        &self,
        program: Arc<Program>,
        source: &str,
        stages: &mut Vec<(&'static str, Duration)>,
    ) -> Result<Self::Executable, Self::Error>;
}
