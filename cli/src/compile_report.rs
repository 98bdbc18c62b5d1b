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
            println!("{line}");
        }
    }
}
