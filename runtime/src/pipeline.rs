//! The compiler's pass registry and pipelines, assembled here as XLA's CPU and GPU
//! compilers assemble theirs: every crate below exports only its own passes
//! (`hlo_transforms::all_passes`, `fusion::passes`), and this module mixes them for a
//! target. `hloc opt --passes` and `hloc compile` both read it.
//!
//! The fusion passes form only fusions the code generator behind them can emit
//! ([`fusion::EmitterReach`]): XLA's emitters for the fused modules `hloc fuse` and
//! `hloc opt` write ([`fusion::xla_reach`]), hloc's own for the modules the runtime
//! compiles ([`hloc_fusion_pipeline`], with [`codegen::HlocReach`], whose emitters confirm
//! each fusion before it forms). Only fusions a module arrives with can be beyond hloc's
//! emitters; [`UnfuseUnemittable`] unfuses those, before hloc fuses.

use std::sync::Arc;

use device::Device;
use hlo::pass::{Pass, PassError, Pipeline};
use hlo::Module;

/// Every pass the compiler knows for `device`: the target-independent HLO passes, then
/// the fusion passes (which read the device description), then the CPU lowering that moves
/// dots out of fusions into GEMM calls, then the entry boundary's flattening that every
/// compilation runs first ([`crate::FlattenTupleParameters`]), in `--list-passes` order.
pub fn all_passes(device: &Device) -> Vec<Box<dyn Pass>> {
    let mut passes = hlo_transforms::all_passes();
    passes.extend(fusion::passes(device));
    passes.push(Box::new(plan::OutlineFusedGemms));
    passes.push(Box::new(plan::DotsToGemms::default()));
    passes.push(Box::new(plan::MatchBoundaryLayouts));
    passes.push(Box::new(crate::FlattenTupleParameters));
    passes
}

/// What every compilation runs first, before the default pipeline: the entry's
/// tuple-shaped parameters flattened to one array per leaf
/// ([`crate::FlattenTupleParameters`]), the form the compiled program takes them in.
pub fn entry_boundary_pipeline() -> Pipeline {
    Pipeline::new("boundary").with(crate::FlattenTupleParameters)
}

/// A new instance of the pass named `name`.
pub fn pass_by_name(name: &str, device: &Device) -> Option<Box<dyn Pass>> {
    all_passes(device).into_iter().find(|p| p.name() == name)
}

/// The fusion pipeline for `device` and XLA's emitters ([`fusion::xla_reach`]): what
/// `hloc opt --passes fusion` runs. The runtime's is [`hloc_fusion_pipeline`].
pub fn fusion_pipeline(device: &Device) -> Pipeline {
    fusion_pipeline_with(device, fusion::xla_reach(device))
}

/// The fusion passes for `device` forming only fusions `reach` can emit, then the CSE and
/// DCE that clean up after them (XLA's order: priority fusion, multi-output, horizontal,
/// CSE).
pub fn fusion_pipeline_with(device: &Device, reach: Arc<dyn fusion::EmitterReach>) -> Pipeline {
    let mut p = Pipeline::new("fusion");
    for pass in fusion::passes_with(device, reach) {
        p.add(pass);
    }
    p.with(hlo_transforms::Cse).with(hlo_transforms::Dce)
}

/// The fusion pipeline of the modules hloc compiles for `device`: [`fusion_pipeline_with`]
/// hloc's emitters' reach for `target` ([`codegen::HlocReach`]), whose emitters confirm
/// every fusion before it forms, so none needs unfusing afterwards.
///
/// On a GPU, the long reductions the device would run on few blocks split first
/// ([`gpu_reduction_splitter`]).
pub fn hloc_fusion_pipeline(device: &Device, target: &codegen::EmitTarget) -> Pipeline {
    let fusion = fusion_pipeline_with(
        device,
        Arc::new(codegen::HlocReach::for_target(target.clone())),
    );
    if !target.gpu_emitters {
        return fusion;
    }
    Pipeline::new("gpu-fusion")
        .with(gpu_reduction_splitter(device))
        .with(fusion)
}

