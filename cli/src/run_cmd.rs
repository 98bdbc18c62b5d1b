//! `hloc run`: parse a module, evaluate it on given or random inputs, summarize and save
//! the outputs.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use clap::{Args, ValueEnum};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{Literal, Module};
use hlo_eval::memory::{self, MAX_MEMORY_ENV};
use hlo_eval::npy::{adapt_to, read_npy_from, read_npz_from, write_npz_to, NpyError};
use hlo_eval::report::OutputReport;
use hlo_eval::{random::random_literal, EvalError, Evaluator};
use runtime::ProfileTable;

use crate::progress::{Progress, ProgressMode};
use crate::timeout::{TimeLimit, Watchdog, TIMEOUT_ENV};

/// Arguments of `hloc run`.
#[derive(Args)]
pub struct RunArgs {
    /// The HLO module (text).
    pub file: PathBuf,
    /// Inputs: an .npz with keys in0, in1, ... in parameter order (or arr_0, arr_1, ... as
    /// numpy.savez names unnamed arrays, or out0, out1, ... so that one run's --outputs
    /// feeds the next), or an .npy for a single-parameter module. bf16 travels as uint16 bit patterns, f8 as uint8.
    /// A tuple-shaped parameter's elements are keys in1.0, in1.1, ... (nested: in1.0.2).
    /// Without it, inputs are random (floats uniform in [-1, 1), f8e8m0fnu scales 2^k for k
    /// in [-2, 2], signed ints in [-10, 10], unsigned ints in [0, 20], pred a fair coin).
    #[arg(long, value_name = "PATH")]
    pub inputs: Option<PathBuf>,
    /// Write the outputs to this .npz (keys out0, out1, ... in flattened tuple order).
    #[arg(long, value_name = "PATH")]
    pub outputs: Option<PathBuf>,
    /// Run on N devices in this process (issue 35): a module already partitioned for N
    /// devices (`num_partitions` x `replica_count` = N, as XLA's per-device modules after
    /// its SPMD partitioner), each device a thread meeting the others at every
    /// collective. --inputs then holds every device's arguments as in<i>.dev<k>
    /// (parameter i of device k; a tuple's elements in<i>.dev<k>.<j>), random per device
    /// without it; the outputs are printed and written as out<i>.dev<k>, --check-reference
    /// compares them with the N-device reference evaluator's, --expect with the
    /// out<i>.dev<k> of its npz (XLA's, as tools/spmd_corpus.py records them; such keys in
    /// the --inputs file are not reported unused), --repeat times the whole N-device step.
    /// A partitioned module run without --devices is an error.
    #[arg(long, value_name = "N")]
    pub devices: Option<usize>,
    /// With --devices N: how the devices exchange data at collectives. `inprocess` (the
    /// default): N threads of this process. `mpi`: this process is one device of an MPI
    /// job started as `mpirun -np N hloc run FILE --devices N --collectives mpi ...`
    /// (device k = rank k; an hloc built with `--features mpi`): every rank reads the
    /// module and --inputs (the same path on every rank) and keeps its own device's piece;
    /// rank 0 gathers the outputs and alone prints, writes and checks them.
    #[arg(long, value_enum, default_value_t = Collectives::Inprocess)]
    pub collectives: Collectives,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Which backend runs the module: `cpu` compiles it for this machine (the default;
    /// every corpus program runs compiled), `reference` interprets it with the evaluator.
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    pub backend: Backend,
    /// Do not print the wall time (for reproducible output): the `time: X ms` line and, on
    /// the compiled backends, the next one, `time split: compile X ms (cache hit|miss), run
    /// Y ms`.
    #[arg(long)]
    pub no_timing: bool,
    /// Stop with an error when one `while` loop runs more iterations than this (a program
    /// may loop forever on some inputs, e.g. random ones).
    #[arg(long, value_name = "N", default_value_t = hlo_eval::DEFAULT_WHILE_LIMIT)]
    pub max_while_iterations: u64,
    /// The memory limit: all inputs together (read or random), and then every buffer the
    /// compiled executable allocates together (`cpu`), or every value the evaluator holds
    /// at once, inputs included (`reference`). A number of bytes or K/M/G/T (powers of 1024), e.g. 8G. Without it,
    /// the HLOC_MAX_MEMORY environment variable (same syntax), else half of the machine's
    /// available memory (4G where that is unknown). Anything larger stops with an error
    /// before it is allocated.
    #[arg(long, value_name = "SIZE", value_parser = parse_max_memory)]
    pub max_memory: Option<u64>,
    /// Compiled backend only: run N more times after one warm-up and print, after the
    /// outputs, exactly one line `time: median X ms, min Y ms over N runs; compile Z ms
    /// (cache hit|miss)` (compile time excluded from the run times).
    #[arg(long, value_name = "N")]
    pub repeat: Option<usize>,
    /// Also run the reference evaluator on the same inputs and compare every output with
    /// the documented per-type tolerance (hlo_eval::tolerance) at the precision the value
    /// was last rounded to (an f32 result converted to f64 is checked as f32). On success
    /// one line `check-reference: N outputs match (max abs error X, max rel error Y)`; else
    /// every differing output on stderr with its count of differing elements, largest
    /// errors and first differing index, and exit code 1 (the outputs are still printed
    /// and written). Infinity against NaN (an overflow that a fused multiply-add keeps
    /// exact) is a note, not a difference.
    #[arg(long)]
    pub check_reference: bool,
    /// Compare the outputs with the arrays of this .npz (keys out0, out1, ... as
    /// `--outputs` writes them, or arr_0, ... as numpy.savez names them; bf16 as uint16
    /// bits), with the same tolerance as --check-reference, and print one line per output:
    /// `expect: outN: SHAPE ok (max abs error X, max rel error Y; tolerance ...)` or
    /// `... DIFFERS in K of N elements (...); first at [i,j]: got A, expected B`. Exit
    /// code 1 when any output differs (the outputs are still written).
    #[arg(long, value_name = "PATH")]
    pub expect: Option<PathBuf>,
    /// Compiled backend only: print each compilation stage's wall time to stderr, one
    /// `TIME ms  STAGE` line per stage (parse, verify, `pass NAME` per HLO pass, `fusion
    /// NAME` per fusion pass, codegen, print-c, cache-lookup, cc on a cache miss, load,
    /// constants), then `total (cache hit|miss)`, as `hloc compile --time-passes` does;
    /// stdout is unchanged.
    #[arg(long)]
    pub time_passes: bool,
    /// Compiled backend only: print to stderr where the run's time goes, per thunk
    /// (kernel, GEMM, library call, copy; the names `hloc compile --dump-to` uses in
    /// `thunks.txt`), slowest first: milliseconds per run, share of the total and calls per
    /// run, averaged over the `--repeat` runs (or the one run), then the fusion cost
    /// model's prediction for the thunk on the `cpu` device description (`model ms`, per
    /// run; `-` where the model has no figure, e.g. a copy) and `model/measured`, the
    /// rates reached (`GFLOP/s`: flops counted from the HLO, a dot or convolution 2·M·N·K,
    /// elementwise arithmetic one per element, `-` where none are counted; `GB/s`: the
    /// bytes of the buffers the thunk reads and writes) and the share of the roofline
    /// reached (`roof %`: the thunk's time at the `cpu` description's roofline over its
    /// measured time; the roofline is its flops at the library GEMM's rate of both cores
    /// for a GEMM or a kernel with a dot or convolution, at the vector rate for other
    /// kernels, or its bytes at the bandwidth of the level they fit in, whichever is
    /// longer; a sort, FFT or LAPACK call its modelled work), the label and in brackets the
    /// `op_name` metadata of the instructions it runs (JAX's `jit(f)/.../dot_general`:
    /// the user's code; the first three, `+N` more); the last line is the geometric mean
    /// of model/measured over the thunks with both figures and the share of the time they
    /// cover (all thunks, then generated kernels only); stdout is unchanged.
    #[arg(long)]
    pub profile: bool,
    /// Compiled backends: the `--profile` figures also as JSON in PATH, for tools: per run
    /// and slowest first, `{"runs", "total_ms", "thunks": [{"label", "ms", "share",
    /// "calls", "model_ms", "model_over_measured", "flops", "bytes", "gflops_per_s",
    /// "gb_per_s", "roofline_ms", "roofline_share", "op_names"}]}` (`flops` and `bytes`
    /// per call, `roofline_ms` per run, `roofline_share` in percent; `null` where there is
    /// no figure). Without `--profile` the table is not printed.
    #[arg(long, value_name = "PATH")]
    pub profile_json: Option<std::path::PathBuf>,
    /// Compiled backends: every thunk call of the timed runs (the `--repeat` runs, else
    /// the one run) as a Chrome trace in PATH, for chrome://tracing or
    /// https://ui.perfetto.dev: one event per call with its start and duration, named as
    /// in `--profile`, with the call's flops, bytes and `op_name`s as arguments. A line on
    /// stderr says how many calls it holds. Without `--profile` the table is not printed.
    #[arg(long, value_name = "PATH")]
    pub trace: Option<std::path::PathBuf>,
    /// Show which stage is running (compiling, running, checking) and for how long:
    /// `auto` on a terminal only (a status line redrawn in place and erased at the end),
    /// `always` also when stderr is not a terminal (then a `progress: STAGE` line per
    /// stage), `never`.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
    /// Stop the whole run (parsing, compiling, running, `--check-reference`) with an error
    /// and exit code 2 once it has taken this long, on every backend: seconds (`30`,
    /// `0.5`) or `500ms`, `90s`, `2m`, `1h`. Nothing is printed or written for a stopped
    /// run. Without it, the HLOC_TIMEOUT environment variable (same syntax), else no limit.
    /// (`--max-while-iterations` bounds each loop; this bounds the run.)
    #[arg(long, value_name = "SECONDS", value_parser = crate::timeout::parse_seconds)]
    pub timeout: Option<std::time::Duration>,
    /// Compiled backends only: most bytes the program's allocations may take together, as
    /// `hloc compile --memory-limit` (the planner picks a schedule and streaming that fit,
    /// or stops with an error giving the least it reached).
    #[arg(long, value_name = "BYTES", value_parser = crate::compile_cmd::parse_memory_limit)]
    pub memory_limit: Option<u64>,
}

/// Parses `--max-memory`.
fn parse_max_memory(text: &str) -> Result<u64, String> {
    memory::parse_size(text).map_err(|e| e.to_string())
}

/// The size limit of a run and where it came from (for the error that names it).
struct Limit {
    bytes: u64,
    source: String,
}

impl Limit {
    /// `--max-memory` if given, else `HLOC_MAX_MEMORY` if set (`env` is its value), else
    /// the default.
    fn resolve(flag: Option<u64>, env: Result<String, std::env::VarError>) -> Result<Limit> {
        if let Some(bytes) = flag {
            return Ok(Limit {
                bytes,
                source: "set by --max-memory".into(),
            });
        }
        match env {
            Ok(text) => {
                let bytes =
                    memory::parse_size(&text).map_err(|e| anyhow!("{MAX_MEMORY_ENV}: {e}"))?;
                Ok(Limit {
                    bytes,
                    source: format!("set by {MAX_MEMORY_ENV}"),
                })
            }
            Err(std::env::VarError::NotPresent) => Ok(Limit {
                bytes: memory::default_size_limit(),
                source: memory::default_size_limit_source().into(),
            }),
            Err(std::env::VarError::NotUnicode(_)) => {
                bail!("{MAX_MEMORY_ENV} is not valid text")
            }
        }
    }

