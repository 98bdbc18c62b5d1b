//! Backend selection: the [`plan::Backend`] that compiles and runs a module for the given
//! options. The driver ([`crate::compile_plan`], [`crate::Executable`]) sees only the trait
//! objects, so a new target is one more arm here and an implementation in its own crate.

use std::path::Path;

use backend_cpu::CpuBackend;
use backend_cuda::{CudaBackend, CudaTarget};

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
