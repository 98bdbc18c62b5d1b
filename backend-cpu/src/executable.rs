//! The CPU executable as the driver sees it ([`plan::Executable`]): prepared arguments run
//! on the executable that prepared them, and the outputs travel as [`plan::RawOutputs`]
//! around this backend's [`CpuOutputs`].

use std::borrow::Cow;

use hlo::Literal;
use plan::{BackendError, Prepared, PreparedRun, Profile, RawOutputs};

use crate::run::{CpuExecutable, CpuOutputs, CpuPrepared};

/// Arguments prepared by `exe`, ready to run on it.
struct Bound<'a> {
    exe: &'a CpuExecutable,
    args: CpuPrepared<'a>,
}

impl PreparedRun for Bound<'_> {
    fn run(&self) -> Result<RawOutputs, BackendError> {
        self.exe.run_prepared(&self.args).map(RawOutputs::new)
    }
}

/// The CPU outputs inside `raw`, or an error naming the mix-up.
fn cpu_outputs(raw: &RawOutputs) -> Result<&CpuOutputs, BackendError> {
    raw.downcast_ref::<CpuOutputs>()
        .ok_or_else(|| BackendError::Internal("outputs of another backend's run".into()))
}

impl plan::Executable for CpuExecutable {
    fn cache_hit(&self) -> bool {
        CpuExecutable::cache_hit(self)
    }

    fn prepare<'a>(&'a self, args: &'a [Literal]) -> Result<Prepared<'a>, BackendError> {
        let args = CpuExecutable::prepare(self, args)?;
        Ok(Prepared::new(self, Box::new(Bound { exe: self, args })))
    }

    fn prepare_bytes<'a>(&'a self, args: &[&'a [u8]]) -> Result<Prepared<'a>, BackendError> {
        let args = CpuExecutable::prepare_bytes(self, args)?;
        Ok(Prepared::new(self, Box::new(Bound { exe: self, args })))
    }

    fn literals(&self, raw: &RawOutputs) -> Result<Vec<Literal>, BackendError> {
        CpuExecutable::literals(self, cpu_outputs(raw)?)
    }

    fn output_bytes<'r>(&self, raw: &'r RawOutputs, k: usize) -> Option<Cow<'r, [u8]>> {
        CpuExecutable::output_bytes(self, raw.downcast_ref::<CpuOutputs>()?, k)
    }

    fn take_output(&self, raw: &mut RawOutputs, k: usize) -> Option<plan::OutputBuffer> {
        let taken = CpuExecutable::take_output(self, raw.downcast_mut::<CpuOutputs>()?, k)?;
        Some(Box::new(taken))
    }

    fn set_profiling(&self, on: bool) {
        CpuExecutable::set_profiling(self, on)
    }

    fn take_profile(&self) -> Option<Profile> {
        CpuExecutable::take_profile(self)
    }

    fn run(&self, args: &[Literal]) -> Result<Vec<Literal>, BackendError> {
        CpuExecutable::run(self, args)
    }
}