    /// How to raise the limit, appended to a too-large error.
    fn hint(&self) -> String {
        format!(
            "the limit is {}; raise it with --max-memory SIZE or {MAX_MEMORY_ENV}=SIZE (bytes \
             or K/M/G/T, e.g. 8G)",
            self.source
        )
    }

    /// An evaluation error, with the hint when it is about the limit.
    fn eval_error(&self, e: EvalError) -> anyhow::Error {
        match e {
            EvalError::TooLarge { .. } | EvalError::LiveTooLarge { .. } => {
                anyhow!("{e}; {}", self.hint())
            }
            e => e.into(),
        }
    }

    /// A compiled-backend error, with the hint when it is about the limit.
    fn runtime_error(&self, e: runtime::RuntimeError) -> anyhow::Error {
        match e {
            runtime::RuntimeError::TooLarge { .. } => anyhow!("{e}; {}", self.hint()),
            e => e.into(),
        }
    }

    /// An input-file error, with the hint when it is about the limit.
    fn npy_error(&self, shown: &dyn std::fmt::Display, e: NpyError) -> anyhow::Error {
        match e {
            NpyError::TooLarge { .. } => anyhow!("{shown}: {e}; {}", self.hint()),
            e => anyhow!("{shown}: {e}"),
        }
    }
}

/// How the devices of `hloc run --devices N` exchange data at collectives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Collectives {
    /// N threads of this process meeting in shared memory.
    Inprocess,
    /// This process is one device of an MPI job of N processes (`mpirun -np N`; `run_mpi.rs`).
    Mpi,
}

