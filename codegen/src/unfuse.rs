//! The `unfuse-unemittable` pass: every fusion that hloc's emitters cannot generate (the
//! emitter itself says so, [`crate::emit::check_instruction`]) is replaced by the
//! instructions of its fused computation, so they run as kernels of their own. hloc's
//! fusion passes form no such fusion ([`crate::HlocReach`] asks the emitter before each
//! one forms); this pass is for the fusions a module arrives with (written by XLA or
//! `hloc fuse`, for XLA's emitters), which the driver runs it on before hloc's own fusion.
//! A fusion of one instruction stays: unfused
//! it would be the same instruction, which the program builder runs the same way (XLA's
//! fusions wrapping one scatter, sort or custom call run as library calls). Dots an
//! unfused fusion held are left as dots: a caller that runs them as library GEMMs runs its
//! GEMM lowering after this pass where it changed the module.

use hlo::ir::{call_graph, edit};
use hlo::pass::{Pass, PassError};
use hlo::{InstrId, Module, Opcode};

use crate::{CodegenError, EmitTarget};

/// The pass, for the emitters of `target`.
#[derive(Clone, Debug, Default)]
pub struct UnfuseUnemittable {
    /// What the emitters generate code for.
    pub target: EmitTarget,
    /// What the runs so far unfused, and why: `(fusion, message)`, for a caller's log.
    pub unfused: Vec<(String, String)>,
}

impl UnfuseUnemittable {
    /// The pass for `target`'s emitters.
    pub fn new(target: EmitTarget) -> UnfuseUnemittable {
        UnfuseUnemittable {
            target,
            unfused: Vec::new(),
        }
    }
}

impl Pass for UnfuseUnemittable {
    fn name(&self) -> &str {
        "unfuse-unemittable"
    }

