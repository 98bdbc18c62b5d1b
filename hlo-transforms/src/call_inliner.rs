//! Call inlining: every `call` is replaced by a copy of its callee's body, its parameters
//! bound to the call's operands; calls inside inlined bodies are inlined in turn.
//! Computations left without callers are removed. Calls marked `is_composite=true` and
//! calls into another execution thread are kept (XLA keeps them too).

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::{call_graph, edit};
use hlo::ir::{CompId, InstrId, Module};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The call inliner (`call-inliner`).
#[derive(Debug, Default)]
pub struct CallInliner;

impl Pass for CallInliner {
    fn name(&self) -> &str {
        "call-inliner"
    }

    fn description(&self) -> &str {
        "replaces every call by a copy of the called computation"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            // A call copied in may itself be a call: loop until none is left, bounded by
            // the depth of the call graph (no recursion in HLO; the bound guards bad input).
            for _round in 0..=module.computations.len() {
                let calls: Vec<(InstrId, CompId)> = module.computations[ci]
                    .instructions()
                    .filter(|(_, i)| inlinable(module, ci, i))
                    .filter_map(|(id, i)| Some((id, i.to_apply()?)))
                    .collect();
                if calls.is_empty() {
                    break;
                }
                for (call, callee) in calls {
                    if callee.index() == ci {
                        return Err(PassError::invalid(
                            self.name(),
                            "a computation calls itself",
                        ));
                    }
                    let callee_comp = module.computations[callee.index()].clone();
                    let comp = &mut module.computations[ci];
                    let args = comp.instr(call).operands.clone();
                    let root = edit::clone_body_into(&mut names, &callee_comp, comp, &args);
                    edit::replace_uses(comp, call, root);
                    let dead = std::iter::once(call).collect();
                    edit::remove_instructions(comp, &dead);
                    changed = true;
                }
                edit::repair_order(&mut module.computations[ci]);
            }
        }
        if changed {
            call_graph::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

fn inlinable(module: &Module, caller: usize, i: &hlo::ir::Instruction) -> bool {
    if i.opcode != Opcode::Call {
        return false;
    }
    if matches!(i.attr(&AttrName::IsComposite), Some(AttrValue::Bool(true))) {
        return false;
    }
    let Some(callee) = i.to_apply().and_then(|c| module.get_computation(c)) else {
        return false;
    };
    callee.execution_thread == module.computations[caller].execution_thread
}