/// The `--repeat` line of an N-device run (`--devices`, in process or over MPI) from its
/// runs' wall times (ms).
pub(crate) fn devices_timing_line(mut times: Vec<f64>, exe: &runtime::Executable) -> String {
    times.sort_by(f64::total_cmp);
    let stats = exe.stats();
    format!(
        "time: median {:.4} ms, min {:.4} ms over {} runs; compile {:.1} ms (cache {})",
        times.get(times.len() / 2).copied().unwrap_or(0.0),
        times.first().copied().unwrap_or(0.0),
        times.len(),
        stats.compile_ms,
        stats.cache_word()
    )
}

/// Evaluation backends.
#[derive(Clone, Copy, ValueEnum)]
pub enum Backend {
    /// The reference interpreter (`hlo_eval`).
    Reference,
    /// Kernels compiled for this CPU: generated C through the system C compiler (`cc`,
    /// or `$HLOC_CC`), cached under `$HLOC_CACHE_DIR` (default `~/.cache/hloc`).
    Cpu,
    /// The kernels as CUDA C (each emitted block a thread of a block of 128), run on this
    /// CPU by the CUDA host emulation: the printed CUDA compiled as host C++ (`c++`, or
    /// `$HLOC_CXX`), threads as fibers with real barriers. Tests CUDA code without a GPU;
    /// `HLOC_CUDA_HOST_ORDER=reverse` runs each block's threads in reverse order.
    #[value(name = "cuda-host")]
    CudaHost,
    /// The kernels as CUDA C on this machine's NVIDIA GPU (device 0): NVRTC compiles them
    /// for sm_90 (cubins cached by content hash), the CUDA driver runs them on one stream,
    /// GEMMs through cuBLAS, library calls (sort, scatter, FFT, ...) on the host. The same
    /// executor as `cuda-host`; needs libcuda.so.1, NVRTC and cuBLAS.
    Cuda,
}

