//! # runtime — the driver: pipelines, backend, compile and run
//!
//! [`compile`] runs the default target-independent pass pipeline of `hlo-transforms`, the
//! CPU lowering and the fusion passes ([`pipeline`]: the fusion passes ask the emitters
//! before they fuse), builds the program with `plan` (one kernel per instruction, fusions
//! included, from `codegen`'s emitters; library calls; loops) and hands it to the backend
//! the options select (`backends`: the CPU's `backend-cpu`, C through the system compiler,
//! or the CUDA host emulation) as a [`plan::Backend`] trait object. [`Executable`] drives
//! the [`plan::Executable`] it returns (prepare, run, outputs, profile) without knowing
//! which backend made it; [`Predictions`] and [`Profile`] set the cost model beside
//! measured times.
//!
//! ```no_run
//! let m = hlo::parse_module("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}").unwrap();
//! let exe = runtime::compile(&m, &runtime::CompileOptions::default()).unwrap();
//! println!("{}", exe.stats().to_text());
//! ```

mod backends;
mod boundary;
mod bytes;
mod error;
mod executable;
mod gpu;
mod multi_device;
pub mod pipeline;
mod predict;
mod predict_gemm;
mod predict_stream;
mod profile;
mod roofline;
mod roofline_bound;
mod timing;
mod work;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hlo::pass::{Pass, PassContext, PassStats};
use hlo::Module;
use plan::Program;

#[cfg(feature = "mpi")]
pub use backends::MpiDevice;
pub use backends::{cache_dir, nvrtc_present, CompileListener, Cubin, CudaError, KernelResources};
pub use boundary::FlattenTupleParameters;
pub use error::RuntimeError;
pub use gpu::{compile_gpu_plan, gpu_arch, kernels_text, spilling_kernels, GpuBuild};
pub use multi_device::{
    device_grid, reference_reports_on_devices, run_on_devices, run_on_devices_repeated,
};
pub use plan::{BackendError, OutputBuffer, OwnedOutput, Prepared, RawOutputs};
pub use predict::Predictions;
pub use profile::{chrome_trace, json as profile_json, Profile, ProfileTable, Summary};
pub use roofline::{slow_kernel, slow_kernels, SlowKernel};
pub use timing::{check_reference, reference_reports, run_repeated, Timing};
pub use work::{ThunkWork, Work};

/// Options of [`compile`].
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// The object cache directory (default: see [`cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Run the default HLO pass pipeline first (default true).
    pub run_passes: bool,
    /// Keep every layout the module writes (default false: a module before XLA's layout
    /// assignment has its layouts chosen after the default pipeline,
    /// [`hlo_transforms::ChooseLayouts`], as XLA chooses them; a module XLA laid out keeps
    /// its layouts either way). Tests of the code generator on arbitrary layouts set it.
    pub keep_layouts: bool,
    /// Then fuse for the `cpu` device description (default true; [`pipeline::fusion_pipeline`]).
    pub fuse: bool,
    /// Threads for large kernels (default: rayon's pool size).
    pub threads: Option<usize>,
    /// Most iterations one `while` loop may run before the run fails.
    pub max_while_iterations: u64,
    /// The C compiler command (default: `$HLOC_CC`, else `cc`; with `cuda_host`,
    /// `$HLOC_CXX`, else `c++`).
    pub compiler: Option<String>,
    /// Run the kernels as CUDA: each emitted block a thread of a block of 128, printed as
    /// CUDA C and compiled as host C++ with `backend-cuda`'s emulation (`--backend
    /// cuda-host`), so the CUDA printer and the threading are tested on this CPU.
    pub cuda_host: bool,
    /// The GPU description the kernels are emitted for (`h100`, `h200`: the GPU emitters
    /// with their thread maps, fusion on that description); `None` for the CPU, or `h100`
    /// with [`CompileOptions::cuda_host`].
    pub gpu: Option<String>,
    /// Most bytes the executable may allocate (default: the evaluator's limit, half the
    /// available memory).
    pub size_limit: Option<u64>,
    /// Record each stage's wall time in [`Stats::timings`] (`--time-passes`; default
    /// false): `pass NAME` for the entry boundary's pass
    /// ([`pipeline::entry_boundary_pipeline`]) and every pass of the default pipeline and
    /// the CPU lowering, and `fusion NAME` for
    /// every pass of the fusion pipeline (each summed over its runs, in order of first
    /// run), then `codegen` (kernels and thunks), `print-c`, `cache-lookup` (the compiler's
    /// version and the content hash), `cc` (only on a cache miss), `load` and `constants`.
    pub time_passes: bool,
    /// Smallest GEMM left-hand side streamed block by block from the kernel producing it
    /// (default [`plan::stream::STREAM_MIN_BYTES`]; tests lower it to run
    /// streaming on small shapes).
    pub stream_min_bytes: Option<u64>,
    /// Most bytes the program's allocations may take (`--memory-limit`): the planner then
    /// picks a schedule and streaming that fit, or compiling fails with
    /// [`RuntimeError::MemoryLimit`] ([`plan::memory::limit`]).
    pub memory_limit: Option<u64>,
    /// Told `(kernels compiled, kernels in all)` as each C compiler process finishes
    /// (`--progress`; default none).
    pub progress: Option<CompileListener>,
}

