//! Async lowering (`async-lowering`): a generic async chain `async-start` ->
//! `async-update`* -> `async-done` computes its wrapped computation on every operand bound
//! along it (the start binds the first ones, each update the next ones). On a target that
//! runs one thing at a time the chain is that computation: each `async-done` whose chain
//! can be followed back to its start in the same computation (directly or through
//! tuples, get-tuple-elements, copies, barriers and metadata custom calls, not through a
//! loop, whose body may move the chain on) is replaced by a copy of
//! the wrapped computation's body on the bound operands; the starts and updates left
//! without users go. A chain whose state crosses a loop or a computation boundary is then
//! written as the tuples its states are (`async_tuples`): the start a tuple of its
//! operands and zeros, each update that tuple grown, the done the body on the operands it
//! holds. The done of a chain that binds another number of operands than its computation
//! takes is left as it is (the verifier judges it).

use std::collections::HashMap;

use hlo::ir::async_link::{trace_async_link, AsyncLink};
use hlo::ir::{call_graph, edit};
use hlo::ir::{CompId, Computation, InstrId, Module};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The async lowering pass (`async-lowering`).
#[derive(Debug, Default)]
pub struct AsyncLowering;

impl Pass for AsyncLowering {
    fn name(&self) -> &str {
        "async-lowering"
    }

    fn description(&self) -> &str {
        "replaces each generic async chain by its wrapped computation on the operands bound along it"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let dones: Vec<(InstrId, CompId, Vec<InstrId>)> = {
                let comp = &module.computations[ci];
                comp.instructions()
                    .filter(|(_, i)| i.opcode == Opcode::AsyncDone)
                    .filter_map(|(id, i)| {
                        let callee = i.calls()?;
                        let bound = bound_operands(comp, i.operands.first().copied()?)?;
                        let params = module.get_computation(callee)?.parameters().len();
                        (bound.len() == params && callee.index() != ci)
                            .then_some((id, callee, bound))
                    })
                    .collect()
            };
            if dones.is_empty() {
                continue;
            }
            // The bound operands were read before any done was replaced: a chain that
            // binds an earlier chain's done (`multiply-update(u, r)` with `r` a
            // `reduce-done`) must bind that done's replacement, not the removed done.
            let mut replaced: HashMap<InstrId, InstrId> = HashMap::new();
            for (done, callee, bound) in dones {
                let body = module.computations[callee.index()].clone();
                let comp = &mut module.computations[ci];
                let bound: Vec<InstrId> = bound
                    .iter()
                    .map(|b| replaced.get(b).copied().unwrap_or(*b))
                    .collect();
                let root = edit::clone_body_into(&mut names, &body, comp, &bound);
                edit::replace_uses(comp, done, root);
                replaced.insert(done, root);
                let dead = std::iter::once(done).collect();
                edit::remove_instructions(comp, &dead);
                changed = true;
            }
            edit::repair_order(&mut module.computations[ci]);
            // Dead-code removal reads the other computations: work on a copy.
            let mut comp = module.computations[ci].clone();
            edit::remove_dead_code(module, &mut comp);
            module.computations[ci] = comp;
        }
        if crate::async_tuples::materialize_async_states(module, &mut names) {
            for ci in 0..module.computations.len() {
                let mut comp = module.computations[ci].clone();
                edit::remove_dead_code(module, &mut comp);
                module.computations[ci] = comp;
            }
            changed = true;
        }
        if changed {
            call_graph::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

/// Every operand bound along the chain whose state `state` (an instruction of `comp`)
/// carries, in binding order: the start's operands, then each update's after its first.
/// `None` when the chain leaves `comp` or does not lead to a start.
fn bound_operands(comp: &Computation, state: InstrId) -> Option<Vec<InstrId>> {
    let mut steps = Vec::new();
    let mut at = state;
    // Each step is earlier than the one before, so the chain has at most one step per
    // instruction.
    let limit = comp.instruction_count() + 1;
    for _ in 0..limit {
        let AsyncLink::Found(step) = trace_async_link(|i| comp.get(i), at, &[], limit, false)
        else {
            return None;
        };
        let s = comp.get(step)?;
        steps.push(step);
        if s.opcode == Opcode::AsyncStart {
            let mut bound = Vec::new();
            for &id in steps.iter().rev() {
                let s = comp.get(id)?;
                let skip = usize::from(s.opcode == Opcode::AsyncUpdate);
                bound.extend(s.operands.iter().skip(skip).copied());
            }
            return Some(bound);
        }
        at = *s.operands.first()?;
    }
    None
}
