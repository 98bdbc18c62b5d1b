//! What `hloc compile` writes for every target: the dump files, the `--stats` lines and
//! the `--time-passes` table (shared by the CPU path in `compile_cmd.rs`, the GPU path in
//! `compile_gpu.rs` and `hloc run`).

use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Result};

/// Writes `text` to `dir/name`.
pub fn write(dir: &Path, name: &str, text: &str) -> Result<()> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| anyhow!("cannot write {}: {e}", path.display()))
}

/// Writes `--dump-to`'s files of a planned module into `dir` (created): the module before
/// and after optimizations, the kernels' source as `.kernels.EXT` (`c` or `cu`), the thunks
/// and the memory dumps. Called before the backend compiles, so the source is there when
/// the compiler fails.
pub fn write_plan_dumps(
    dir: &Path,
    module: &hlo::Module,
    plan: &runtime::Plan,
    source_ext: &str,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| anyhow!("cannot create {}: {e}", dir.display()))?;
    let prefix = hlo::pass::module_dump_prefix(0, module.name());
    let modules = [
        ("before_optimizations", module),
        ("after_optimizations", &plan.module),
    ];
    for (stage, m) in modules {
        write(dir, &format!("{prefix}.{stage}.txt"), &hlo::print_module(m))?;
    }
    write(dir, &format!("{prefix}.kernels.{source_ext}"), &plan.source)?;
    write(
        dir,
        &format!("{prefix}.thunks.txt"),
        &plan::thunks_text(&plan.program),
    )?;
    // The dataflow values the memory planner starts from (issue 32 item 1): what a
    // person reads to see why two values share, or cannot share, a buffer.
    let flow = plan::memory::dataflow(&plan.module);
    write(
        dir,
        &format!("{prefix}.after_optimizations-values.txt"),
        &plan::memory::values_text(&plan.module, &flow),
    )?;
    write_memory_dumps(dir, plan)
}

/// Writes the memory planner's dumps in XLA's layout: the buffer assignment and the
/// memory-usage report of the optimized module.
pub fn write_memory_dumps(dir: &Path, plan: &runtime::Plan) -> Result<()> {
    for (name, text) in plan::memory::xla_memory_dumps(0, &plan.module, &plan.program) {
        write(dir, &name, &text)?;
    }
    Ok(())
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

/// Prints `--stats`' lines (without `compile:` and `cache:` when `no_timing`).
pub fn print_stats(stats: &runtime::Stats, no_timing: bool) {
    for line in stats.to_text().lines() {
        let timing = line.starts_with("compile:") || line.starts_with("cache:");
        if !(no_timing && timing) {
            outln!("{line}");
        }
    }
}
