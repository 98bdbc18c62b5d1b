//! What a target is to the driver: something that turns a [`Program`] into an
//! [`Executable`] it can run on buffers, with its stats and profile. The runtime drives
//! every backend through these traits (as trait objects, so a new target is one more
//! implementation, not a change to the driver) and no backend imports the runtime, as
//! XLA's CPU and GPU compilers both consume one buffer assignment and thunk sequence.
//!
//! Prepared arguments and raw outputs are the backend's own data behind opaque wrappers
//! ([`Prepared`], [`RawOutputs`]): a CPU backend reads row-major arguments in place and
//! keeps outputs in host words, a GPU backend would keep device buffers.

mod error;

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use hlo::Literal;

use crate::{Profile, Program};

pub use error::BackendError;

/// A target that compiles [`Program`]s.
pub trait Backend: Send + Sync {
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
    ) -> Result<Box<dyn Executable>, BackendError>;
}

/// A compiled program, ready to run: what the driver's executable calls for every run.
pub trait Executable: Send + Sync {
    /// Whether compiling found the compiled code in a cache (`hloc compile --stats`'s
    /// `cache:`).
    fn cache_hit(&self) -> bool;

    /// Checks `args` (one array per parameter) and puts each in the form a run reads,
    /// once for any number of runs ([`Prepared::run`]).
    fn prepare<'a>(&'a self, args: &'a [Literal]) -> Result<Prepared<'a>, BackendError>;

    /// [`Executable::prepare`] for arguments given as row-major native-endian bytes
    /// (one byte per `pred`), read in place where the layout allows (the Python path).
    fn prepare_bytes<'a>(&'a self, args: &[&'a [u8]]) -> Result<Prepared<'a>, BackendError>;

    /// The outputs of a run as literals, the root's leaves in flattened tuple order.
    fn literals(&self, raw: &RawOutputs) -> Result<Vec<Literal>, BackendError>;

    /// Output `k` of a run as row-major native-endian bytes; `None` past the last output
    /// (or for outputs another executable made).
    fn output_bytes<'r>(&self, raw: &'r RawOutputs, k: usize) -> Option<Cow<'r, [u8]>>;

    /// Output `k` of a run moved out whole as row-major native-endian bytes, without a
    /// copy, when the backend holds it in its own host memory in row-major order (the
    /// Python package hands it to numpy); `None` otherwise (another layout, device
    /// memory, already taken, past the last output), where [`Executable::output_bytes`]
    /// still gives the bytes.
    fn take_output(&self, _raw: &mut RawOutputs, _k: usize) -> Option<OutputBuffer> {
        None
    }

    /// Starts (or stops) recording per-step times ([`Executable::take_profile`]).
    fn set_profiling(&self, on: bool);

    /// The per-step times recorded since profiling started (then starts afresh).
    fn take_profile(&self) -> Option<Profile>;

    /// Runs on `args` (one array per parameter); the outputs as literals.
    fn run(&self, args: &[Literal]) -> Result<Vec<Literal>, BackendError> {
        let prepared = self.prepare(args)?;
        let raw = prepared.run()?;
        self.literals(&raw)
    }
}

/// One run of prepared arguments on the executable that prepared them (a backend's
/// arguments and its executable together, so the driver needs neither's type).
pub trait PreparedRun {
    /// Runs the executable once on the arguments.
    fn run(&self) -> Result<RawOutputs, BackendError>;
}

/// Arguments an [`Executable`] prepared, for any number of runs; they borrow the
/// executable and the caller's data (`'a`).
pub struct Prepared<'a> {
    /// The address of the executable that made them ([`Prepared::made_by`]).
    maker: *const (),
    run: Box<dyn PreparedRun + 'a>,
}

impl<'a> Prepared<'a> {
    /// Arguments `maker` prepared, run by `run`.
    pub fn new(maker: &dyn Executable, run: Box<dyn PreparedRun + 'a>) -> Prepared<'a> {
        Prepared {
            maker: maker as *const dyn Executable as *const (),
            run,
        }
    }

    /// Whether `exe` prepared them (a run on another executable's arguments is refused).
    pub fn made_by(&self, exe: &dyn Executable) -> bool {
        std::ptr::eq(self.maker, exe as *const dyn Executable as *const ())
    }

    /// Runs the executable that prepared them once; the outputs stay in the backend's form
    /// until [`Executable::literals`] or [`Executable::output_bytes`].
    pub fn run(&self) -> Result<RawOutputs, BackendError> {
        self.run.run()
    }
}

/// The outputs of one run in the backend's own form (host words, device buffers).
pub struct RawOutputs(Box<dyn Any + Send + Sync>);

impl RawOutputs {
    /// Wraps a backend's outputs.
    pub fn new<T: Any + Send + Sync>(outputs: T) -> RawOutputs {
        RawOutputs(Box::new(outputs))
    }

    /// The backend's outputs, if they are of type `T` (outputs of another backend are
    /// not).
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }

    /// The backend's outputs, mutably, if they are of type `T`.
    pub fn downcast_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.0.downcast_mut()
    }
}

/// An output's memory owned by the caller ([`Executable::take_output`]): its row-major
/// bytes, which the caller may read and write in place while it holds the buffer (a numpy
/// array over it); dropping it may give the memory back to the backend for later runs'
/// outputs (no fresh pages to fault in).
pub trait OwnedOutput: Send + Sync {
    /// The output's bytes.
    fn bytes(&self) -> &[u8];

    /// The first byte, for a foreign owner (a numpy array) that reads and writes the
    /// bytes in place as long as it holds this buffer; the memory does not move while
    /// the buffer lives.
    fn as_mut_ptr(&mut self) -> *mut u8;
}

/// An output taken out of a run ([`Executable::take_output`]).
pub type OutputBuffer = Box<dyn OwnedOutput>;