/// The tree-reduction rewriting where GPU `device`'s reduction launches would leave
/// multiprocessors idle ([`fusion::gpu_reduction::split_of`]).
pub fn gpu_reduction_splitter(device: &Device) -> hlo_transforms::TreeReductionRewriter {
    let device = device.clone();
    hlo_transforms::TreeReductionRewriter::with_rule(Arc::new(move |module, comp, id| {
        fusion::gpu_reduction::split_of(module, comp, id, &device)
            .map(|(dim, outer)| hlo_transforms::tree_reduction::ReduceSplit { dim, outer })
    }))
}

/// [`codegen::UnfuseUnemittable`], then, where it unfused anything, the GEMM lowering of
/// the dots the unfused fusions held ([`plan::DotsToGemms`]); what it unfused
/// goes to the log. Only for fusions a module arrives with (XLA's dumps, `hloc fuse`'s
/// output), which no reach of hloc's emitters formed: [`cpu_lowering_pipeline`] runs it
/// before hloc's own fusion.
#[derive(Debug)]
pub struct UnfuseUnemittable(codegen::UnfuseUnemittable, plan::DotsToGemms);

impl UnfuseUnemittable {
    /// The pass for the emitters of `target`.
    pub fn new(target: codegen::EmitTarget) -> UnfuseUnemittable {
        let dots = dots_to_gemms(&target);
        UnfuseUnemittable(codegen::UnfuseUnemittable::new(target), dots)
    }
}

/// The GEMM lowering of dots for `target`: integer GEMMs kept on the CPU, which runs
/// them ([`plan::DotsToGemms::integer_gemms`]).
fn dots_to_gemms(target: &codegen::EmitTarget) -> plan::DotsToGemms {
    plan::DotsToGemms {
        integer_gemms: !target.gpu_emitters,
    }
}

impl Pass for UnfuseUnemittable {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn description(&self) -> &str {
        self.0.description()
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let seen = self.0.unfused.len();
        if !self.0.run(module)? {
            return Ok(false);
        }
        for (fusion, why) in &self.0.unfused[seen..] {
            log::info!(target: "runtime", "unfusing `{fusion}`: {why}");
        }
        self.1.run(module)?;
        Ok(true)
    }
}

/// The CPU lowering before fusion: scan ops as while loops ([`hlo_transforms::ScanLowering`]),
/// dots of rows gathered from a smaller matrix as gathers
/// of the product's rows ([`hlo_transforms::DotBeforeGather`]), concatenates of updated slices tiling one array as
/// chains of updates of it ([`hlo_transforms::ConcatOfUpdatedSlices`]), ragged dots as dense dots of group-masked operands
/// ([`hlo_transforms::RaggedDotExpander`], XLA:CPU's rewrite), scans longer than 16 in
/// XLA:CPU's blocks ([`hlo_transforms::BlockedScans`], so that float cumsums round as
/// XLA's and the evaluator's do), reduces over several dimensions with few long outputs
/// split in two ([`hlo_transforms::TreeReductionRewriter::several_dimensions`], so that
/// the first spreads over threads), large convolutions as im2col patches and one GEMM
/// (when `convolutions_as_gemms`), the dots of the module's own fusions (output fusions as
/// XLA dumps them) outlined as library GEMMs that keep their fusion's epilogue, every other
/// dot a GEMM (with the transposes and converts that make it one), one layout at every
/// computation boundary, and the module's own fusions that the emitters of `target`
/// cannot generate unfused (fused again by hloc's rules in [`hloc_fusion_pipeline`]: the
/// only unfusing left, for fusions the module arrived with).
pub fn cpu_lowering_pipeline(
    convolutions_as_gemms: bool,
    target: &codegen::EmitTarget,
) -> Pipeline {
    let mut p = Pipeline::new("cpu")
        .with(hlo_transforms::ScanLowering)
        .with(hlo_transforms::DotBeforeGather)
        .with(hlo_transforms::HoistLoopInvariantDots)
        .with(hlo_transforms::ConcatOfUpdatedSlices)
        .with(hlo_transforms::RaggedDotExpander)
        .with(hlo_transforms::BlockedScans)
        .with(hlo_transforms::TreeReductionRewriter::several_dimensions());
    if convolutions_as_gemms {
        p.add(Box::new(hlo_transforms::ConvToGemm::default()));
    }
    p.with(plan::OutlineFusedGemms)
        .with(dots_to_gemms(target))
        .with(plan::MatchBoundaryLayouts)
        .with(UnfuseUnemittable::new(target.clone()))
}

