//! `hloc compile`: compile a module for this CPU (passes, kernels, C, the system C
//! compiler, the object cache); print statistics and write XLA-named dumps.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

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

/// Runs the command.
pub fn run(args: CompileArgs) -> Result<ExitCode> {
    let Target::Cpu = args.target;
    let name = args.file.display().to_string();
    let text =
        std::fs::read_to_string(&args.file).map_err(|e| anyhow!("cannot read {name}: {e}"))?;
    let options = hlo::ParseOptions {
        file_name: Some(name.clone()),
        ..Default::default()
    };
    let parsed = hlo::parse_module_with(&text, &options)?;
    if let Err(errors) = hlo::verifier::verify_parsed(&parsed, &text) {
        let shown: Vec<String> = errors.iter().map(|e| e.render(&name)).collect();
        bail!("{}", shown.join("\n"));
    }
    let module = parsed.module;
    let start = Instant::now();
    let opts = runtime::CompileOptions::default();
    let plan = runtime::plan(&module, &opts)?;
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
        write(
            dir,
            &format!("{prefix}.thunks.txt"),
            &codegen::thunk::thunks_text(p),
        )?;
        write(
            dir,
            &format!("{prefix}.after_optimizations-buffer-assignment.txt"),
            &codegen::thunk::buffer_assignment_text(p),
        )?;
    }
    let exe = runtime::compile_plan(plan, &opts, start)?;
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
