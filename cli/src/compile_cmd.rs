//! `hloc compile`: compile a module for this CPU (passes, kernels, C, the system C
//! compiler, the object cache) or for a GPU (`--target h100|h200`: CUDA C and NVRTC, see
//! `compile_gpu.rs`); print statistics and write XLA-named dumps.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};

pub use crate::compile_report::stage_times_text;
use crate::compile_report::{print_stats, write_plan_dumps};

/// What `--stats` prints and the dumps `--dump-to` writes.
pub const FORMATS: &str = "\
--stats prints one `key: value` per line on stdout:
  kernels: N          generated kernels
  library_calls: M    library-call thunks
  compile: X ms       wall time of the whole compilation
  cache: hit|miss     whether the compiled object came from the cache
  buffer_bytes: N     every allocation: parameters, constants, temporaries
  temp_bytes: N       the temporary allocations
  peak_bytes: N       live bytes at the schedule's peak
--dump-to DIR writes module_0000.<name>.before_optimizations.txt, .after_optimizations.txt,
.kernels.c, .thunks.txt, and in XLA's layout .after_optimizations-buffer-assignment.txt and
.after_optimizations-memory-usage-report.txt.
--target h100|h200 compiles for that GPU on any machine (no GPU needed): the GPU emitters
(each kernel's thread map, launch dimensions and operand maps in its leading comment), one
CUDA C module compiled by NVRTC for sm_90 (tools/setup.sh installs NVRTC). --dump-to then
writes .kernels.cu (the module, written before NVRTC runs) and .kernels.txt (per kernel:
launch dimensions, emitter and thread map, registers, shared bytes, stack and spills)
instead of .kernels.c; `cache:` is always `miss` (cubins are not cached yet) and
--time-passes adds `print-cuda` and `nvrtc` instead of the C stages.
--time-passes prints to stderr one `TIME ms  STAGE` line per stage, in the order they ran:
  parse, verify       reading the module
  pass NAME           each pass of the default HLO pipeline (summed over its runs)
  fusion NAME         each pass of the fusion pipeline (fusion passes, then cse and dce)
  codegen             kernels, thunks and buffer assignment
  print-c             the C translation unit
  dump                writing --dump-to's files (only with --dump-to)
  cache-lookup        the C compiler's version and the content hash
  cc                  the system C compiler (only on a cache miss)
  load, constants     loading the object; the constants in their layouts
then `total (cache hit|miss)`: the wall time from parsing to loading.
The object cache is $HLOC_CACHE_DIR, else $XDG_CACHE_HOME/hloc, else ~/.cache/hloc.";

/// Arguments of `hloc compile`.
#[derive(Args)]
pub struct CompileArgs {
    /// The HLO module (text).
    pub file: PathBuf,
    /// The target machine.
    #[arg(long, value_enum, default_value_t = Target::Cpu)]
    pub target: Target,
    /// Write XLA-named dumps into this directory (the C source is written even when the
    /// C compiler fails).
    #[arg(long, value_name = "DIR")]
    pub dump_to: Option<PathBuf>,
    /// Print compilation statistics (see below).
    #[arg(long)]
    pub stats: bool,
    /// Leave out the `compile` and `cache` lines of --stats (for reproducible output).
    #[arg(long)]
    pub no_timing: bool,
    /// Print each stage's wall time to stderr, one line per stage (parse, verify, every
    /// HLO pass, every fusion pass, codegen, C printing, cache lookup, cc, loading), then
    /// the total (see below); stdout is unchanged.
    #[arg(long)]
    pub time_passes: bool,
    /// Most bytes the program's allocations may take together (`buffer_bytes`: parameters,
    /// constants, outputs, temporaries), a number or K/M/G/T (powers of 1024): the memory
    /// planner picks a schedule and GEMM streaming that fit, or stops with an error giving
    /// the least it reached and the largest values live at that program's peak.
    #[arg(long, value_name = "BYTES", value_parser = parse_memory_limit)]
    pub memory_limit: Option<u64>,
    /// Show which stage is running and for how long (CPU target): `auto` on a terminal
    /// only, `always` also when stderr is not a terminal (a `progress: STAGE` line per
    /// stage), `never`; as `hloc run --progress`.
    #[arg(long, value_enum, default_value_t = crate::progress::ProgressMode::Auto)]
    pub progress: crate::progress::ProgressMode,
}

/// Parses `--memory-limit` (as `--max-memory`: bytes, or K/M/G/T).
pub fn parse_memory_limit(text: &str) -> Result<u64, String> {
    hlo_eval::memory::parse_size(text).map_err(|e| e.to_string())
}

/// Compilation targets.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Target {
    /// This machine's CPU (C compiled with the system `cc`).
    Cpu,
    /// An NVIDIA H100 (sm_90): CUDA C compiled by NVRTC.
    H100,
    /// An NVIDIA H200 (sm_90, the H100's chip with HBM3e): CUDA C compiled by NVRTC.
    H200,
}

