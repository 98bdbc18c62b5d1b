//! How a program's kernels become the translation units the system compiler builds, and
//! which symbol each kernel's entry point has: the C printer by default, or another printer
//! of code that runs on this CPU (the CUDA host emulation prints C++, in `backend-cuda`).
//! Either way the units go through the same compile, cache, load and launch path.

use codegen::kir::Kernel;

use crate::error::BackendError;

/// Prints a program's translation units: at most `jobs`, each of at least `min_bytes` of
/// kernels where there is enough, kernel `i` called `calls[i]` times a run
/// ([`crate::kernel_calls`]); or why it cannot.
pub type UnitPrinter = fn(&[Kernel], &[u64], usize, usize) -> Result<Vec<String>, String>;

/// A printer of a program's kernels for this CPU's compiler.
#[derive(Clone, Copy, Debug)]
pub struct KernelSource {
    /// Its name, for messages (`c`, `cuda-host`).
    pub name: &'static str,
    /// The whole program's text (what the cache key hashes), kernel `i` called
    /// `calls[i]` times a run.
    pub source: fn(&[Kernel], &[u64]) -> Result<String, String>,
    /// The translation units (a printer may make just one).
    pub units: UnitPrinter,
    /// The symbol of kernel `name`'s entry point, `void (void *const *bufs, int64_t
    /// block_begin, int64_t block_end)`.
    pub entry: fn(&str) -> String,
}

impl KernelSource {
    /// The C printer ([`crate::c`]).
    pub fn c() -> KernelSource {
        KernelSource {
            name: "c",
            source: |kernels, calls| Ok(crate::c::translation_unit_called(kernels, calls)),
            units: |kernels, calls, jobs, min_bytes| {
                Ok(crate::c::translation_units_called(
                    kernels, calls, jobs, min_bytes,
                ))
            },
            entry: str::to_string,
        }
    }

    /// The program's text, or why this printer cannot print it.
    pub(crate) fn source_of(
        &self,
        kernels: &[Kernel],
        calls: &[u64],
    ) -> Result<String, BackendError> {
        (self.source)(kernels, calls).map_err(|what| self.unsupported(what))
    }

    /// The translation units, or why this printer cannot print them.
    pub(crate) fn units_of(
        &self,
        kernels: &[Kernel],
        calls: &[u64],
        jobs: usize,
        min_bytes: usize,
    ) -> Result<Vec<String>, BackendError> {
        (self.units)(kernels, calls, jobs, min_bytes).map_err(|what| self.unsupported(what))
    }

    fn unsupported(&self, what: String) -> BackendError {
        BackendError::Unsupported {
            printer: self.name,
            what,
        }
    }
}