/// Runs the command.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let first = Instant::now();
    let time_limit = TimeLimit::resolve(args.timeout, std::env::var(TIMEOUT_ENV))?;
    let watchdog = Watchdog::start(time_limit, first);
    let mut progress = Progress::new(args.progress);
    progress.stage("reading the module");
    let mut stages = Vec::new();
    let module = crate::compile_cmd::read_module(&args.file, &mut stages)?;
    let read_time = first.elapsed();
    let limit = Limit::resolve(args.max_memory, std::env::var(MAX_MEMORY_ENV))?;
    // A partitioned module runs with --devices (crate::run_devices).
    runtime::device_grid(&module, None).map_err(|e| anyhow!("{e}"))?;
    let inputs = match &args.inputs {
        Some(path) => read_inputs(&module, path, &limit)?,
        None => random_inputs(&module, args.seed, &limit)?,
    };
    if args.repeat.is_some() && matches!(args.backend, Backend::Reference) {
        bail!("--repeat times compiled code: add --backend cpu");
    }
    if args.time_passes && matches!(args.backend, Backend::Reference) {
        bail!("--time-passes times the compiler: add --backend cpu");
    }
    let profiling = args.profile || args.profile_json.is_some() || args.trace.is_some();
    if profiling && matches!(args.backend, Backend::Reference) {
        let flag = match (args.profile, &args.profile_json) {
            (true, _) => "--profile",
            (false, Some(_)) => "--profile-json",
            (false, None) => "--trace",
        };
        bail!("{flag} times compiled code: add --backend cpu");
    }
    if args.memory_limit.is_some() && matches!(args.backend, Backend::Reference) {
        bail!("--memory-limit bounds a compiled program's allocations: add --backend cpu (the evaluator's bound is --max-memory)");
    }
    let start = Instant::now();
    let mut timing_line = None;
    // The compiled backend's split of the `time:` line: compile, then run.
    let mut split_line = None;
    let outputs = match args.backend {
        Backend::Reference => {
            progress.stage("evaluating (reference backend)");
            let result = Evaluator::new(&module)
                .with_while_limit(args.max_while_iterations)
                .with_size_limit(limit.bytes)
                .run(&inputs)
                .map_err(|e| limit.eval_error(e))?;
            let mut outputs = Vec::new();
            flatten(result, &mut outputs);
            outputs
        }
        Backend::Cpu | Backend::CudaHost | Backend::Cuda => {
            let options = runtime::CompileOptions {
                cuda_host: matches!(args.backend, Backend::CudaHost),
                gpu: matches!(args.backend, Backend::Cuda).then(|| "h100".to_string()),
                max_while_iterations: args.max_while_iterations,
                size_limit: Some(limit.bytes),
                time_passes: args.time_passes,
                memory_limit: args.memory_limit,
                progress: progress.compile_listener(),
                ..Default::default()
            };
            let compile_start = Instant::now();
            progress.stage("optimizing and generating kernels");
            let plan = runtime::plan(&module, &options).map_err(|e| limit.runtime_error(e))?;
            progress.stage(&crate::progress::compiling(plan.program.kernels.len()));
            let exe = runtime::compile_plan(plan, &options, compile_start)
                .map_err(|e| limit.runtime_error(e))?;
            if args.time_passes {
                stages.extend(exe.timings().iter().cloned());
                // Parsing and compiling, without reading the inputs in between.
                let total = read_time + compile_start.elapsed();
                let text =
                    crate::compile_cmd::stage_times_text(&stages, total, exe.stats().cache_hit);
                eprint!("{text}");
            }
            let compile_time = compile_start.elapsed();
            // Profiles created from here on keep every call for the trace.
            runtime::Profile::set_tracing(args.trace.is_some());
            exe.set_profiling(profiling);
            let runs = args.repeat.unwrap_or(0);
            progress.stage(&match runs {
                0 => "running".to_string(),
                n => format!("running: a warm-up and {n} timed runs"),
            });
            let run_start = Instant::now();
            let (outputs, timing) =
                runtime::run_repeated(&exe, &inputs, runs).map_err(|e| limit.runtime_error(e))?;
            split_line = Some(format!(
                "time split: compile {:.3} ms (cache {}), run {:.3} ms",
                compile_time.as_secs_f64() * 1e3,
                if exe.stats().cache_hit { "hit" } else { "miss" },
                run_start.elapsed().as_secs_f64() * 1e3
            ));
            if let Some(profile) = exe.take_profile() {
                // The model's figures and the work are computed after the timed runs, from
                // the plan.
                let model = exe.predictions().map_err(|e| limit.runtime_error(e))?;
                let work = exe.thunk_work();
                let runs = runs.max(1) as u64;
                if args.profile {
                    eprint!("{}", profile.table(runs, &model, &work));
                }
                if let Some(path) = &args.profile_json {
                    let json = runtime::profile_json(&profile, runs, &model, &work);
                    write_json(path, &json)?;
                }
                if let Some(path) = &args.trace {
                    let trace = runtime::chrome_trace(&profile, &work, module.name())
                        .ok_or_else(|| anyhow!("internal error: the profile kept no calls"))?;
                    write_json(path, &trace)?;
                    eprintln!(
                        "trace: {} calls of {} thunks in {}",
                        profile.calls().map_or(0, <[_]>::len),
                        profile.entries().len(),
                        path.display()
                    );
                }
            }
            if args.repeat.is_some() {
                timing_line = Some(timing.line(exe.stats()));
            }
            outputs
        }
    };
    let elapsed = start.elapsed();
    let reference = if args.check_reference {
        progress.stage("checking against the reference evaluator");
        Some(runtime::reference_reports(&module, &inputs, &outputs).map_err(|e| anyhow!("{e}"))?)
    } else {
        None
    };
    let expected = match &args.expect {
        Some(path) => Some({
            progress.stage("comparing with the expected outputs");
            expect_reports(&module, path, &outputs, &limit)?
        }),
        None => None,
    };
    // Within the time limit: from here on nothing stops the printing and writing.
    watchdog.finish();
    progress.finish();
    for (i, out) in outputs.iter().enumerate() {
        outln!("out{i}: {}", summary(out));
    }
    match timing_line {
        Some(line) => outln!("{line}"),
        None if !args.no_timing => {
            outln!("time: {:.3} ms", elapsed.as_secs_f64() * 1e3);
            if let Some(line) = &split_line {
                outln!("{line}");
            }
        }
        None => {}
    }
    if let Some(path) = &args.outputs {
        let entries = output_entries(
            outputs
                .iter()
                .enumerate()
                .map(|(i, o)| (format!("out{i}"), o)),
        );
        write_outputs(path, &entries)?;
    }
    let mut failed = false;
    if let Some(reports) = &reference {
        failed |= !print_reference_check(reports, &outputs);
    }
    if let Some(reports) = &expected {
        for (i, r) in reports.iter().enumerate() {
            outln!(
                "expect: {}",
                r.line(&format!("out{i}"), &shape_text(&outputs[i]), "expected")
            );
        }
        let bad = reports.iter().filter(|r| !r.matches).count();
        if bad > 0 {
            eprintln!(
                "{bad} of {} outputs differ from the expected ones",
                reports.len()
            );
            failed = true;
        }
    }
    if failed {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `value` as pretty JSON to `path`.
fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").map_err(|e| anyhow!("cannot write {}: {e}", path.display()))
}

