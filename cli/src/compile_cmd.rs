//! `hloc compile`: compile a module for this CPU (passes, kernels, C, the system C
//! compiler, the object cache); print statistics and write XLA-named dumps.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use clap::{Args, ValueEnum};

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
.kernels.c, .thunks.txt and .after_optimizations-buffer-assignment.txt.
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
}

/// Compilation targets.
#[derive(Clone, Copy, ValueEnum)]
pub enum Target {
    /// This machine's CPU (C compiled with the system `cc`).
    Cpu,
}

fn write(dir: &Path, name: &str, text: &str) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| anyhow!("cannot write {}: {e}", path.display()))
}

/// The `--time-passes` text (of `hloc compile` and `hloc run`): one line per stage in
/// order, then the total wall time with the cache state.
pub fn stage_times_text(stages: &[(String, Duration)], total: Duration, cache_hit: bool) -> String {
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    let mut out = String::new();
    for (name, time) in stages {
        out.push_str(&format!("{:>10.3} ms  {name}\n", ms(time)));
    }
    let cache = if cache_hit { "hit" } else { "miss" };
    out.push_str(&format!("{:>10.3} ms  total (cache {cache})\n", ms(&total)));
    out
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
    let Target::Cpu = args.target;
    let first = Instant::now();
    let mut stages = Vec::new();
    let module = read_module(&args.file, &mut stages)?;
    let start = Instant::now();
    let opts = runtime::CompileOptions {
        time_passes: args.time_passes,
        ..Default::default()
    };
    let mut plan = runtime::plan(&module, &opts)?;
    let dump_start = Instant::now();
    if let Some(dir) = &args.dump_to {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow!("cannot create {}: {e}", dir.display()))?;
        let prefix = hlo::pass::module_dump_prefix(0, module.name());
        let p = &plan.program;
        write(
            dir,
            &format!("{prefix}.before_optimizations.txt"),
            &hlo::print_module(&module),
        )?;
        write(
            dir,
            &format!("{prefix}.after_optimizations.txt"),
            &hlo::print_module(&plan.module),
        )?;
        write(dir, &format!("{prefix}.kernels.c"), &plan.source)?;
        write(dir, &format!("{prefix}.thunks.txt"), &plan::thunks_text(p))?;
        write(
            dir,
            &format!("{prefix}.after_optimizations-buffer-assignment.txt"),
            &plan::buffer_assignment_text(p),
        )?;
        if args.time_passes {
            plan.timings.push(("dump".into(), dump_start.elapsed()));
        }
    }
    let exe = runtime::compile_plan(plan, &opts, start)?;
    if args.time_passes {
        stages.extend(exe.timings().iter().cloned());
        let text = stage_times_text(&stages, first.elapsed(), exe.stats().cache_hit);
        eprint!("{text}");
    }
    if args.stats {
        for line in exe.stats().to_text().lines() {
            let timing = line.starts_with("compile:") || line.starts_with("cache:");
            if !(args.no_timing && timing) {
                println!("{line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