    fn description(&self) -> &str {
        "replaces every fusion hloc's emitters cannot generate by the instructions it fused"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let cid = hlo::CompId::from_index(ci);
            let mut unfuse: Vec<InstrId> = Vec::new();
            for (id, i) in module.computations[ci].instructions() {
                if i.opcode() != Opcode::Fusion || wraps_one_instruction(module, i) {
                    continue;
                }
                match crate::emit::check_instruction(module, &self.target, cid, id) {
                    Ok(()) => {}
                    Err(CodegenError::Unsupported { op, reason, .. }) => {
                        self.unfused.push((
                            i.name().to_string(),
                            format!("it needs `{op}`, which its emitter lacks ({reason})"),
                        ));
                        unfuse.push(id);
                    }
                    // Other errors are the program builder's to report.
                    Err(_) => {}
                }
            }
            let unfused_here = !unfuse.is_empty();
            for id in unfuse {
                let Some(callee) = module.computations[ci].instr(id).calls() else {
                    continue;
                };
                let body = module.computation(callee).clone();
                let comp = &mut module.computations[ci];
                let args = comp.instr(id).operands().to_vec();
                let root = edit::clone_body_into(&mut names, &body, comp, &args);
                edit::replace_uses(comp, id, root);
                edit::remove_instructions(comp, &std::iter::once(id).collect());
                changed = true;
            }
            if unfused_here {
                edit::repair_order(&mut module.computations[ci]);
            }
        }
        if changed {
            call_graph::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

/// Whether fusion `fusion`'s computation holds one instruction besides its parameters.
fn wraps_one_instruction(module: &Module, fusion: &hlo::ir::Instruction) -> bool {
    fusion.calls().is_some_and(|fc| {
        let f = module.computation(fc);
        f.instruction_count() == f.parameters().len() + 1
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn fusion_names(m: &Module) -> Vec<String> {
        m.entry()
            .instructions()
            .filter(|(_, i)| i.opcode() == Opcode::Fusion)
            .map(|(_, i)| i.name().to_string())
            .collect()
    }

    fn same_results(before: &Module, after: &Module) {
        let args: Vec<_> = before
            .entry()
            .parameters()
            .iter()
            .enumerate()
            .map(|(k, &p)| {
                let shape = before.entry().instr(p).shape();
                hlo_eval::random::random_literal(shape, k as u64, 0, 1 << 20).unwrap()
            })
            .collect();
        let want = hlo_eval::evaluate(before, &args).unwrap();
        let got = hlo_eval::evaluate(after, &args).unwrap();
        assert!(hlo_eval::tolerance::literals_match(&got, &want));
    }

    /// A sine and cosine of a time embedding concatenated, then concatenated again beside
    /// an input (a diffusion model's): the fusion of the concatenates reads the cosine under
    /// a guard its emitter does not take. The exponential chain beside it is emitted.
    /// hloc's reach refuses that fusion before it forms; a reach that asks only the
    /// emitters' tables ([`TablesOnly`], as a module fused elsewhere arrives) forms it.
    const EMBEDDING: &str = "HloModule m
ENTRY e {
  t = f32[] parameter(0)
  x = f32[64,128] parameter(1)
  i = f32[32] iota(), iota_dimension=0
  tb = f32[32] broadcast(t), dimensions={}
  a = f32[32] multiply(tb, i)
  s = f32[32] sine(a)
  c = f32[32] cosine(a)
  cat = f32[64] concatenate(s, c), dimensions={0}
  b = f32[64,64] broadcast(cat), dimensions={1}
  n = f32[64,128] negate(x)
  ex = f32[64,128] exponential(n)
  y = f32[64,128] add(ex, x)
  r = f32[64,192] concatenate(x, b), dimensions={1}
  ROOT o = (f32[64,192], f32[64,128]) tuple(r, y)
}";

    /// [`crate::HlocReach`] without its confirmation by the emitter: the fusions a module
    /// fused by the emitters' tables alone arrives with.
    #[derive(Debug)]
    struct TablesOnly(crate::HlocReach);

    impl fusion::EmitterReach for TablesOnly {
        fn name(&self) -> &str {
            "tables-only"
        }

        fn rules(&self) -> &fusion::EmitterRules {
            self.0.rules()
        }

        fn can_emit(&self, c: &fusion::Candidate<'_>) -> Result<(), fusion::Unemittable> {
            self.0.can_emit(c)
        }
    }

    #[test]
    fn hlocs_reach_never_forms_what_this_pass_would_unfuse() {
        let mut m = hlo::parse_module(EMBEDDING).unwrap();
        let cpu = device::load("cpu").unwrap();
        fusion::fuse_logged_with(&mut m, &cpu, Arc::new(crate::HlocReach::cpu())).unwrap();
        assert!(!fusion_names(&m).is_empty(), "{}", hlo::print_module(&m));
        let mut pass = UnfuseUnemittable::default();
        assert!(!pass.run(&mut m).unwrap(), "{:?}", pass.unfused);
    }

    #[test]
    fn a_fusion_the_emitter_refuses_runs_unfused_and_the_others_stay() {
        let before = hlo::parse_module(EMBEDDING).unwrap();
        let mut m = before.clone();
        let cpu = device::load("cpu").unwrap();
        let reach = Arc::new(TablesOnly(crate::HlocReach::cpu()));
        fusion::fuse_logged_with(&mut m, &cpu, reach).unwrap();
        let fused = fusion_names(&m);
        let mut pass = UnfuseUnemittable::default();
        assert!(pass.run(&mut m).unwrap());
        assert_eq!(pass.unfused.len(), 1, "{:?}", pass.unfused);
        let left = fusion_names(&m);
        assert_eq!(left.len() + 1, fused.len(), "{}", hlo::print_module(&m));
        assert!(!left.contains(&pass.unfused[0].0));
        hlo::pass::verify::verify(&m).unwrap();
        same_results(&before, &m);
        // What is left the emitter takes: a second run changes nothing.
        assert!(!pass.run(&mut m).unwrap());
    }

    #[test]
    fn a_fusion_the_module_arrives_with_is_unfused_where_the_emitter_refuses_it() {
        let text = "HloModule m
fused_computation {
  p = f32[64] parameter(0)
  a = f32[64] acos(p)
  ROOT n = f32[64] negate(a)
}
fused_computation.1 {
  p.1 = f32[64] parameter(0)
  ROOT e = f32[64] exponential(p.1)
}
ENTRY e {
  x = f32[64] parameter(0)
  f = f32[64] fusion(x), kind=kLoop, calls=fused_computation
  ROOT g = f32[64] fusion(f), kind=kLoop, calls=fused_computation.1
}";
        let before = hlo::parse_module(text).unwrap();
        let mut m = before.clone();
        let mut pass = UnfuseUnemittable::default();
        assert!(pass.run(&mut m).unwrap());
        assert_eq!(fusion_names(&m), ["g"]);
        let printed = hlo::print_module(&m);
        assert!(printed.contains("acos("), "{printed}");
        assert!(!printed.contains("calls=fused_computation,"), "{printed}");
        hlo::pass::verify::verify(&m).unwrap();
        same_results(&before, &m);
    }

    #[test]
    fn a_fusion_of_one_instruction_stays() {
        // Unfused it is the same instruction: XLA's wrapped scatters, sorts and custom
        // calls run as library calls either way.
        let text = "HloModule m
fused_computation {
  p = f32[64] parameter(0)
  ROOT a = f32[64] acos(p)
}
ENTRY e {
  x = f32[64] parameter(0)
  ROOT f = f32[64] fusion(x), kind=kLoop, calls=fused_computation
}";
        let mut m = hlo::parse_module(text).unwrap();
        assert!(!UnfuseUnemittable::default().run(&mut m).unwrap());
        assert_eq!(fusion_names(&m), ["f"]);
    }
}