impl CompileOptions {
    /// The options that select and configure the backend.
    fn backend_choice(&self) -> backends::Choice<'_> {
        backends::Choice {
            cuda_host: self.cuda_host,
            gpu: self.gpu.as_deref(),
            cache_dir: self.cache_dir.as_deref(),
            compiler: self.compiler.clone(),
            threads: self.threads,
            max_while_iterations: self.max_while_iterations,
        }
    }
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            cache_dir: None,
            run_passes: true,
            keep_layouts: false,
            fuse: true,
            threads: None,
            max_while_iterations: hlo_eval::DEFAULT_WHILE_LIMIT,
            compiler: None,
            cuda_host: false,
            gpu: None,
            size_limit: None,
            time_passes: false,
            stream_min_bytes: None,
            memory_limit: None,
            progress: None,
        }
    }
}

/// Figures of one compilation (`hloc compile --stats`).
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Generated kernels.
    pub kernels: usize,
    /// Library-call thunks.
    pub library_calls: usize,
    /// Wall time of the whole compilation, in milliseconds.
    pub compile_ms: f64,
    /// Whether the compiled object came from the cache.
    pub cache_hit: bool,
    /// Bytes of every allocation: parameters, constants, temporaries.
    pub buffer_bytes: u64,
    /// Bytes of the temporary allocations.
    pub temp_bytes: u64,
    /// Live bytes at the schedule's peak.
    pub peak_bytes: u64,
    /// Wall time of each stage, in order, when [`CompileOptions::time_passes`] is set
    /// (empty otherwise); not part of [`Stats::to_text`].
    pub timings: Vec<(String, Duration)>,
}

impl Stats {
    /// `cache: hit` or `cache: miss`'s value.
    pub fn cache_word(&self) -> &'static str {
        if self.cache_hit {
            "hit"
        } else {
            "miss"
        }
    }

    /// The `--stats` text: one `key: value` per line.
    pub fn to_text(&self) -> String {
        format!(
            "kernels: {}\nlibrary_calls: {}\ncompile: {:.1} ms\ncache: {}\nbuffer_bytes: {}\ntemp_bytes: {}\npeak_bytes: {}\n",
            self.kernels,
            self.library_calls,
            self.compile_ms,
            self.cache_word(),
            self.buffer_bytes,
            self.temp_bytes,
            self.peak_bytes
        )
    }
}

