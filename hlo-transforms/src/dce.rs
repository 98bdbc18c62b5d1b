//! Dead code elimination: unused instructions without side effects, computations no
//! longer reachable from the entry, and dead tuple elements of called computations (a
//! `call` whose users are all `get-tuple-element`s and whose callee is called only there
//! drops the root tuple elements nobody reads).

use std::collections::BTreeSet;

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::{call_graph, edit};
use hlo::ir::{CompId, InstrId, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::Shape;
use hlo::Opcode;

/// The DCE pass (`dce`).
#[derive(Debug, Default)]
pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &str {
        "dce"
    }

    fn description(&self) -> &str {
        "removes unused side-effect-free instructions, unreachable computations and dead tuple elements of calls"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut changed = remove_dead_call_outputs(module);
        changed |= edit::remove_dead_code_in_every_computation(module) > 0;
        changed |= call_graph::remove_unreachable_computations(module) > 0;
        Ok(changed)
    }
}

/// Shrinks root tuples of computations called by one `call` whose users are all
/// `get-tuple-element`s, dropping elements no user reads.
fn remove_dead_call_outputs(module: &mut Module) -> bool {
    let sites = call_graph::call_sites(module);
    let mut changed = false;
    for (callee_idx, callers) in sites.iter().enumerate() {
        let &[(caller, call)] = callers.as_slice() else {
            continue;
        };
        let callee = CompId::from_index(callee_idx);
        if callee == module.entry || caller == callee {
            continue;
        }
        let c = module.computation(caller);
        let call_instr = c.instr(call);
        if call_instr.opcode != Opcode::Call || c.root == call {
            continue;
        }
        let users = call_instr.users.clone();
        let mut read = BTreeSet::new();
        let mut all_gte = !users.is_empty();
        for &u in &users {
            match (c.instr(u).opcode, c.instr(u).tuple_index()) {
                (Opcode::GetTupleElement, Some(k)) => {
                    read.insert(k);
                }
                _ => all_gte = false,
            }
        }
        let body = module.computation(callee);
        let root = body.root_instr();
        if !all_gte || root.opcode != Opcode::Tuple || read.len() == root.operands.len() {
            continue;
        }
        let keep: Vec<usize> = (0..root.operands.len())
            .filter(|&k| read.contains(&(k as i64)))
            .collect();
        let root_id = body.root;
        let new_ops: Vec<InstrId> = keep.iter().map(|&k| root.operands[k]).collect();
        let new_shape = Shape::tuple(
            keep.iter()
                .map(|&k| root.shape.tuple_shapes()[k].clone())
                .collect(),
        );
        {
            let body = module.computation_mut(callee);
            let r = body.instr_mut(root_id);
            r.operands = new_ops;
            r.set_shape(new_shape.clone());
            body.recompute_users();
        }
        let c = module.computation_mut(caller);
        c.instr_mut(call).set_shape(new_shape);
        for &u in &users {
            if let Some(old) = c.instr(u).tuple_index() {
                let new = keep.iter().position(|&k| k as i64 == old).unwrap_or(0);
                c.instr_mut(u)
                    .set_attr(AttrName::Index, AttrValue::Int(new as i64));
            }
        }
        changed = true;
    }
    changed
}
