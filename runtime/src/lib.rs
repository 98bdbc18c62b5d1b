//! # runtime — compile HLO for this CPU and run it
//!
//! [`compile`] runs the default target-independent pass pipeline of `hlo-transforms`,
//! generates one kernel per instruction (fusions included) with `codegen`, prints them as
//! C translation units, compiles them in parallel with the system `cc` (`-O2
//! -ftree-vectorize -march=native -fno-math-errno`, never `-ffast-math`), caches the
//! shared object by content hash and loads it. [`Executable::run`] executes the thunk sequence on a rayon pool.
//!
//! ```no_run
//! let m = hlo::parse_module("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}").unwrap();
//! let exe = runtime::compile(&m, &runtime::CompileOptions::default()).unwrap();
//! println!("{}", exe.stats().to_text());
//! ```

mod error;
mod executable;
pub mod pipeline;
mod predict;
mod profile;
mod timing;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use backend_cpu::{CpuBackend, CpuExecutable};
use hlo::pass::{Pass, PassContext, PassStats};
use hlo::Module;
use plan::{Backend, Program};

pub use backend_cpu::{cache_dir, BackendError, Prepared, RawOutputs};
pub use error::RuntimeError;
pub use predict::Predictions;
pub use profile::{Profile, ProfileTable, Summary};
pub use timing::{check_reference, run_repeated, Timing};

/// Options of [`compile`].
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// The object cache directory (default: see [`cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Run the default HLO pass pipeline first (default true).
    pub run_passes: bool,
    /// Then fuse for the `cpu` device description (default true; [`pipeline::fusion_pipeline`]).
    pub fuse: bool,
    /// Threads for large kernels (default: rayon's pool size).
    pub threads: Option<usize>,
    /// Most iterations one `while` loop may run before the run fails.
    pub max_while_iterations: u64,
    /// The C compiler command (default: `$HLOC_CC`, else `cc`).
    pub compiler: Option<String>,
    /// Most bytes the executable may allocate (default: the evaluator's limit, half the
    /// available memory).
    pub size_limit: Option<u64>,
    /// Record each stage's wall time in [`Stats::timings`] (`--time-passes`; default
    /// false): `pass NAME` for every pass of the default pipeline and `fusion NAME` for
    /// every pass of the fusion pipeline (each summed over its runs, in order of first
    /// run), then `codegen` (kernels and thunks), `print-c`, `cache-lookup` (the compiler's
    /// version and the content hash), `cc` (only on a cache miss), `load` and `constants`.
    pub time_passes: bool,
    /// Smallest GEMM left-hand side streamed block by block from the kernel producing it
    /// (default [`plan::stream::STREAM_MIN_BYTES`]; tests lower it to run
    /// streaming on small shapes).
    pub stream_min_bytes: Option<u64>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            cache_dir: None,
            run_passes: true,
            fuse: true,
            threads: None,
            max_while_iterations: hlo_eval::DEFAULT_WHILE_LIMIT,
            compiler: None,
            size_limit: None,
            time_passes: false,
            stream_min_bytes: None,
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