/// A pipeline named `name` of the comma-separated passes in `list`: pass names, `default`
/// for the target-independent default pipeline, `fusion` for [`fusion_pipeline`]. Errors
/// name the unknown pass.
pub fn pipeline_from_list(name: &str, list: &str, device: &Device) -> Result<Pipeline, String> {
    let mut p = Pipeline::new(name);
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item {
            "default" => p.add(Box::new(hlo_transforms::default_pipeline())),
            "fusion" => p.add(Box::new(fusion_pipeline(device))),
            _ => {
                p.add(pass_by_name(item, device).ok_or_else(|| {
                    format!("unknown pass `{item}` (see `hloc opt --list-passes`)")
                })?)
            }
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_mixes_hlo_and_fusion_passes() {
        let cpu = device::load("cpu").unwrap();
        let names: Vec<String> = all_passes(&cpu)
            .iter()
            .map(|p| p.name().to_string())
            .collect();
        assert!(names.iter().any(|n| n == "dce"));
        assert!(names.iter().any(|n| n == "priority-fusion"));
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            names.len(),
            "pass names are unique: {names:?}"
        );
        assert!(pipeline_from_list("t", "default,fusion,dce", &cpu).is_ok());
        let err = pipeline_from_list("t", "dce,nope", &cpu).unwrap_err();
        assert!(err.contains("`nope`"), "{err}");
    }

    // That hloc's reach forms no fusion its emitters refuse is checked where the reach
    // is (`codegen`'s `unfuse` and `reach` tests, on a diffusion model's time embedding),
    // and through this pipeline by `runtime::plan` on the same module against the
    // evaluator (`tests/runtime/fallbacks.rs`).

    #[test]
    fn hlocs_pipeline_refuses_what_the_emitters_cannot_take_and_xlas_fuses_it() {
        let cpu = device::load("cpu").unwrap();
        let text = "HloModule m\nENTRY e {\n  p = f32[64] parameter(0)\n  a = f32[64] acos(p)\n  ROOT n = f32[64] negate(a)\n}";
        let mut m = hlo::parse_module(text).unwrap();
        assert!(fusion_pipeline(&cpu).run(&mut m).unwrap());
        assert!(hlo::print_module(&m).contains("fusion("));
        let mut m = hlo::parse_module(text).unwrap();
        let target = codegen::EmitTarget::cpu();
        assert!(!hloc_fusion_pipeline(&cpu, &target).run(&mut m).unwrap());
    }

    #[test]
    fn fusion_pipeline_fuses_and_keeps_results() {
        let cpu = device::load("cpu").unwrap();
        let mut m = hlo::parse_module(
            "HloModule m\nENTRY e {\n  p = f32[64] parameter(0)\n  a = f32[64] exponential(p)\n  ROOT n = f32[64] negate(a)\n}",
        )
        .unwrap();
        let before = m.clone();
        assert!(fusion_pipeline(&cpu).run(&mut m).unwrap());
        assert!(hlo::print_module(&m).contains("fusion("));
        let args =
            [
                hlo_eval::random::random_literal(
                    before.entry().root_instr().shape(),
                    3,
                    0,
                    1 << 20,
                )
                .unwrap(),
            ];
        let want = hlo_eval::evaluate(&before, &args).unwrap();
        let got = hlo_eval::evaluate(&m, &args).unwrap();
        assert!(hlo_eval::tolerance::literals_match(&got, &want));
    }
}