/// The `--outputs` entries of `outputs` named `name(i)` (tuples' leaves are flattened
/// before; a non-array leaf has no entry). `hloc run --devices` names them per device.
pub(crate) fn output_entries<'a>(
    outputs: impl IntoIterator<Item = (String, &'a Literal)>,
) -> Vec<(String, ArrayLiteral)> {
    outputs
        .into_iter()
        .filter_map(|(name, o)| Some((name, o.as_array()?.clone())))
        .collect()
}

/// Writes the outputs .npz whole or not at all: into a temporary file beside `path`,
/// renamed over it once complete (a failed write removes the temporary file and leaves
/// any earlier `path` as it was). `hloc run --devices` writes its outputs with it too.
pub(crate) fn write_outputs(path: &Path, entries: &[(String, ArrayLiteral)]) -> Result<()> {
    let shown = path.display();
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = std::fs::File::create(&tmp).and_then(|file| {
        let mut writer = write_npz_to(std::io::BufWriter::new(file), entries)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        std::io::Write::flush(&mut writer)?;
        std::fs::rename(&tmp, path)
    });
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        anyhow!("cannot write {shown}: {e}")
    })
}

/// The shape of an output without its layout.
fn shape_text(l: &Literal) -> String {
    l.shape().to_string_without_layout()
}

