//! Running on raw byte buffers: arguments given as row-major bytes are read in place when
//! the parameter's layout is row-major, and outputs come back as row-major bytes borrowed
//! from the run's buffers or taken out of them whole (the Python package's path: no copy
//! of a C-contiguous numpy argument, none of a large row-major output).

use std::borrow::Cow;

use crate::{Executable, Prepared, RawOutputs, RuntimeError};

impl Executable {
    /// Prepares `args`, one slice per entry parameter holding its elements as row-major
    /// native-endian bytes (one byte per `pred`), for [`Executable::run_prepared`]; a
    /// slice of the wrong length is an argument error naming the parameter.
    pub fn prepare_bytes<'a>(&'a self, args: &[&'a [u8]]) -> Result<Prepared<'a>, RuntimeError> {
        Ok(self.exe.prepare_bytes(args)?)
    }

    /// Output `k` of a run (the root's leaves in flattened tuple order) as row-major
    /// native-endian bytes; `None` past the last output.
    pub fn output_bytes<'r>(&self, raw: &'r RawOutputs, k: usize) -> Option<Cow<'r, [u8]>> {
        self.exe.output_bytes(raw, k)
    }

    /// Output `k` of a run moved out of `raw` whole, without a copy, when the backend
    /// holds it in host memory in row-major order; `None` otherwise (then
    /// [`Executable::output_bytes`] gives its bytes). Dropping the buffer gives its memory
    /// back to the backend for later runs' outputs.
    pub fn take_output(&self, raw: &mut RawOutputs, k: usize) -> Option<plan::OutputBuffer> {
        self.exe.take_output(raw, k)
    }
}
