//! Wherever a value crosses a boundary that aliases its buffer, the two sides must agree
//! on its layout, since the thunk builder hands on bytes, not elements:
//! - a tuple's buffers are its operands' buffers;
//! - a `get-tuple-element` is its tuple's element buffer;
//! - a while loop's state is one buffer per leaf, read by the condition and the body
//!   through their parameters, written by the body's root, initialized from the loop's
//!   operand and read by the loop's users;
//! - a conditional's branches read their operands through their parameters and write
//!   the conditional's result from their roots; a call likewise.
//!
//! Layouts in a module before XLA's layout assignment are not semantic: JAX writes a
//! transposed loop input as `f32[70,4,32]{2,0,1}` while the loop body declares its
//! parameter row-major, and XLA's layout assignment makes them agree. hloc's code generator
//! reads every buffer in the layout its instruction declares, so [`MatchBoundaryLayouts`]
//! makes every such boundary agree first: a loop's state adopts its body parameter's
//! layout (operand, condition parameter, body root and loop result converted to it), a
//! branch or callee keeps its parameters' and root's layouts (operands and roots converted),
//! a tuple operand is converted to its element's layout and a `get-tuple-element` reads
//! its element's layout. A conversion is a `copy` per differing array leaf (the code
//! generator emits it as a transposing kernel) and a rebuilt tuple around them; where
//! layouts agree nothing changes, so a module XLA laid out passes through untouched.
//!
//! First, an output donated from a parameter (`input_output_alias`) takes the parameter's
//! layout where the kernel computing it can write it ([`adopt_parameter_layouts`]), so the
//! buffer assignment can put the output in the parameter's bytes.

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::{add, repair_order, NameGen};
use hlo::ir::{Computation, Instruction};
use hlo::pass::{Pass, PassError};
use hlo::{CompId, InstrId, Module, Opcode, Shape};

use crate::alias_layouts::adopt_parameter_layouts;

/// The pass: see the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct MatchBoundaryLayouts;

/// Fresh names for the conversions, and whether any was made.
struct Fixer {
    names: NameGen,
    changed: bool,
}

/// Whether two array shapes lay out their elements in the same order (no layout counts
/// as row-major); `false` for tuples.
pub(crate) fn same_layout(a: &Shape, b: &Shape) -> bool {
    matches!((order(a), order(b)), (Some(x), Some(y)) if x == y)
}

/// Whether every array leaf of `a` is laid out as the corresponding leaf of `b` (shapes
/// of another structure count as agreeing: the verifier judges those).
fn same_layouts(a: &Shape, b: &Shape) -> bool {
    match (a.is_tuple(), b.is_tuple()) {
        (true, true) => {
            let (x, y) = (a.tuple_shapes(), b.tuple_shapes());
            x.len() != y.len() || x.iter().zip(y).all(|(p, q)| same_layouts(p, q))
        }
        (false, false) => order(a).is_none() || order(b).is_none() || same_layout(a, b),
        _ => true,
    }
}

/// The minor-to-major order of an array shape, row-major when it has no layout.
fn order(s: &Shape) -> Option<Vec<i64>> {
    let a = s.as_array()?;
    let rank = a.dims().len() as i64;
    Some(
        a.layout()
            .map(|l| l.minor_to_major.clone())
            .unwrap_or_else(|| (0..rank).rev().collect()),
    )
}

/// Appends to `comp` the instructions that give `value` the layouts of `to` (its logical
/// shape is `value`'s): a `copy` per array leaf whose layout differs, tuples rebuilt around
/// them. Returns `value` itself where every leaf agrees. The new instructions are appended:
/// the caller repairs the order.
fn relayout(comp: &mut Computation, fx: &mut Fixer, value: InstrId, to: &Shape) -> InstrId {
    let from = comp.instr(value).shape().clone();
    if same_layouts(&from, to) {
        return value;
    }
    fx.changed = true;
    let base = comp.instr(value).name().to_string();
    if !from.is_tuple() {
        let copy = Instruction::new(
            fx.names.fresh(&format!("{base}.relayout")),
            Opcode::Copy,
            to.clone(),
            vec![value],
        );
        return add(comp, copy);
    }
    let mut elements = Vec::with_capacity(to.tuple_shapes().len());
    for (k, (have, want)) in from
        .tuple_shapes()
        .iter()
        .zip(to.tuple_shapes())
        .enumerate()
    {
        let gte = Instruction::new(
            fx.names.fresh(&format!("{base}.{k}")),
            Opcode::GetTupleElement,
            have.clone(),
            vec![value],
        )
        .with_attr(AttrName::Index, AttrValue::Int(k as i64));
        let gte = add(comp, gte);
        elements.push(relayout(comp, fx, gte, want));
    }
    let tuple = Instruction::new(
        fx.names.fresh(&format!("{base}.relayout")),
        Opcode::Tuple,
        to.clone(),
        elements,
    );
    add(comp, tuple)
}

/// Gives `value` (a parameter or a loop) the shape `to` and its users other than
/// `get-tuple-element`s (which [`match_get_tuple_elements`] fixes) a conversion back to
/// the shape they were written against.
fn retarget(comp: &mut Computation, fx: &mut Fixer, value: InstrId, to: &Shape) {
    let old = comp.instr(value).shape().clone();
    if same_layouts(&old, to) {
        return;
    }
    fx.changed = true;
    comp.instr_mut(value).set_shape(to.clone());
    let users: Vec<InstrId> = comp
        .users(value)
        .iter()
        .copied()
        .filter(|&u| comp.instr(u).opcode() != Opcode::GetTupleElement)
        .collect();
    let is_root = comp.root() == value;
    if users.is_empty() && !is_root {
        return;
    }
    let back = relayout(comp, fx, value, &old);
    for u in users {
        let slots: Vec<usize> = (0..comp.instr(u).operands().len())
            .filter(|&j| comp.instr(u).operands()[j] == value)
            .collect();
        for j in slots {
            // Both ids are live instructions of `comp`.
            let _ = comp.set_operand(u, j, back);
        }
    }
    if is_root {
        let _ = comp.set_root(back);
    }
}