impl Target {
    /// The GPU description's name, `None` for the CPU.
    pub fn gpu(self) -> Option<&'static str> {
        match self {
            Target::Cpu => None,
            Target::H100 => Some("h100"),
            Target::H200 => Some("h200"),
        }
    }
}

/// Parses and verifies `file` (rendering verifier errors with file:line:column); with
/// `stages`, records `parse` and `verify` there.
pub fn read_module(file: &Path, stages: &mut Vec<(String, Duration)>) -> Result<hlo::Module> {
    let src = crate::source::read(&file.display().to_string())?;
    let t = Instant::now();
    let parsed = crate::source::parse(&src)?;
    crate::source::require_constants(&src, &parsed)?;
    stages.push(("parse".into(), t.elapsed()));
    let t = Instant::now();
    if let Err(errors) = hlo::verifier::verify_parsed(&parsed, &src.text) {
        let shown: Vec<String> = errors.iter().map(|e| e.render(&src.name)).collect();
        bail!("{}", shown.join("\n"));
    }
    stages.push(("verify".into(), t.elapsed()));
    Ok(parsed.module)
}

/// Runs the command.
pub fn run(args: CompileArgs) -> Result<ExitCode> {
    let first = Instant::now();
    let mut stages = Vec::new();
    let module = read_module(&args.file, &mut stages)?;
    if let Some(gpu) = args.target.gpu() {
        let request = crate::compile_gpu::Request {
            gpu,
            dump_to: args.dump_to.as_deref(),
            stats: args.stats,
            no_timing: args.no_timing,
            time_passes: args.time_passes,
            memory_limit: args.memory_limit,
        };
        return crate::compile_gpu::run(&request, &module, stages, first);
    }
    let start = Instant::now();
    let opts = runtime::CompileOptions {
        time_passes: args.time_passes,
        memory_limit: args.memory_limit,
        ..Default::default()
    };
    let mut progress = crate::progress::Progress::new(args.progress);
    let opts = runtime::CompileOptions {
        progress: progress.compile_listener(),
        ..opts
    };
    progress.stage("optimizing and generating kernels");
    let mut plan = runtime::plan(&module, &opts)?;
    let dump_start = Instant::now();
    if let Some(dir) = &args.dump_to {
        write_plan_dumps(dir, &module, &plan, "c")?;
        if args.time_passes {
            plan.timings.push(("dump".into(), dump_start.elapsed()));
        }
    }
    progress.stage(&crate::progress::compiling(plan.program.kernels.len()));
    let exe = runtime::compile_plan(plan, &opts, start)?;
    progress.finish();
    if args.time_passes {
        stages.extend(exe.timings().iter().cloned());
        let text = stage_times_text(&stages, first.elapsed(), exe.stats().cache_hit);
        eprint!("{text}");
    }
    // Kernels the cost model predicts far below the roofline (a dot left to a loop).
    for slow in exe.slow_kernels()? {
        eprintln!("warning: {}", slow.message());
    }
    if args.stats {
        print_stats(exe.stats(), args.no_timing);
    }
    Ok(ExitCode::SUCCESS)
}