/// The optimized module and its plan and C source, before anything is compiled (for dumps
/// and tests).
#[derive(Clone, Debug)]
pub struct Plan {
    /// The module after the pass pipeline.
    pub module: Module,
    /// The thunks, kernels and buffers (shared with the backend's executable).
    pub program: Arc<Program>,
    /// The C translation unit.
    pub source: String,
    /// Wall time of each stage so far when [`CompileOptions::time_passes`] is set (see
    /// there); [`compile_plan`] moves them into [`Stats::timings`].
    pub timings: Vec<(String, Duration)>,
}

/// Stage times of one compilation: recorded only when `on`; a stage timed twice (a pass
/// that runs in several pipelines) is one entry with the sum.
struct Stages {
    on: bool,
    list: Vec<(String, Duration)>,
}

impl Stages {
    fn add(&mut self, name: &str, time: Duration) {
        if !self.on {
            return;
        }
        match self.list.iter_mut().find(|(n, _)| n == name) {
            Some((_, t)) => *t += time,
            None => self.list.push((name.to_string(), time)),
        }
    }

    /// Every pass of `stats` as `PREFIX NAME`.
    fn add_passes(&mut self, prefix: &str, stats: &PassStats) {
        for e in stats.entries() {
            self.add(&format!("{prefix} {}", e.name), e.time);
        }
    }

    /// Runs `f`, recording its time as `name`.
    fn time<T>(&mut self, name: &str, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let r = f();
        self.add(name, t.elapsed());
        r
    }
}

/// Runs the passes and code generation (no C compiler involved).
pub fn plan(module: &Module, options: &CompileOptions) -> Result<Plan, RuntimeError> {
    let mut stages = Stages {
        on: options.time_passes,
        list: Vec::new(),
    };
    let mut m = module.clone();
    {
        let mut ctx = PassContext::new();
        pipeline::entry_boundary_pipeline()
            .run_in(&mut m, &mut ctx)
            .map_err(|e| RuntimeError::Pass(e.to_string()))?;
        stages.add_passes("pass", ctx.stats());
    }
    if options.run_passes {
        let mut ctx = PassContext::new();
        hlo_transforms::default_pipeline()
            .run_in(&mut m, &mut ctx)
            .map_err(|e| RuntimeError::Pass(e.to_string()))?;
        stages.add_passes("pass", ctx.stats());
    }
    if !options.keep_layouts {
        let mut ctx = PassContext::new();
        hlo::pass::Pipeline::new("layouts")
            .with(hlo_transforms::ChooseLayouts)
            .run_in(&mut m, &mut ctx)
            .map_err(|e| RuntimeError::Pass(e.to_string()))?;
        stages.add_passes("pass", ctx.stats());
    }
    let gpu = gpu_device(options)?;
    let target = match &gpu {
        Some(d) => codegen::EmitTarget::gpu(d.clone()),
        None => codegen::EmitTarget::cpu(),
    };
    {
        let mut ctx = PassContext::new();
        pipeline::cpu_lowering_pipeline(options.fuse, &target)
            .run_in(&mut m, &mut ctx)
            .map_err(|e| RuntimeError::Pass(e.to_string()))?;
        stages.add_passes("pass", ctx.stats());
    }
    if options.fuse {
        // hloc's own emitters' reach, not XLA:CPU's rules (those keep `hloc fuse --target
        // cpu`'s output compilable by XLA:CPU).
        let fusion_device = match &gpu {
            Some(d) => d.clone(),
            None => device::load("cpu").map_err(|e| RuntimeError::Device(e.to_string()))?,
        };
        let mut ctx = PassContext::new();
        pipeline::hloc_fusion_pipeline(&fusion_device, &target)
            .run_in(&mut m, &mut ctx)
            .map_err(|e| RuntimeError::Pass(e.to_string()))?;
        stages.add_passes("fusion", ctx.stats());
    }
    let mut build = plan::BuildOptions {
        target,
        ..plan::BuildOptions::default()
    };
    if let Some(threads) = options.threads {
        build.workers = threads;
    }
    if let Some(bytes) = options.stream_min_bytes {
        build.stream_min_bytes = bytes;
    }
    let program = match options.memory_limit {
        Some(limit) => stages.time("codegen", || {
            plan::memory::limit::build_within(&m, &build, limit)
        })??,
        None => stages.time("codegen", || plan::build_program_with(&m, &build))?,
    };
    // Every allocation is live during a run: check their sum against the machine's
    // memory before anything is allocated.
    let limit = options
        .size_limit
        .unwrap_or_else(hlo_eval::default_size_limit);
    if program.buffer_bytes() > limit {
        return Err(RuntimeError::TooLarge {
            bytes: program.buffer_bytes(),
            limit,
        });
    }
    let source = if gpu.is_some() && !options.cuda_host {
        stages.time("print-cuda", || backends::cuda_module(&program))?
    } else {
        stages.time("print-c", || {
            backends::backend(options.backend_choice()).source(&program)
        })
    };
    Ok(Plan {
        module: m,
        program: Arc::new(program),
        source,
        timings: stages.list,
    })
}

