//! Compiling for a GPU without one: the plan's kernels (the GPU emitters' where they apply)
//! printed as one CUDA module and compiled by NVRTC to a cubin, with what `ptxas` reports
//! of each kernel. `hloc compile --target h100|h200` is this.

use std::fmt::Write as _;
use std::time::Instant;

use crate::backends::{cubin as compile_cubin, Cubin};
use crate::{CompileOptions, Plan, RuntimeError, Stats};
use codegen::kir::{Kernel, Stmt};

/// A module compiled for a GPU.
#[derive(Clone, Debug)]
pub struct GpuBuild {
    /// The optimized module, its program and the CUDA module text (`Plan::source`).
    pub plan: Plan,
    /// NVRTC's cubin and the kernels' resources.
    pub cubin: Cubin,
    /// Compilation figures (`cache_hit` is always false: cubins are not cached yet).
    pub stats: Stats,
}

/// The compute capability NVRTC compiles for on GPU description `device`: both shipped
/// GPU descriptions (`h100`, `h200`) are Hopper, `sm_90`.
pub fn gpu_arch(device: &str) -> Result<&'static str, RuntimeError> {
    match device {
        "h100" | "h200" => Ok("sm_90"),
        other => Err(RuntimeError::Device(format!(
            "no CUDA architecture known for `{other}` (h100, h200)"
        ))),
    }
}

/// Compiles a [`crate::plan`] made for GPU [`CompileOptions::gpu`] (its source is the CUDA
/// module) with NVRTC; `start` is when the compilation began.
pub fn compile_gpu_plan(
    mut plan: Plan,
    options: &CompileOptions,
    start: Instant,
) -> Result<GpuBuild, RuntimeError> {
    let device = options.gpu.as_deref().unwrap_or("h100");
    let arch = gpu_arch(device)?;
    let mut timings = std::mem::take(&mut plan.timings);
    let t = Instant::now();
    let (bounded, cubin) = compile_cubin(&plan.program, &plan.source, arch)?;
    if let Some(source) = bounded {
        plan.source = source;
    }
    if options.time_passes {
        timings.push(("nvrtc".into(), t.elapsed()));
    }
    let p = &plan.program;
    let stats = Stats {
        kernels: p.kernels.len(),
        library_calls: p.library_calls(),
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
        cache_hit: false,
        buffer_bytes: p.buffer_bytes(),
        temp_bytes: p.temp_bytes(),
        peak_bytes: p.peak_bytes,
        timings,
    };
    Ok(GpuBuild { plan, cubin, stats })
}

/// The `.kernels.txt` dump: per kernel its launch (blocks × threads), the emitter and
/// thread map its comment records (or how it runs without one), and what `ptxas` reports
/// (registers, shared bytes, stack, spills).
pub fn kernels_text(build: &GpuBuild) -> String {
    let mut out = String::new();
    for k in &build.plan.program.kernels {
        let _ = writeln!(
            out,
            "kernel {}: blocks={} threads={}",
            k.name, k.grid.blocks, k.grid.threads
        );
        match launch_lines(k) {
            Some(lines) => {
                for l in lines {
                    let _ = writeln!(out, "  {l}");
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "  no thread map: each block of the CPU emitter runs as one thread"
                );
            }
        }
        match build.cubin.kernels.iter().find(|r| r.name == k.name) {
            Some(r) => {
                let _ = writeln!(
                    out,
                    "  registers={} shared_bytes={} stack_bytes={} spill_stores={} spill_loads={}",
                    r.registers, r.shared_bytes, r.stack_bytes, r.spill_stores, r.spill_loads
                );
            }
            None => {
                let _ = writeln!(out, "  not in ptxas's report");
            }
        }
    }
    out
}

/// The `... emitter:`, `why ...` (the reason for an emitter's form, e.g. two launches)
/// and `thread map:` lines of kernel `k`'s leading comment.
fn launch_lines(k: &Kernel) -> Option<Vec<&str>> {
    let Some(Stmt::Comment(c)) = k.body.first() else {
        return None;
    };
    let lines: Vec<&str> = c
        .lines()
        .filter(|l| {
            l.contains(" emitter: blocks=")
                || l.starts_with("why ")
                || l.starts_with("thread map: ")
        })
        .collect();
    (!lines.is_empty()).then_some(lines)
}

/// Kernels of `build` that spill registers, as `name (N bytes)`.
pub fn spilling_kernels(build: &GpuBuild) -> Vec<String> {
    build
        .cubin
        .kernels
        .iter()
        .filter(|r| r.spill_stores + r.spill_loads > 0)
        .map(|r| format!("{} ({} bytes)", r.name, r.spill_stores + r.spill_loads))
        .collect()
}
