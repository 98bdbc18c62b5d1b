//! # fusion — which ops run together as one kernel, and why
//!
//! A cost model from indexing maps and a [`device::Device`] ([`cost`]), and the passes of
//! XLA's fusion pipeline as [`hlo::pass::Pass`]es, every decision recorded with a reason
//! code and the numbers behind it ([`Decision`], [`FusionReport`]).
//!
//! ```
//! let mut module = hlo::parse_module(r#"
//! HloModule m
//! ENTRY e {
//!   p = f32[1024] parameter(0)
//!   q = f32[1024] parameter(1)
//!   a = f32[1024] add(p, q)
//!   ROOT n = f32[1024] exponential(a)
//! }"#).unwrap();
//! let cpu = device::load("cpu").unwrap();
//! let report = fusion::fuse(&mut module, &cpu).unwrap();
//! let fused = hlo::print_module(&module);
//! assert!(fused.contains("ROOT fusion = f32[1024] fusion(p, q), kind=kLoop, calls=fused_computation"));
//! let json = report.to_json_lines();
//! assert!(json.starts_with(r#"{"fusion":"fusion","kind":"loop","emitter":"loop","members":["a","n"]"#));
//! assert!(json.contains(r#""producer":"a","consumer":"n","reason":"fused""#));
//! ```
//!
//! The passes ask the pipeline's [`EmitterReach`] before they form a fusion whether its
//! code generator can emit it, and follow its switches ([`EmitterRules`]): [`XlaCpuReach`]
//! and [`XlaGpuReach`] (the fused modules XLA reads back), or hloc's own emitters
//! (implemented in `codegen`).
//!
//! Modules: [`ops`] (what each opcode is to fusion, the flops table), [`cost`] (the
//! cost model), [`plan`] (priority fusion as a plan over one computation), `materialize`
//! (plans to `fusion` instructions and `fused_computation`s), [`hero`] and [`reach`]
//! (emitter compatibility and reachability for multi-output and horizontal fusion),
//! `merge` (several kernels into one tuple-rooted fusion), the passes, and the report
//! (`decision`, `report`).
//!
//! The pipeline, in XLA's order: priority fusion ([`PriorityFusion`]), multi-output
//! fusion ([`MultiOutputFusion`]), horizontal fusion ([`HorizontalFusion`]); the CSE and
//! DCE after them belong to whoever assembles the whole pipeline (`hloc fuse` runs them).
//! [`passes`] gives the list; [`fuse`] runs it with the verifier before and after and
//! builds the report of the final module.

mod concat_as_pads;
pub mod cost;
pub mod cost_chains;
pub mod cost_contraction;
pub mod cost_elementwise;
pub mod cost_gather_index;
pub mod cost_gemm;
pub mod cost_info;
pub mod cost_lapack;
pub mod cost_library;
pub mod cost_loops;
pub mod cost_reads;
pub mod cost_strided;
mod decision;
mod dot_strength;
mod emitter_reach;
mod error;
mod gather_lookups;
pub mod gpu_column_reduction;
pub mod gpu_hero;
pub mod gpu_launch;
pub mod gpu_merge_sort;
pub mod gpu_reduction;
pub mod gpu_row_reduction;
pub mod gpu_scatter;
pub mod gpu_select_scatter;
pub mod gpu_sort;
pub mod gpu_transpose;
pub mod gpu_variadic;
pub mod hero;
mod horizontal;
mod materialize;
mod merge;
mod multi_output;
pub mod ops;
pub mod plan;
mod priority;
pub mod reach;
mod report;
pub mod select_scatter;
pub mod tile_cost;
mod unit_reshapes;
pub mod xla_cpu;
mod xla_reach;

pub use decision::{Cost, Decision, Reason};
pub use emitter_reach::{Candidate, EmitterReach, EmitterRules, Unemittable};
pub use error::FusionError;
pub use horizontal::HorizontalFusion;
pub use materialize::{emitter_and_kind, Created};
pub use multi_output::MultiOutputFusion;
pub use priority::PriorityFusion;
pub use report::{
    control_flow_computations, EdgeRecord, FusionLog, FusionRecord, FusionReport, Record,
};
pub use xla_reach::{xla_reach, XlaCpuReach, XlaGpuReach};

use std::sync::Arc;

use device::Device;
use hlo::pass::Pass;
use hlo::Module;

/// The fusion passes for `device`, in pipeline order: priority fusion, multi-output
/// fusion, horizontal fusion (the last two only where the device emits multi-output
/// fusions), fusing for XLA's emitters ([`xla_reach`]).
pub fn passes(device: &Device) -> Vec<Box<dyn Pass>> {
    passes_with(device, xla_reach(device))
}

/// [`passes`] forming only fusions `reach` can emit.
pub fn passes_with(device: &Device, reach: Arc<dyn EmitterReach>) -> Vec<Box<dyn Pass>> {
    vec![
        Box::new(PriorityFusion::with_reach(device.clone(), reach.clone())),
        Box::new(MultiOutputFusion::with_reach(
            device.clone(),
            reach.clone(),
            FusionLog::default(),
        )),
        Box::new(HorizontalFusion::with_reach(
            device.clone(),
            reach,
            FusionLog::default(),
        )),
    ]
}

/// Fuses `module` for `device` and XLA's emitters ([`xla_reach`]): verifies it (rejecting
/// it with the verifier's errors), runs the fusion passes, verifies the result and returns
/// the report of the final module.
pub fn fuse(module: &mut Module, device: &Device) -> Result<FusionReport, FusionError> {
    let log = fuse_logged(module, device)?;
    Ok(FusionReport::build(module, &log))
}

/// [`fuse`] returning what the passes decided instead of the report, for a caller that
/// runs more passes (CSE, DCE) before building the report of its final module with
/// [`FusionReport::build`].
pub fn fuse_logged(module: &mut Module, device: &Device) -> Result<FusionLog, FusionError> {
    fuse_logged_with(module, device, xla_reach(device))
}

/// [`fuse_logged`] forming only fusions `reach` can emit.
pub fn fuse_logged_with(
    module: &mut Module,
    device: &Device,
    reach: Arc<dyn EmitterReach>,
) -> Result<FusionLog, FusionError> {
    hlo::pass::verify::verify(module).map_err(FusionError::InvalidInput)?;
    let mut priority = PriorityFusion::with_reach(device.clone(), reach.clone());
    priority.run(module)?;
    let mut multi =
        MultiOutputFusion::with_reach(device.clone(), reach.clone(), priority.take_log());
    multi.run(module)?;
    let mut horizontal = HorizontalFusion::with_reach(device.clone(), reach, multi.take_log())
        .with_info_cache(multi.take_info_cache());
    horizontal.run(module)?;
    hlo::pass::verify::verify(module).map_err(FusionError::InvalidOutput)?;
    Ok(horizontal.take_log())
}