/// Prints the reference check: one summary line on stdout when every output matches,
/// else each differing output on stderr; notes (infinity against NaN) on stderr either
/// way. Returns whether every output matched.
fn print_reference_check(reports: &[OutputReport], outputs: &[Literal]) -> bool {
    let bad: Vec<usize> = (0..reports.len())
        .filter(|&i| !reports[i].matches)
        .collect();
    for (i, r) in reports.iter().enumerate() {
        if !r.matches || r.inf_vs_nan > 0 {
            eprintln!(
                "{}",
                r.line(&format!("out{i}"), &shape_text(&outputs[i]), "reference")
            );
        }
    }
    if !bad.is_empty() {
        eprintln!(
            "{} of {} outputs differ from the reference",
            bad.len(),
            reports.len()
        );
        return false;
    }
    let abs = reports.iter().map(|r| r.max_abs_error).fold(0.0, f64::max);
    let rel = reports.iter().map(|r| r.max_rel_error).fold(0.0, f64::max);
    outln!(
        "check-reference: {} outputs match (max abs error {}, max rel error {})",
        reports.len(),
        hlo::literal::format_g(abs, 3),
        hlo::literal::format_g(rel, 3)
    );
    true
}

/// Every output compared with its array in the `--expect` file (keys out0.. or arr_0..),
/// at the precision of its last rounding.
fn expect_reports(
    module: &Module,
    path: &Path,
    outputs: &[Literal],
    limit: &Limit,
) -> Result<Vec<OutputReport>> {
    let shown = path.display();
    let mut arrays = read_arrays(path, limit)?;
    let prefix = ["out", "arr_", "in"]
        .into_iter()
        .find(|p| (0..outputs.len()).all(|n| arrays.iter().any(|(k, _)| *k == format!("{p}{n}"))))
        .ok_or_else(|| {
            let n = (0..outputs.len())
                .find(|n| !arrays.iter().any(|(k, _)| *k == format!("out{n}")))
                .unwrap_or(0);
            anyhow!(
                "{shown} has no array out{n} for output {n}; keys must be out0.. (hloc run \
                 --outputs) or arr_0.. (numpy's savez), one per output ({} outputs)",
                outputs.len()
            )
        })?;
    let precision = hlo_eval::report::rounding_types(module);
    let mut reports = Vec::with_capacity(outputs.len());
    for (n, out) in outputs.iter().enumerate() {
        let key = format!("{prefix}{n}");
        let pos = arrays
            .iter()
            .position(|(k, _)| *k == key)
            .ok_or_else(|| anyhow!("{shown} has no array {key}"))?;
        let (_, want) = arrays.swap_remove(pos);
        let got = out
            .as_array()
            .ok_or_else(|| anyhow!("output {n} is not an array"))?;
        let want = adapt_to(want, got.shape(), &format!("{shown}: {key} for output {n}"))?;
        let p = precision.get(n).copied().flatten();
        reports.push(hlo_eval::report::compare_report(got, &want, p));
    }
    if !arrays.is_empty() {
        let mut extra: Vec<&str> = arrays.iter().map(|(k, _)| k.as_str()).collect();
        extra.sort_unstable();
        eprintln!(
            "warning: {shown}: array(s) {} unused (the module has {} output(s): {prefix}0..)",
            extra.join(", "),
            outputs.len()
        );
    }
    Ok(reports)
}

