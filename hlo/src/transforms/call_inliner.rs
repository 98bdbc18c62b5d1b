//! Call inlining: every `call` is replaced by a copy of its callee's body, its parameters
//! bound to the call's operands; calls inside inlined bodies are inlined in turn.
//! Computations left without callers are removed. Calls marked `is_composite=true` and
//! calls into another execution thread are kept (XLA keeps them too).

use super::util;
use crate::attrs::{AttrName, AttrValue};
use crate::ir::{CompId, InstrId, Module};
use crate::opcode::Opcode;
use crate::pass::{Pass, PassError};

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
        let mut names = util::NameGen::new(module);
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
                    let root = util::clone_body_into(&mut names, &callee_comp, comp, &args);
                    util::replace_uses(comp, call, root);
                    let dead = std::iter::once(call).collect();
                    util::remove_instructions(comp, &dead);
                    changed = true;
                }
                util::repair_order(&mut module.computations[ci]);
            }
        }
        if changed {
            util::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

fn inlinable(module: &Module, caller: usize, i: &crate::ir::Instruction) -> bool {
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
