//! The CUDA target as the driver sees it ([`plan::Backend`]): on a GPU, the program's
//! CUDA module compiled by NVRTC (cubin cached by content hash) and loaded through the
//! driver; on this CPU, the same module compiled as host C++ after the emulation header
//! and run by the host device. Either way a [`CudaExecutable`] walks the program, so the
//! executor a GPU runs is the one every cuda-host test runs.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use backend_cpu::reuse::{load_or_build, Loaded};
use plan::{Backend, BackendError, Program, Thunk};

use crate::error::CudaError;
use crate::host::{host_entry, host_unit};
use crate::printer::module_cu;
use crate::run::cubin_cache::cached_cubin;
use crate::run::device::Device;
use crate::run::driver_device::DriverDevice;
use crate::run::executable::CudaExecutable;
use crate::run::host_device::HostDevice;

/// Where a [`CudaBackend`]'s kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CudaTarget {
    /// A GPU through the CUDA driver, kernels compiled for `arch` (`sm_90`).
    Driver {
        /// The compute capability NVRTC compiles for.
        arch: &'static str,
    },
    /// This CPU: the CUDA host emulation.
    Host,
}

/// The CUDA backend.
#[derive(Clone, Debug)]
pub struct CudaBackend {
    /// Where the kernels run.
    pub target: CudaTarget,
    /// The cache directory (cubins and host objects).
    pub cache_dir: PathBuf,
    /// The C++ compiler of the host emulation (host kernels; library calls' scalar
    /// functions on a GPU too).
    pub compiler: String,
    /// Threads of the host device's large launches and GEMMs.
    pub threads: usize,
    /// Most iterations one `while` loop may run.
    pub max_while_iterations: u64,
}

/// Whether `thunks` (nested ones included) hold a step matching `f`.
fn any_thunk(thunks: &[Thunk], f: &dyn Fn(&Thunk) -> bool) -> bool {
    thunks.iter().any(|t| {
        f(t) || match t {
            Thunk::While { cond, body, .. } => any_thunk(cond, f) || any_thunk(body, f),
            Thunk::Conditional { branches, .. } => branches.iter().any(|(b, _)| any_thunk(b, f)),
            Thunk::StreamedGemm { producer, gemm, .. } => f(producer) || f(gemm),
            _ => false,
        }
    })
}

impl CudaBackend {
    /// The backend for `target` with `cache_dir` (else the CPU backend's default),
    /// `compiler` (the host emulation's C++ compiler) and `threads` (else rayon's pool
    /// size).
    pub fn new(
        target: CudaTarget,
        cache_dir: Option<&std::path::Path>,
        compiler: String,
        threads: Option<usize>,
        max_while_iterations: u64,
    ) -> CudaBackend {
        CudaBackend {
            target,
            cache_dir: backend_cpu::cache_dir(cache_dir),
            compiler,
            threads: threads.unwrap_or_else(rayon::current_num_threads).max(1),
            max_while_iterations,
        }
    }

    /// The program's kernels compiled as host C++ with the emulation header and loaded
    /// (through `backend-cpu`'s cache), with whether it was a cache hit.
    fn host_kernels(
        &self,
        program: &Program,
        stages: &mut Vec<(&'static str, Duration)>,
    ) -> Result<(Loaded, bool), BackendError> {
        let unit = host_unit(&program.kernels)?;
        let names: Vec<String> = program
            .kernels
            .iter()
            .map(|k| host_entry(&k.name))
            .collect();
        load_or_build(
            &unit,
            &|| vec![unit.clone()],
            &names,
            &self.cache_dir,
            &self.compiler,
            stages,
        )
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        match self.target {
            CudaTarget::Driver { .. } => "cuda",
            CudaTarget::Host => "cuda-host",
        }
    }

    fn source(&self, program: &Program) -> String {
        let text = match self.target {
            CudaTarget::Driver { .. } => module_cu(&program.kernels),
            CudaTarget::Host => host_unit(&program.kernels),
        };
        // A printer's refusal is reported by `compile`, which prints again.
        text.unwrap_or_else(|e| format!("/* {e} */"))
    }

    fn compile(
        &self,
        program: Arc<Program>,
        source: &str,
        stages: &mut Vec<(&'static str, Duration)>,
    ) -> Result<Box<dyn plan::Executable>, BackendError> {
        let max = self.max_while_iterations;
        let CudaTarget::Driver { arch } = self.target else {
            let (loaded, hit) = self.host_kernels(&program, stages)?;
            let device = Arc::new(HostDevice::new(loaded, self.threads));
            let t = Instant::now();
            let exe = CudaExecutable::new(program, device.clone(), Some(device), max, hit)?;
            stages.push(("constants", t.elapsed()));
            return Ok(Box::new(exe));
        };
        if !crate::run::driver_device::driver_present() {
            return Err(CudaError::NoDriver.into());
        }
        // The module as NVRTC compiles it (the plan's source when it printed it).
        let printed;
        let source = match source.contains("__global__") || program.kernels.is_empty() {
            true => source,
            false => {
                printed = module_cu(&program.kernels)?;
                printed.as_str()
            }
        };
        let (image, hit) = match program.kernels.is_empty() {
            true => (Vec::new(), false),
            false => cached_cubin(&program.kernels, source, arch, &self.cache_dir, stages)?,
        };
        let gemms = any_thunk(&program.thunks, &|t| {
            matches!(t, Thunk::Gemm { .. } | Thunk::StreamedGemm { .. })
        });
        let t = Instant::now();
        let names: Vec<String> = program.kernels.iter().map(|k| k.name.clone()).collect();
        let device: Arc<dyn Device> = Arc::new(DriverDevice::open(&image, &names, gemms)?);
        stages.push(("load", t.elapsed()));
        let library = match any_thunk(&program.thunks, &|t| matches!(t, Thunk::Library { .. })) {
            true => {
                let (loaded, _) = self.host_kernels(&program, stages)?;
                Some(Arc::new(HostDevice::new(loaded, self.threads)))
            }
            false => None,
        };
        let t = Instant::now();
        let exe = CudaExecutable::new(program, device, library, max, hit)?;
        stages.push(("constants", t.elapsed()));
        Ok(Box::new(exe))
    }
}