/// Leaves of a nested tuple in flattened order.
pub(crate) fn flatten(l: Literal, out: &mut Vec<Literal>) {
    match l {
        Literal::Tuple(t) => t.into_iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}

/// Entry parameter shapes in parameter-number order, with their names.
pub(crate) fn parameters(module: &Module) -> Result<Vec<(String, hlo::Shape)>> {
    let entry = module.entry();
    (0..entry.parameters().len())
        .map(|n| {
            let id = entry
                .parameter(n)
                .ok_or_else(|| anyhow!("the entry computation has no parameter {n}"))?;
            let instr = entry.instr(id);
            Ok((instr.name().to_string(), instr.shape().clone()))
        })
        .collect()
}

/// The arrays of an inputs file: one `in0` from an `.npy`, or every member of an `.npz`
/// (read from the file as needed, each member checked against the limit first).
fn read_arrays(path: &Path, limit: &Limit) -> Result<Vec<(String, ArrayLiteral)>> {
    let shown = path.display();
    let cannot = |e: std::io::Error| anyhow!("cannot read {shown}: {e}");
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let mut magic = [0u8; 6];
    let got = std::io::Read::read(&mut file, &mut magic).map_err(cannot)?;
    std::io::Seek::rewind(&mut file).map_err(cannot)?;
    if magic[..got] == *b"\x93NUMPY" {
        let a = read_npy_from(BufReader::new(file), limit.bytes)
            .map_err(|e| limit.npy_error(&shown, e))?;
        return Ok(vec![("in0".to_string(), a)]);
    }
    read_npz_from(BufReader::new(file), limit.bytes).map_err(|e| match e {
        NpyError::TooLarge { .. } => limit.npy_error(&shown, e),
        NpyError::NotNpz(_) => anyhow!("{shown}: {e} (expected an .npz or .npy file)"),
        e => anyhow!("{shown}: {e}"),
    })
}

fn read_inputs(module: &Module, path: &Path, limit: &Limit) -> Result<Vec<Literal>> {
    let shown = path.display();
    let params = parameters(module)?;
    let mut arrays = read_arrays(path, limit)?;
    let prefix = key_prefix(&arrays, params.len()).map_err(|n| {
        anyhow!(
            "{shown} has no array in{n} for parameter {n} (`{}`); keys must be in0.., arr_0.. \
             (numpy's savez) or out0.. (hloc run --outputs)",
            params[n].0
        )
    })?;
    let mut out = Vec::with_capacity(params.len());
    for (n, (pname, shape)) in params.iter().enumerate() {
        let key = format!("{prefix}{n}");
        out.push(input_literal(&mut arrays, &key, shape, (n, pname), &shown)?);
    }
    if !arrays.is_empty() {
        let mut extra: Vec<&str> = arrays.iter().map(|(k, _)| k.as_str()).collect();
        extra.sort_unstable();
        eprintln!(
            "warning: {shown}: array(s) {} unused (the module takes {} parameter(s): {prefix}0..)",
            extra.join(", "),
            params.len()
        );
    }
    Ok(out)
}

/// Parameter `n`'s value from the arrays named `key`: the array `key` for an array
/// parameter; for a tuple, each element from `key.i` (nested: `in1.0.2`), in the tuple's
/// order.
fn input_literal(
    arrays: &mut Vec<(String, ArrayLiteral)>,
    key: &str,
    shape: &hlo::Shape,
    (n, pname): (usize, &str),
    shown: &std::path::Display<'_>,
) -> Result<Literal> {
    if shape.is_tuple() {
        let elements = shape
            .tuple_shapes()
            .iter()
            .enumerate()
            .map(|(i, s)| input_literal(arrays, &format!("{key}.{i}"), s, (n, pname), shown))
            .collect::<Result<Vec<_>>>()?;
        return Ok(Literal::Tuple(elements));
    }
    let pos = arrays
        .iter()
        .position(|(k, _)| *k == key)
        .ok_or_else(|| anyhow!("{shown} has no array {key} for parameter {n} (`{pname}`)"))?;
    let (_, a) = arrays.swap_remove(pos);
    let a = adapt_to(a, shape, &format!("{key} for parameter {n} (`{pname}`)"))?;
    Ok(Literal::Array(a))
}

/// The naming convention of an inputs file with `count` arrays: `in` (hloc's own), `arr_`
/// (what `numpy.savez` writes for unnamed arrays) or `out` (a previous `hloc run --outputs`,
/// so runs chain). The first that names every parameter wins; otherwise the first parameter
/// number that `in` lacks.
fn key_prefix(arrays: &[(String, ArrayLiteral)], count: usize) -> Result<&'static str, usize> {
    // A tuple parameter's elements are `in1.0`, `in1.1`, ...: any of them names it.
    let has = |key: String| {
        arrays
            .iter()
            .any(|(k, _)| *k == key || k.starts_with(&format!("{key}.")))
    };
    ["in", "arr_", "out"]
        .into_iter()
        .find(|p| (0..count).all(|n| has(format!("{p}{n}"))))
        .ok_or_else(|| (0..count).find(|n| !has(format!("in{n}"))).unwrap_or(0))
}

fn random_inputs(module: &Module, seed: u64, limit: &Limit) -> Result<Vec<Literal>> {
    let mut left = limit.bytes;
    parameters(module)?
        .iter()
        .enumerate()
        .map(|(n, (pname, shape))| {
            // The inputs live together: each may take what the ones before it left.
            let l = random_literal(shape, seed, n as u64, left).map_err(|e| match e {
                EvalError::TooLarge { bytes, .. } if left < limit.bytes => anyhow!(
                    "parameter {n} (`{pname}`): {} needs {}, but the parameters before it \
                     leave only {} of the limit of {}; {}",
                    shape.to_string_without_layout(),
                    memory::describe_bytes(bytes),
                    memory::describe_bytes(left),
                    memory::describe_bytes(limit.bytes),
                    limit.hint()
                ),
                EvalError::TooLarge { bytes, .. } => anyhow!(
                    "parameter {n} (`{pname}`): {} needs {}, more than the limit of {}; {}",
                    shape.to_string_without_layout(),
                    memory::describe_bytes(bytes),
                    memory::describe_bytes(limit.bytes),
                    limit.hint()
                ),
                e => anyhow!("parameter {n} (`{pname}`): {e}"),
            })?;
            left -= shape.byte_size().map_or(0, |b| b as u64).min(left);
            Ok(l)
        })
        .collect()
}

