//! While-loop invariant code motion: work in a loop body that depends only on state
//! elements the body passes through unchanged (and on constants) runs once, before the
//! loop, and reaches the body as new state elements passed through in turn. flax's
//! `OptimizedLSTMCell` concatenates its four gate kernels in every step; JAX's scans of
//! a model transpose or convert their weights in every step: each of those is hoisted.
//!
//! Only values worth a state element are hoisted: the last hoistable op of each chain the
//! body still needs. Broadcasts and iotas (which would only inflate the state), reshapes
//! and bitcasts (free), constants and get-tuple-elements stay in the body and read the
//! hoisted values there. Ops with side effects, nested control flow, fusions and custom
//! calls are never hoisted. The loop's body and condition must be called by this loop
//! only (run `flatten-call-graph` first), the body's root must be a tuple, and the loop,
//! its body parameter and its condition parameter must be read through
//! get-tuple-elements only, so that appending state elements changes nothing else. The
//! hoisted work runs even when the loop runs no iteration: it has no side effects.

use std::collections::{HashMap, HashSet};

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::{call_graph, edit};
use hlo::ir::{CompId, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::{Opcode, Shape};

use crate::extendable_loop::{extendable_loop, while_loops};
use crate::while_loop_constant_sinking::invariant;

/// The pass (`while-loop-invariant-code-motion`).
#[derive(Debug, Default)]
pub struct WhileLoopInvariantCodeMotion;

impl Pass for WhileLoopInvariantCodeMotion {
    fn name(&self) -> &str {
        "while-loop-invariant-code-motion"
    }

    fn description(&self) -> &str {
        "computes loop-invariant work of a while body once before the loop and passes it in as new loop state"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let whiles = while_loops(module);
        // Hoisting adds no computation and no call: the call sites stay valid.
        let sites = call_graph::call_sites(module);
        let mut changed = false;
        for (cid, wid) in whiles {
            changed |= hoist(module, &sites, (cid, wid), &mut names);
        }
        Ok(changed)
    }
}

/// Ops that are never a hoisted value of their own: free (reshape, bitcast,
/// get-tuple-element, tuple), or cheap and larger than their operands (broadcast, iota).
/// They stay in the body; constants are copied where needed.
fn stays(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::Broadcast
            | Opcode::Iota
            | Opcode::Reshape
            | Opcode::Bitcast
            | Opcode::Constant
            | Opcode::GetTupleElement
            | Opcode::Tuple
            | Opcode::Parameter
    )
}

/// Whether `i` may run before the loop: no side effect, no nested control flow or
/// calls (scalar computations of reductions, sorts, maps and scatters are fine).
fn movable(module: &Module, i: &Instruction) -> bool {
    use Opcode::*;
    !edit::has_side_effect(module, i)
        && !matches!(
            i.opcode,
            While
                | Conditional
                | Call
                | Fusion
                | CustomCall
                | AsyncStart
                | AsyncUpdate
                | AsyncDone
                | RngBitGenerator
                | Domain
        )
}

