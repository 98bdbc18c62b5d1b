//! The compiler's pass registry and pipelines, assembled here as XLA's CPU and GPU
//! compilers assemble theirs: every crate below exports only its own passes
//! (`hlo_transforms::all_passes`, `fusion::passes`), and this module mixes them for a
//! target. `hloc opt --passes` and `hloc compile` both read it.

use device::Device;
use hlo::pass::{Pass, Pipeline};

/// Every pass the compiler knows for `device`: the target-independent HLO passes, then
/// the fusion passes (which read the device description), then the CPU lowering that moves
/// dots out of fusions into GEMM calls, in `--list-passes` order.
pub fn all_passes(device: &Device) -> Vec<Box<dyn Pass>> {
    let mut passes = hlo_transforms::all_passes();
    passes.extend(fusion::passes(device));
    passes.push(Box::new(plan::OutlineFusedGemms));
    passes.push(Box::new(plan::DotsToGemms));
    passes.push(Box::new(plan::MatchBoundaryLayouts));
    passes
}

/// A new instance of the pass named `name`.
pub fn pass_by_name(name: &str, device: &Device) -> Option<Box<dyn Pass>> {
    all_passes(device).into_iter().find(|p| p.name() == name)
}

/// The fusion pipeline for `device`: the fusion passes, then the CSE and DCE that clean up
/// after them (XLA's order: priority fusion, multi-output, horizontal, CSE).
pub fn fusion_pipeline(device: &Device) -> Pipeline {
    let mut p = Pipeline::new("fusion");
    for pass in fusion::passes(device) {
        p.add(pass);
    }
    p.with(hlo_transforms::Cse).with(hlo_transforms::Dce)
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
