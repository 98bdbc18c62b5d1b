//! Copy insertion: adds `copy` instructions so that operations that write their result
//! into an operand's buffer never clobber a value that is still needed. Conservative (no
//! liveness analysis yet: a copy is added whenever the value *may* be needed elsewhere),
//! so it may add copies XLA's liveness-based pass would not; every copy is an identity, so
//! results never change.
//!
//! - **In-place ops**: the operand a `dynamic-update-slice` or `scatter` updates is copied
//!   when it is a parameter, a constant, or has another user.
//! - **While loops**: an element of the initial state is copied when it is a parameter, a
//!   constant, or used elsewhere (the loop updates its state in place); in the body, a
//!   root element that is a parameter, a constant, another state element passed to a
//!   different position, or repeated, is copied.
//! - **Entry results**: a result element that is a parameter or a constant, or appears
//!   twice in the result tuple, is copied (outputs get buffers of their own).

use std::collections::HashMap;

use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The pass (`copy-insertion`).
#[derive(Debug, Default)]
pub struct CopyInsertion;

fn owned_elsewhere(comp: &Computation, v: InstrId, user: InstrId) -> bool {
    let i = comp.instr(v);
    matches!(i.opcode, Opcode::Parameter | Opcode::Constant)
        || i.users.iter().any(|&u| u != user)
        || comp.root == v
}

fn copy_of(comp: &mut Computation, names: &mut NameGen, v: InstrId) -> InstrId {
    let i = comp.instr(v);
    let c = Instruction::new(
        names.fresh(&format!("copy.{}", i.name)),
        Opcode::Copy,
        (*i.shape).clone(),
        vec![v],
    );
    edit::add(comp, c)
}

/// Replaces operand `k` of `user` by a copy of it.
fn copy_operand(comp: &mut Computation, names: &mut NameGen, user: InstrId, k: usize) {
    let v = comp.instr(user).operands[k];
    let c = copy_of(comp, names, v);
    comp.instr_mut(user).operands[k] = c;
    comp.recompute_users();
}

impl Pass for CopyInsertion {
    fn name(&self) -> &str {
        "copy-insertion"
    }

    fn description(&self) -> &str {
        "adds copies so in-place updates (dynamic-update-slice, scatter, while state, outputs) clobber nothing live"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        let bodies: Vec<usize> = module
            .computations
            .iter()
            .flat_map(|c| {
                c.instructions()
                    .filter_map(|(_, i)| i.while_body())
                    .collect::<Vec<_>>()
            })
            .map(|c| c.index())
            .collect();
        let entry = module.entry.index();
        for ci in 0..module.computations.len() {
            let comp = &mut module.computations[ci];
            let ids: Vec<InstrId> = comp.instruction_ids().to_vec();
            for id in ids {
                let i = comp.instr(id);
                let in_place: Vec<usize> = match i.opcode {
                    Opcode::DynamicUpdateSlice => vec![0],
                    Opcode::Scatter => (0..i.operands.len() / 2).collect(),
                    Opcode::While => vec![0],
                    _ => Vec::new(),
                };
                for k in in_place {
                    let v = comp.instr(id).operands[k];
                    if comp.instr(id).opcode == Opcode::While {
                        changed |= copy_while_init(comp, &mut names, id);
                    } else if owned_elsewhere(comp, v, id) {
                        copy_operand(comp, &mut names, id, k);
                        changed = true;
                    }
                }
            }
            if bodies.contains(&ci) {
                changed |= copy_root_elements(comp, &mut names, true);
            }
            if ci == entry {
                changed |= copy_root_elements(comp, &mut names, false);
            }
            edit::repair_order(comp);
        }
        Ok(changed)
    }
}

/// Copies the elements of a while's initial tuple that are owned elsewhere.
fn copy_while_init(comp: &mut Computation, names: &mut NameGen, w: InstrId) -> bool {
    let init = comp.instr(w).operands[0];
    let t = comp.instr(init).clone();
    if t.opcode != Opcode::Tuple {
        // A whole tuple from elsewhere (a parameter, another op's result): copy each
        // element through get-tuple-element into a fresh tuple.
        let shapes = t.shape.tuple_shapes().to_vec();
        let mut elems = Vec::new();
        for (k, s) in shapes.into_iter().enumerate() {
            let g = Instruction::new(
                names.fresh("get-tuple-element"),
                Opcode::GetTupleElement,
                s,
                vec![init],
            )
            .with_attr(
                hlo::attrs::AttrName::Index,
                hlo::attrs::AttrValue::Int(k as i64),
            );
            let g = edit::add(comp, g);
            elems.push(copy_of(comp, names, g));
        }
        let nt = edit::add(
            comp,
            Instruction::new(
                names.fresh("tuple"),
                Opcode::Tuple,
                (*t.shape).clone(),
                elems,
            ),
        );
        comp.instr_mut(w).operands[0] = nt;
        comp.recompute_users();
        return true;
    }
    let shared_tuple = comp.instr(init).users.len() > 1 || comp.root == init;
    let mut changed = false;
    let mut ops = t.operands.clone();
    for op in ops.iter_mut() {
        let e = comp.instr(*op);
        if matches!(e.opcode, Opcode::Parameter | Opcode::Constant)
            || e.users.len() > 1
            || comp.root == *op
        {
            *op = copy_of(comp, names, *op);
            changed = true;
        }
    }
    if !changed {
        return false;
    }
    if shared_tuple {
        let nt = edit::add(
            comp,
            Instruction::new(names.fresh(&t.name), Opcode::Tuple, (*t.shape).clone(), ops),
        );
        comp.instr_mut(w).operands[0] = nt;
    } else {
        comp.instr_mut(init).operands = ops;
    }
    comp.recompute_users();
    true
}

/// Copies root tuple elements that would alias: parameters, constants, repeats, and in a
/// loop body state elements moved to another position.
fn copy_root_elements(comp: &mut Computation, names: &mut NameGen, body: bool) -> bool {
    let root = comp.root;
    let r = comp.instr(root).clone();
    if r.opcode != Opcode::Tuple {
        if !body && matches!(r.opcode, Opcode::Parameter | Opcode::Constant) {
            let c = copy_of(comp, names, root);
            comp.root = c;
            return true;
        }
        return false;
    }
    let param = comp.params.first().copied();
    let mut seen: HashMap<InstrId, usize> = HashMap::new();
    let mut ops = r.operands.clone();
    let mut changed = false;
    for (k, op) in ops.iter_mut().enumerate() {
        let e = comp.instr(*op);
        let moved_state = body
            && e.opcode == Opcode::GetTupleElement
            && Some(e.operands[0]) == param
            && e.tuple_index() != Some(k as i64);
        let repeated = seen.insert(*op, k).is_some();
        if matches!(e.opcode, Opcode::Parameter | Opcode::Constant) || moved_state || repeated {
            *op = copy_of(comp, names, *op);
            changed = true;
        }
    }
    if changed {
        comp.instr_mut(root).operands = ops;
        comp.recompute_users();
    }
    changed
}