/// Hoists the invariant work of while loop `wid` of computation `cid`; whether anything
/// moved.
fn hoist(
    module: &mut Module,
    sites: &[Vec<(CompId, InstrId)>],
    (cid, wid): (CompId, InstrId),
    names: &mut edit::NameGen,
) -> bool {
    let Some(l) = extendable_loop(module, sites, cid, wid) else {
        return false;
    };
    let c = module.computation(cid);
    let (b, bp) = (module.computation(l.body), l.body_param);
    let n = c.instr(wid).shape().tuple_shapes().len();
    // Invariant values of the body, in def-before-use order.
    let mut inv: HashSet<InstrId> = HashSet::new();
    let order = b.def_before_use_order().into_owned();
    for &id in &order {
        let i = b.instr(id);
        let yes = match i.opcode {
            Opcode::GetTupleElement => {
                i.operands[0] == bp
                    && i.tuple_index()
                        .is_some_and(|t| t >= 0 && invariant(b, t as usize))
            }
            Opcode::Constant => true,
            Opcode::Parameter | Opcode::Tuple => false,
            _ => movable(module, i) && i.operands.iter().all(|o| inv.contains(o)),
        };
        if yes {
            inv.insert(id);
        }
    }
    let hoistable = |id: InstrId| inv.contains(&id) && !stays(b.instr(id).opcode);
    // The hoisted values: hoistable ones something that stays in the body reads.
    let boundary: Vec<InstrId> = order
        .iter()
        .copied()
        .filter(|&id| hoistable(id) && b.instr(id).users.iter().any(|&u| !hoistable(u)))
        .collect();
    if boundary.is_empty() {
        return false;
    }
    let boundary_shapes: Vec<Shape> = boundary
        .iter()
        .map(|&id| b.instr(id).shape().clone())
        .collect();
    // The invariant instructions some hoisted value depends on, in def-before-use order
    // (a get-tuple-element of the state is read from the loop's operand instead, so the
    // walk stops there).
    let mut needed: HashSet<InstrId> = HashSet::new();
    let mut stack: Vec<InstrId> = boundary.clone();
    while let Some(id) = stack.pop() {
        if !needed.insert(id) {
            continue;
        }
        let i = b.instr(id);
        if i.opcode != Opcode::GetTupleElement {
            stack.extend(i.operands.iter().copied());
        }
    }
    let cone: Vec<(InstrId, Instruction)> = order
        .iter()
        .filter(|id| needed.contains(id))
        .map(|&id| (id, b.instr(id).clone()))
        .collect();
    let init = c.instr(wid).operands[0];
    let init_shape = c.instr(init).shape().clone();
    let old_shape = c.instr(wid).shape().clone();
    // Clone the cone into the loop's computation.
    let comp = module.computation_mut(cid);
    let mut map: HashMap<InstrId, InstrId> = HashMap::new();
    for (id, src) in &cone {
        let id = *id;
        let new = if src.opcode == Opcode::GetTupleElement {
            let t = src.tuple_index().unwrap_or(0).max(0) as usize;
            let shape = init_shape
                .tuple_shapes()
                .get(t)
                .cloned()
                .unwrap_or_else(|| src.shape().clone());
            let g = Instruction::new(
                names.fresh(&format!("{}.hoisted", src.name)),
                Opcode::GetTupleElement,
                shape,
                vec![init],
            )
            .with_attr(AttrName::Index, AttrValue::Int(t as i64));
            edit::add(comp, g)
        } else {
            let mut copy = src.clone();
            copy.users.clear();
            copy.name = names.fresh(&format!("{}.hoisted", src.name));
            copy.operands = src.operands.iter().map(|o| map[o]).collect();
            copy.attrs
                .retain(|a| a.name != AttrName::ControlPredecessors);
            edit::add(comp, copy)
        };
        map.insert(id, new);
    }
    // The new initial state: the old elements, then the hoisted values.
    let mut elements: Vec<InstrId> = (0..n)
        .map(|t| {
            let g = Instruction::new(
                names.fresh(&format!("{}.{t}", comp.instr(init).name)),
                Opcode::GetTupleElement,
                init_shape.tuple_shapes()[t].clone(),
                vec![init],
            )
            .with_attr(AttrName::Index, AttrValue::Int(t as i64));
            edit::add(comp, g)
        })
        .collect();
    elements.extend(boundary.iter().map(|id| map[id]));
    let mut init_elems: Vec<Shape> = init_shape.tuple_shapes().to_vec();
    init_elems.extend(boundary_shapes.iter().cloned());
    let new_init = edit::add(
        comp,
        Instruction::new(
            names.fresh(&format!("{}.licm", comp.instr(init).name)),
            Opcode::Tuple,
            Shape::tuple(init_elems),
            elements,
        ),
    );
    let mut state: Vec<Shape> = old_shape.tuple_shapes().to_vec();
    state.extend(boundary_shapes.iter().cloned());
    let state = Shape::tuple(state);
    let _ = comp.set_operand(wid, 0, new_init);
    comp.instr_mut(wid).set_shape(state.clone());
    edit::repair_order(comp);
    // The condition reads the longer state.
    let kc = module.computation_mut(l.cond);
    kc.instr_mut(l.cond_param).set_shape(state.clone());
    // The body reads each hoisted value from the state and passes it through.
    let bc = module.computation_mut(l.body);
    bc.instr_mut(bp).set_shape(state.clone());
    let mut pass_through = Vec::with_capacity(boundary.len());
    for (j, (&id, shape)) in boundary.iter().zip(&boundary_shapes).enumerate() {
        let g = Instruction::new(
            names.fresh(&format!("{}.invariant", bc.instr(id).name)),
            Opcode::GetTupleElement,
            shape.clone(),
            vec![bp],
        )
        .with_attr(AttrName::Index, AttrValue::Int((n + j) as i64));
        let g = edit::add(bc, g);
        edit::replace_uses(bc, id, g);
        pass_through.push(g);
    }
    let root = bc.root;
    for g in pass_through {
        bc.instr_mut(root).operands.push(g);
    }
    bc.instr_mut(root).set_shape(state);
    bc.recompute_users();
    edit::repair_order(bc);
    true
}