/// `f32[8,10] min=... max=... mean=... checksum=...`.
pub(crate) fn summary(l: &Literal) -> String {
    let Some(a) = l.as_array() else {
        return l.shape().to_string_without_layout();
    };
    let shape = a.shape().to_string_without_layout();
    let sum = format!("checksum={:016x}", checksum(a));
    let n = a.data().len();
    if n == 0 {
        return format!("{shape} (empty) {sum}");
    }
    match a.data() {
        ArrayData::C64(_) | ArrayData::C128(_) => {
            let (mut re, mut im) = (0.0, 0.0);
            for i in 0..n {
                let (r, m) = match a.data() {
                    ArrayData::C64(v) => (f64::from(v[i][0]), f64::from(v[i][1])),
                    ArrayData::C128(v) => (v[i][0], v[i][1]),
                    _ => (0.0, 0.0),
                };
                re += r;
                im += m;
            }
            format!(
                "{shape} mean=({}, {}) {sum}",
                g(re / n as f64),
                g(im / n as f64)
            )
        }
        ArrayData::Pred(v) => {
            let t = v.iter().filter(|&&b| b).count();
            format!("{shape} true={t} false={} {sum}", n - t)
        }
        _ => {
            let (mut lo, mut hi, mut total, mut nans) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0);
            for i in 0..n {
                let x = a.get_f64(i).unwrap_or(f64::NAN);
                if x.is_nan() {
                    nans += 1;
                    continue;
                }
                lo = lo.min(x);
                hi = hi.max(x);
                total += x;
            }
            let finite = n - nans;
            let mut s = if finite == 0 {
                format!("{shape} all NaN")
            } else {
                let exact = a.element_type().is_integral();
                let show = |x: f64| if exact { format!("{x:.0}") } else { g(x) };
                format!(
                    "{shape} min={} max={} mean={}",
                    show(lo),
                    show(hi),
                    g(total / finite as f64)
                )
            };
            if nans > 0 && finite > 0 {
                s.push_str(&format!(" nan={nans}"));
            }
            format!("{s} {sum}")
        }
    }
}

/// Six significant digits, like C's `%g`.
fn g(x: f64) -> String {
    hlo::literal::format_g(x, 6)
}

/// FNV-1a over the little-endian bytes of the elements (stable across runs).
fn checksum(a: &ArrayLiteral) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    match a.data() {
        ArrayData::Pred(v) => v.iter().for_each(|&b| eat(&[u8::from(b)])),
        ArrayData::S8(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::S16(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::S32(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::S64(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::U8(v) | ArrayData::Bits8(v) => eat(v),
        ArrayData::U16(v) | ArrayData::Bits16(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::U32(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::U64(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::F32(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::F64(v) => v.iter().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::C64(v) => v.iter().flatten().for_each(|x| eat(&x.to_le_bytes())),
        ArrayData::C128(v) => v.iter().flatten().for_each(|x| eat(&x.to_le_bytes())),
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::VarError;

    #[test]
    fn the_flag_wins_over_the_variable() {
        let l = Limit::resolve(Some(1000), Ok("8G".into())).unwrap();
        assert_eq!((l.bytes, l.source.as_str()), (1000, "set by --max-memory"));
        let l = Limit::resolve(None, Ok("8G".into())).unwrap();
        assert_eq!(
            (l.bytes, l.source.as_str()),
            (8 << 30, "set by HLOC_MAX_MEMORY")
        );
        let l = Limit::resolve(None, Err(VarError::NotPresent)).unwrap();
        assert_eq!(l.bytes, memory::default_size_limit());
        assert_eq!(l.source, memory::default_size_limit_source());
    }

    #[test]
    fn a_bad_variable_is_an_error() {
        let e = Limit::resolve(None, Ok("lots".into())).err().unwrap();
        assert!(
            e.to_string()
                .starts_with("HLOC_MAX_MEMORY: bad size `lots`"),
            "{e}"
        );
        // The flag wins even over a malformed variable.
        assert!(Limit::resolve(Some(1), Ok("lots".into())).is_ok());
    }

    #[test]
    fn the_hint_names_the_flag_and_the_variable() {
        let l = Limit::resolve(Some(4 << 30), Err(VarError::NotPresent)).unwrap();
        assert_eq!(
            l.hint(),
            "the limit is set by --max-memory; raise it with --max-memory SIZE or \
             HLOC_MAX_MEMORY=SIZE (bytes or K/M/G/T, e.g. 8G)"
        );
    }
}