/// The GPU description `options` compile for: [`CompileOptions::gpu`], else `h100` for
/// the CUDA host emulation, else none (the CPU).
fn gpu_device(options: &CompileOptions) -> Result<Option<device::Device>, RuntimeError> {
    let name = match (&options.gpu, options.cuda_host) {
        (Some(name), _) => name.as_str(),
        (None, true) => "h100",
        (None, false) => return Ok(None),
    };
    let d = device::load(name).map_err(|e| RuntimeError::Device(e.to_string()))?;
    if d.kind != device::DeviceKind::Gpu {
        return Err(RuntimeError::Device(format!(
            "`{name}` is not a GPU description"
        )));
    }
    Ok(Some(d))
}

/// A compiled module, ready to run.
pub struct Executable {
    plan: Plan,
    exe: Box<dyn plan::Executable>,
    stats: Stats,
}

impl std::fmt::Debug for Executable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Executable({}, {:?})",
            self.plan.program.name, self.stats
        )
    }
}

/// Compiles `module` for the backend `options` select (this CPU unless
/// [`CompileOptions::cuda_host`]).
pub fn compile(module: &Module, options: &CompileOptions) -> Result<Executable, RuntimeError> {
    let start = Instant::now();
    let plan = plan(module, options)?;
    compile_plan(plan, options, start)
}

/// Compiles a [`plan`]ned module on the backend `options` select (for the CPU: C
/// compiler, cache, loading); `start` is when the compilation began, for
/// [`Stats::compile_ms`].
pub fn compile_plan(
    mut plan: Plan,
    options: &CompileOptions,
    start: Instant,
) -> Result<Executable, RuntimeError> {
    let mut stages = Stages {
        on: options.time_passes,
        list: std::mem::take(&mut plan.timings),
    };
    let mut backend_times = Vec::new();
    let exe = backends::reporting_to(options.progress.clone(), || {
        backends::backend(options.backend_choice()).compile(
            plan.program.clone(),
            &plan.source,
            &mut backend_times,
        )
    })?;
    for (name, time) in backend_times {
        stages.add(name, time);
    }
    let p = &plan.program;
    let stats = Stats {
        kernels: p.kernels.len(),
        library_calls: p.library_calls(),
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
        cache_hit: exe.cache_hit(),
        buffer_bytes: p.buffer_bytes(),
        temp_bytes: p.temp_bytes(),
        peak_bytes: p.peak_bytes,
        timings: stages.list,
    };
    Ok(Executable { plan, exe, stats })
}

impl Executable {
    /// Compilation figures.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Wall time of each compilation stage, in order ([`CompileOptions::time_passes`];
    /// empty when it was not set).
    pub fn timings(&self) -> &[(String, Duration)] {
        &self.stats.timings
    }

    /// The optimized module, program and C source.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
}