/// Stage times of one compilation: recorded only when `on`; a stage timed twice (code
/// generation retried unfused) is one entry with the sum.
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
    if options.run_passes {
        let mut ctx = PassContext::new();
        hlo_transforms::default_pipeline()
            .run_in(&mut m, &mut ctx)
            .map_err(|e| RuntimeError::Pass(e.to_string()))?;
        stages.add_passes("pass", ctx.stats());
    }
    if options.fuse {
        // For the CPU: large convolutions become im2col patches and one GEMM.
        let mut ctx = PassContext::new();
        hlo::pass::Pipeline::new("cpu")
            .with(hlo_transforms::ConvToGemm::default())
            .run_in(&mut m, &mut ctx)
            .map_err(|e| RuntimeError::Pass(e.to_string()))?;
        stages.add_passes("pass", ctx.stats());
    }
    {
        // Dots inside the module's own fusions (output fusions as XLA dumps them) run as
        // library GEMMs; their fusions keep the epilogue. Every other dot becomes one, with
        // the transposes and converts that make it so before fusion.
        let mut ctx = PassContext::new();
        hlo::pass::Pipeline::new("cpu-gemms")
            .with(plan::OutlineFusedGemms)
            .with(plan::DotsToGemms)
            .with(plan::MatchBoundaryLayouts)
            .run_in(&mut m, &mut ctx)
            .map_err(|e| RuntimeError::Pass(e.to_string()))?;
        stages.add_passes("pass", ctx.stats());
    }
    let mut build = plan::BuildOptions::default();
    if let Some(threads) = options.threads {
        build.workers = threads;
    }
    if let Some(bytes) = options.stream_min_bytes {
        build.stream_min_bytes = bytes;
    }
    let build_program = |m: &Module| plan::build_program_with(m, &build);
    let mut attempt = 0;
    let program = loop {
        attempt += 1;
        let mut program = None;
        if options.fuse {
            let mut cpu = device::load("cpu").map_err(|e| RuntimeError::Pass(e.to_string()))?;
            // hloc's own emitter generates every fusion the cost model wants: the rules
            // that keep `hloc fuse --target cpu`'s output compilable by XLA:CPU do not
            // bind it.
            cpu.kernel.xla_cpu_fusions = false;
            let mut fused = m.clone();
            let mut ctx = PassContext::new();
            pipeline::fusion_pipeline(&cpu)
                .run_in(&mut fused, &mut ctx)
                .map_err(|e| RuntimeError::Pass(e.to_string()))?;
            stages.add_passes("fusion", ctx.stats());
            // The fusion passes may form a fusion no emitter generates yet (their rules
            // and the emitters' reach are not one table yet): that fusion runs unfused,
            // the others stay; where the failing instruction is no fusion, the whole
            // module runs unfused.
            for _ in 0..MAX_UNFUSED_RETRIES {
                match stages.time("codegen", || build_program(&fused)) {
                    Ok(p) => {
                        program = Some(p);
                        m = fused;
                        break;
                    }
                    Err(codegen::CodegenError::Unsupported { op, instr, reason }) => {
                        log::info!(
                            target: "runtime",
                            "unfusing `{instr}`: it needs `{op}`, which its emitter lacks ({reason})"
                        );
                        if !unfuse(&mut fused, Some(&instr))? {
                            log::info!(target: "runtime", "running the module unfused");
                            break;
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let built = match program {
            Some(p) => Ok(p),
            None => stages.time("codegen", || build_program(&m)),
        };
        match built {
            Ok(p) => break p,
            // A fusion the module came with (`hloc fuse` or XLA wrote it) that no emitter
            // generates: its instructions run as if never fused, fused again by our rules.
            Err(codegen::CodegenError::Unsupported { op, instr, reason })
                if attempt == 1 && has_fusions(&m) =>
            {
                log::info!(
                    target: "runtime",
                    "unfusing the module's fusions: `{instr}` needs `{op}`, which its emitter lacks ({reason})"
                );
                unfuse(&mut m, None)?;
            }
            Err(e) => return Err(e.into()),
        }
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
    let source = stages.time("print-c", || cpu_backend(options).source(&program));
    Ok(Plan {
        module: m,
        program: Arc::new(program),
        source,
        timings: stages.list,
    })
}

/// Whether any computation of `m` holds a fusion instruction.
fn has_fusions(m: &Module) -> bool {
    m.computations().any(|(_, c)| {
        c.instructions()
            .any(|(_, i)| i.opcode() == hlo::Opcode::Fusion)
    })
}

/// Most fusions that code generation may give back one at a time before the module runs
/// unfused as a whole.
const MAX_UNFUSED_RETRIES: usize = 16;

/// Replaces every fusion instruction of `m` (or only the one named `only`) by the
/// instructions of its fused computation (as calls, then inlined), and makes the dots they
/// held library GEMMs. Returns whether any fusion was replaced.
fn unfuse(m: &mut Module, only: Option<&str>) -> Result<bool, RuntimeError> {
    use hlo::attrs::{AttrName, AttrValue};
    let mut any = false;
    for ci in 0..m.computations.len() {
        let ids: Vec<_> = m.computations[ci]
            .instructions()
            .filter(|(_, i)| i.opcode() == hlo::Opcode::Fusion)
            .filter(|(_, i)| only.is_none_or(|name| i.name() == name))
            .map(|(id, _)| id)
            .collect();
        any |= !ids.is_empty();
        for id in ids {
            let i = m.computations[ci].instr_mut(id);
            let Some(callee) = i.calls() else { continue };
            i.opcode = hlo::Opcode::Call;
            i.attrs.retain(|a| {
                !matches!(
                    a.name,
                    AttrName::Calls | AttrName::Kind | AttrName::BackendConfig
                )
            });
            i.set_attr(AttrName::ToApply, AttrValue::Computation(callee));
        }
    }
    let mut ctx = PassContext::new();
    hlo::pass::Pipeline::new("unfuse")
        .with(hlo_transforms::CallInliner)
        .with(plan::DotsToGemms)
        .run_in(m, &mut ctx)
        .map_err(|e| RuntimeError::Pass(e.to_string()))?;
    Ok(any)
}

/// A compiled module, ready to run.
pub struct Executable {
    plan: Plan,
    cpu: CpuExecutable,
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

/// Compiles `module` for this CPU.
pub fn compile(module: &Module, options: &CompileOptions) -> Result<Executable, RuntimeError> {
    let start = Instant::now();
    let plan = plan(module, options)?;
    compile_plan(plan, options, start)
}

/// The CPU backend as `options` configure it.
fn cpu_backend(options: &CompileOptions) -> CpuBackend {
    CpuBackend::new(
        options.cache_dir.as_deref(),
        options.compiler.clone(),
        options.threads,
        options.max_while_iterations,
    )
}

/// Compiles a [`plan`]ned module (C compiler, cache, loading); `start` is when the
/// compilation began, for [`Stats::compile_ms`].
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
    let cpu =
        cpu_backend(options).compile(plan.program.clone(), &plan.source, &mut backend_times)?;
    for (name, time) in backend_times {
        stages.add(name, time);
    }
    let p = &plan.program;
    let stats = Stats {
        kernels: p.kernels.len(),
        library_calls: p.library_calls(),
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
        cache_hit: cpu.cache_hit(),
        buffer_bytes: p.buffer_bytes(),
        temp_bytes: p.temp_bytes(),
        peak_bytes: p.peak_bytes,
        timings: stages.list,
    };
    Ok(Executable { plan, cpu, stats })
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