/// Converts operand `j` of `id` to the layouts of `to`.
fn convert_operand(comp: &mut Computation, fx: &mut Fixer, id: InstrId, j: usize, to: &Shape) {
    let op = comp.instr(id).operands()[j];
    let new = relayout(comp, fx, op, to);
    if new != op {
        let _ = comp.set_operand(id, j, new);
    }
}

/// Converts the root of `comp` to the layouts of `to`.
fn convert_root(comp: &mut Computation, fx: &mut Fixer, to: &Shape) {
    let root = comp.root();
    let new = relayout(comp, fx, root, to);
    if new != root {
        let _ = comp.set_root(new);
    }
}

/// Parameter `n`'s shape of computation `c`.
fn param_shape(module: &Module, c: CompId, n: usize) -> Option<Shape> {
    let comp = module.computation(c);
    comp.parameter(n).map(|p| comp.instr(p).shape().clone())
}

/// Makes every while loop, conditional and call of computation `cid` agree with its
/// callees on the layouts of what crosses between them.
fn match_calls(module: &mut Module, fx: &mut Fixer, cid: CompId) {
    let ids: Vec<InstrId> = module.computation(cid).instruction_ids().to_vec();
    for id in ids {
        let op = module.computation(cid).instr(id).opcode();
        if !matches!(op, Opcode::While | Opcode::Conditional | Opcode::Call) {
            continue;
        }
        let instr = module.computation(cid).instr(id).clone();
        match op {
            Opcode::While => {
                let (Some(cond), Some(body)) = (instr.while_condition(), instr.while_body()) else {
                    continue;
                };
                let Some(state) = param_shape(module, body, 0) else {
                    continue;
                };
                convert_operand(module.computation_mut(cid), fx, id, 0, &state);
                if let Some(p) = module.computation(cond).parameter(0) {
                    retarget(module.computation_mut(cond), fx, p, &state);
                    repair_order(module.computation_mut(cond));
                }
                convert_root(module.computation_mut(body), fx, &state);
                repair_order(module.computation_mut(body));
                retarget(module.computation_mut(cid), fx, id, &state);
            }
            Opcode::Conditional => {
                let branches = instr.branch_computations().unwrap_or_default();
                for (k, &b) in branches.iter().enumerate() {
                    if let Some(p) = param_shape(module, b, 0) {
                        if k + 1 < instr.operands().len() {
                            convert_operand(module.computation_mut(cid), fx, id, k + 1, &p);
                        }
                    }
                    convert_root(module.computation_mut(b), fx, instr.shape());
                    repair_order(module.computation_mut(b));
                }
            }
            Opcode::Call => {
                let Some(callee) = instr.to_apply() else {
                    continue;
                };
                for j in 0..instr.operands().len() {
                    if let Some(p) = param_shape(module, callee, j) {
                        convert_operand(module.computation_mut(cid), fx, id, j, &p);
                    }
                }
                convert_root(module.computation_mut(callee), fx, instr.shape());
                repair_order(module.computation_mut(callee));
            }
            _ => {}
        }
    }
    repair_order(module.computation_mut(cid));
}

/// Gives every `get-tuple-element` of `comp` its tuple element's layouts, converting back
/// to the layout it was written with for its users.
fn match_get_tuple_elements(comp: &mut Computation, fx: &mut Fixer) {
    let ids: Vec<InstrId> = comp.instruction_ids().to_vec();
    for id in ids {
        let instr = comp.instr(id);
        if instr.opcode() != Opcode::GetTupleElement {
            continue;
        }
        let tuple = comp.instr(instr.operands()[0]).shape();
        let k = instr.tuple_index().unwrap_or(0).max(0) as usize;
        let Some(element) = tuple.tuple_shapes().get(k).cloned() else {
            continue;
        };
        retarget(comp, fx, id, &element);
    }
    repair_order(comp);
}

/// Converts every tuple operand of `comp` to its element's layouts.
fn match_tuples(comp: &mut Computation, fx: &mut Fixer) {
    let ids: Vec<InstrId> = comp.instruction_ids().to_vec();
    for id in ids {
        let instr = comp.instr(id);
        if instr.opcode() != Opcode::Tuple {
            continue;
        }
        let wants = instr.shape().tuple_shapes().to_vec();
        for (j, want) in wants.iter().enumerate().take(instr.operands().len()) {
            convert_operand(comp, fx, id, j, want);
        }
    }
    repair_order(comp);
}

impl Pass for MatchBoundaryLayouts {
    fn name(&self) -> &str {
        "match-boundary-layouts"
    }

    fn description(&self) -> &str {
        "makes loops, branches, calls, tuples and get-tuple-elements agree on the layouts of the buffers they share (copies where they differ)"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut fx = Fixer {
            names: NameGen::new(module),
            changed: false,
        };
        fx.changed |= adopt_parameter_layouts(module);
        let comps: Vec<CompId> = module.computations().map(|(id, _)| id).collect();
        for &cid in &comps {
            match_calls(module, &mut fx, cid);
        }
        // Loops and calls may have changed parameter and result shapes: the elements read
        // from them, then the tuples built of them, follow.
        for &cid in &comps {
            match_get_tuple_elements(module.computation_mut(cid), &mut fx);
        }
        for &cid in &comps {
            match_tuples(module.computation_mut(cid), &mut fx);
        }
        Ok(fx.changed)
    }
}
