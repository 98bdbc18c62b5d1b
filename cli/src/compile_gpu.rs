//! `hloc compile --target h100|h200`: the module planned with the GPU emitters, printed as
//! one CUDA C module and compiled by NVRTC for the GPU's architecture on this machine (no
//! GPU needed); the dumps and statistics of `compile_cmd.rs` for a GPU.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::compile_report::{print_stats, stage_times_text, write, write_plan_dumps};

/// What `hloc compile --target GPU` was asked for.
pub struct Request<'a> {
    /// The GPU description (`h100`, `h200`).
    pub gpu: &'a str,
    /// `--dump-to`.
    pub dump_to: Option<&'a Path>,
    /// `--stats`.
    pub stats: bool,
    /// `--no-timing`.
    pub no_timing: bool,
    /// `--time-passes`.
    pub time_passes: bool,
    /// `--memory-limit`.
    pub memory_limit: Option<u64>,
}

/// Compiles `module` as `args` ask; `stages` holds the parse and verify times, `first`
/// when the command began.
pub fn run(
    args: &Request<'_>,
    module: &hlo::Module,
    mut stages: Vec<(String, Duration)>,
    first: Instant,
) -> Result<ExitCode> {
    let start = Instant::now();
    let opts = runtime::CompileOptions {
        time_passes: args.time_passes,
        gpu: Some(args.gpu.to_string()),
        memory_limit: args.memory_limit,
        ..Default::default()
    };
    let mut plan = runtime::plan(module, &opts)?;
    let prefix = hlo::pass::module_dump_prefix(0, module.name());
    if let Some(dir) = args.dump_to {
        let t = Instant::now();
        write_plan_dumps(dir, module, &plan, "cu")?;
        if args.time_passes {
            plan.timings.push(("dump".into(), t.elapsed()));
        }
    }
    let printed = plan.source.clone();
    let build = runtime::compile_gpu_plan(plan, &opts, start)?;
    if let Some(dir) = args.dump_to {
        // Kernels that spilled were printed again with launch bounds: the dump holds
        // the module NVRTC compiled last.
        if build.plan.source != printed {
            write(dir, &format!("{prefix}.kernels.cu"), &build.plan.source)?;
        }
        write(
            dir,
            &format!("{prefix}.kernels.txt"),
            &runtime::kernels_text(&build),
        )?;
    }
    let spilling = runtime::spilling_kernels(&build);
    if !spilling.is_empty() {
        eprintln!(
            "warning: {} kernel(s) spill registers: {}",
            spilling.len(),
            spilling.join(", ")
        );
    }
    if args.time_passes {
        stages.extend(build.stats.timings.iter().cloned());
        eprint!("{}", stage_times_text(&stages, first.elapsed(), false));
    }
    if args.stats {
        print_stats(&build.stats, args.no_timing);
    }
    Ok(ExitCode::SUCCESS)
}
