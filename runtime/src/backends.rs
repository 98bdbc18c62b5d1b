//! Backend selection: the [`plan::Backend`] that compiles and runs a module for the given
//! options. The driver ([`crate::compile_plan`], [`crate::Executable`]) sees only the trait
//! objects, so a new target is one more arm here and an implementation in its own crate.
//!
//! This is the one runtime file that names a backend crate: the other paths that need a
//! backend's services reach them through the functions here, so that what the driver asks
//! of each backend is listed in one place: the compile-only GPU path
//! ([`crate::compile_gpu_plan`]: [`cuda_module`], [`cubin`]), the compile progress
//! ([`reporting_to`]) and the SPMD runs' in-process communicators ([`communicators`],
//! [`is_peer_failure`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use backend_cpu::{CpuBackend, InProcess};
use backend_cuda::{CudaBackend, CudaTarget};
use plan::{Communicator, Grid, Program};

/// The MPI communicator (feature `mpi`): this process is one device of an `mpirun` job,
/// handed to [`plan::with_communicator`] around the run instead of [`communicators`].
#[cfg(feature = "mpi")]
pub use backend_cpu::MpiDevice;
pub use backend_cpu::{cache_dir, CompileListener};
pub use backend_cuda::{nvrtc_present, Cubin, CudaError, KernelResources};

/// What selects and configures a backend (the driver's `CompileOptions` of the same
/// names).
pub(crate) struct Choice<'a> {
    /// The CUDA host emulation instead of the CPU's C.
    pub cuda_host: bool,
    /// The GPU description the kernels were emitted for: without `cuda_host`, run them on
    /// the GPU (`--backend cuda`).
    pub gpu: Option<&'a str>,
    /// The object cache directory (else the default).
    pub cache_dir: Option<&'a Path>,
    /// The compiler command (else `$HLOC_CC`/`cc`, or `$HLOC_CXX`/`c++` for the emulation).
    pub compiler: Option<String>,
    /// Threads for large kernels (else rayon's pool size).
    pub threads: Option<usize>,
    /// Most iterations one `while` loop may run.
    pub max_while_iterations: u64,
}

/// The backend `choice` selects: the CPU (C through the system compiler); with
/// `cuda_host` the CUDA executor on the host device (the CUDA printer's kernels compiled
/// as host C++ with `backend-cuda`'s emulation); with a GPU description and no
/// `cuda_host`, the CUDA executor on the GPU (NVRTC cubin, the CUDA driver, cuBLAS).
pub(crate) fn backend(options: Choice<'_>) -> Box<dyn plan::Backend> {
    let target = match (options.cuda_host, options.gpu) {
        (true, _) => CudaTarget::Host,
        // Both GPU descriptions (h100, h200) are Hopper, as `crate::gpu_arch` says; an
        // unknown description fails earlier, when it is loaded.
        (false, Some(_)) => CudaTarget::Driver { arch: "sm_90" },
        (false, None) => {
            return Box::new(CpuBackend::new(
                options.cache_dir,
                options.compiler,
                options.threads,
                options.max_while_iterations,
            ))
        }
    };
    let cxx = options.compiler.unwrap_or_else(|| {
        std::env::var("HLOC_CXX")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "c++".into())
    });
    Box::new(CudaBackend::new(
        target,
        options.cache_dir,
        cxx,
        options.threads,
        options.max_while_iterations,
    ))
}

/// The CUDA module of `program`'s kernels for NVRTC (the compile-only GPU path, `hloc
/// compile --target h100|h200`, which prints without running); the printer's refusal
/// (an operation it cannot print) is the error.
pub(crate) fn cuda_module(program: &Program) -> Result<String, CudaError> {
    backend_cuda::module_cu(&program.kernels)
}

/// `source` (the [`cuda_module`] of `program`) compiled by NVRTC for `arch`, with what
/// `ptxas` reports of each kernel; no GPU is needed. Kernels that spill are printed again
/// with launch bounds (`backend_cuda::compile_without_spills`): the module compiled last
/// when it is not `source`.
pub(crate) fn cubin(
    program: &Program,
    source: &str,
    arch: &str,
) -> Result<(Option<String>, Cubin), CudaError> {
    backend_cuda::compile_without_spills(&program.kernels, source, arch)
}

/// Runs `f` (a CPU compilation) telling `listener` of each C compiler process that
/// finishes (`--progress`).
pub(crate) fn reporting_to<T>(listener: Option<CompileListener>, f: impl FnOnce() -> T) -> T {
    backend_cpu::reporting_to(listener, f)
}

/// One in-process communicator per device of `grid`, in device-id order, sharing one
/// rendezvous whose waits end after `timeout`: each device's collectives meet the others'
/// (the SPMD runs of [`crate::run_on_devices`]).
pub(crate) fn communicators(grid: Grid, timeout: Duration) -> Vec<Arc<dyn Communicator>> {
    InProcess::devices(grid.replicas, grid.partitions, timeout)
        .into_iter()
        .map(|d| d as Arc<dyn Communicator>)
        .collect()
}

/// Whether a device's error `message` is the consequence of another device's failure
/// (its communicator ended its wait because a peer failed).
pub(crate) fn is_peer_failure(message: &str) -> bool {
    InProcess::is_peer_failure(message)
}
