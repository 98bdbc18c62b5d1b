//! While-loop simplification:
//!
//! - **zero-trip loops**: when the condition is false on the initial state (evaluated
//!   from the constant elements of the initial tuple it reads), the loop is its initial
//!   value;
//! - **one-trip loops**: when the condition is true on the initial state and false on the
//!   state after one iteration (both from constants), the loop is its body applied once,
//!   inlined;
//! - **nested loop state**: a state tuple holding tuples becomes flat (its leaves); the
//!   nested values are rebuilt with `tuple` for the old readers, which the tuple
//!   simplifier then forwards;
//! - **duplicate loop state**: two elements with the same initial value whose next values
//!   are the same instruction (or which the body both passes through unchanged) are
//!   always equal; reads of the second become reads of the first, which leaves it dead;
//! - **dead loop state**: an element that the condition does not read, that no user of
//!   the loop reads, and that inside the body only feeds its own next value, is removed
//!   from the state (initial tuple, parameters, body root, every index renumbered).
//!
//! Body and condition must be called by this loop only (run `flatten-call-graph` first);
//! loops with side effects in the body are left alone.

use std::collections::{HashMap, HashSet};

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::{call_graph, edit};
use hlo::ir::{CompId, Computation, InstrId, Instruction, Module};
use hlo::literal::Literal;
use hlo::pass::{Pass, PassError};
use hlo::shape::Shape;
use hlo::Opcode;

/// The pass (`while-loop-simplifier`).
#[derive(Debug, Default)]
pub struct WhileLoopSimplifier;

impl Pass for WhileLoopSimplifier {
    fn name(&self) -> &str {
        "while-loop-simplifier"
    }

    fn description(&self) -> &str {
        "removes zero- and one-trip loops and dead loop state"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let mut changed = false;
        let mut sites = call_graph::call_sites(module);
        // Computations the conditions and bodies call, for evaluating them: one copy of
        // the module, made when first needed (ids stay valid during the run).
        let mut scratch: Option<Module> = None;
        for ci in 0..module.computations.len() {
            let loops: Vec<InstrId> = module.computations[ci]
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::While)
                .map(|(id, _)| id)
                .collect();
            for w in loops {
                let i = module.computations[ci].instr(w);
                let (Some(cond), Some(body)) = (i.while_condition(), i.while_body()) else {
                    continue;
                };
                if sites[cond.index()].len() != 1
                    || sites[body.index()].len() != 1
                    || cond.index() == ci
                    || body.index() == ci
                    || edit::has_side_effect(module, i)
                {
                    continue;
                }
                if let Some(trips) = trip_count_0_or_1(module, &mut scratch, ci, w, cond, body) {
                    let comp_body = module.computation(body).clone();
                    let comp = &mut module.computations[ci];
                    let init = comp.instr(w).operands[0];
                    let result = if trips == 0 {
                        init
                    } else {
                        edit::clone_body_into(&mut names, &comp_body, comp, &[init])
                    };
                    edit::replace_uses(comp, w, result);
                    edit::remove_instructions(comp, &std::iter::once(w).collect());
                    edit::repair_order(comp);
                    changed = true;
                    sites = call_graph::call_sites(module);
                    continue;
                }
                if flatten_nested_state(module, ci, w, cond, body, &mut names) {
                    changed = true;
                    sites = call_graph::call_sites(module);
                    continue;
                }
                let merged = merge_duplicate_state(module, ci, w, cond, body);
                if remove_dead_state(module, ci, w, cond, body, &mut names) || merged {
                    changed = true;
                    sites = call_graph::call_sites(module);
                }
            }
        }
        if changed {
            edit::remove_dead_code_in_every_computation(module);
            call_graph::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

/// Evaluates `target` of `comp` (whose parameter 0 is the loop state) knowing the state
/// elements in `known`; `None` when it depends on anything else or evaluation fails.
fn eval_with_known(
    module: &Module,
    scratch: &mut Option<Module>,
    comp: &Computation,
    target: InstrId,
    known: &HashMap<usize, Literal>,
) -> Option<Literal> {
    let p = *comp.params.first()?;
    let mut b = hlo::ir::ComputationBuilder::new("while_loop_simplifier_scratch");
    let mut map: HashMap<InstrId, InstrId> = HashMap::new();
    let order = comp.def_before_use_order();
    // Only the instructions `target` depends on.
    let mut needed: HashSet<InstrId> = HashSet::new();
    let mut stack = vec![target];
    while let Some(x) = stack.pop() {
        if needed.insert(x) {
            let i = comp.instr(x);
            if !(i.opcode == Opcode::GetTupleElement && i.operands[0] == p) {
                stack.extend(i.operands.iter().copied());
            }
        }
    }
    for &id in order.iter().filter(|id| needed.contains(id)) {
        let i = comp.instr(id);
        let copy = if i.opcode == Opcode::GetTupleElement && i.operands[0] == p {
            let k = usize::try_from(i.tuple_index()?).ok()?;
            Instruction::constant(i.name.clone(), (*i.shape).clone(), known.get(&k)?.clone())
        } else {
            if i.opcode == Opcode::Parameter || edit::has_side_effect(module, i) {
                return None;
            }
            let mut c = i.clone();
            c.users.clear();
            c.operands = i
                .operands
                .iter()
                .map(|o| map.get(o).copied())
                .collect::<Option<_>>()?;
            c.attrs.retain(|a| a.name != AttrName::ControlPredecessors);
            c
        };
        map.insert(id, b.add(copy));
    }
    let scratch_comp = b.build(Some(*map.get(&target)?)).ok()?;
    let scratch = scratch.get_or_insert_with(|| module.clone());
    let id = scratch.add_computation(scratch_comp);
    let value = hlo_eval::Evaluator::new(scratch)
        .with_size_limit(1 << 20)
        .call(id, Vec::new())
        .ok();
    scratch.computations.pop();
    value
}

/// 0 or 1 when the loop provably runs that many times (from constant initial state).
fn trip_count_0_or_1(
    module: &Module,
    scratch: &mut Option<Module>,
    ci: usize,
    w: InstrId,
    cond: CompId,
    body: CompId,
) -> Option<usize> {
    let comp = &module.computations[ci];
    let init = comp.instr(comp.instr(w).operands[0]);
    if init.opcode != Opcode::Tuple {
        return None;
    }
    let mut known: HashMap<usize, Literal> = HashMap::new();
    for (k, &e) in init.operands.iter().enumerate() {
        if let Some(l) = comp.instr(e).literal().filter(|l| !l.is_elided()) {
            known.insert(k, l.clone());
        }
    }
    let c = module.computation(cond);
    let is_true = |l: &Literal| match l.as_array().map(|a| a.data()) {
        Some(hlo::literal::ArrayData::Pred(v)) => v.first().copied(),
        _ => None,
    };
    let first = is_true(&eval_with_known(module, scratch, c, c.root, &known)?)?;
    if !first {
        return Some(0);
    }
    let b = module.computation(body);
    let root = b.root_instr();
    if root.opcode != Opcode::Tuple {
        return None;
    }
    let mut next: HashMap<usize, Literal> = HashMap::new();
    for (k, &e) in root.operands.iter().enumerate() {
        if let Some(l) = eval_with_known(module, scratch, b, e, &known) {
            next.insert(k, l);
        }
    }
    let second = is_true(&eval_with_known(module, scratch, c, c.root, &next)?)?;
    (!second).then_some(1)
}

/// Tuple indices read through `get-tuple-element`s of `p`; `None` if `p` has another use.
fn read_indices(comp: &Computation, p: InstrId) -> Option<HashSet<usize>> {
    let mut s = HashSet::new();
    if comp.root == p {
        return None;
    }
    for &u in &comp.instr(p).users {
        let i = comp.instr(u);
        match (i.opcode, i.tuple_index()) {
            (Opcode::GetTupleElement, Some(k)) => {
                s.insert(usize::try_from(k).ok()?);
            }
            _ => return None,
        }
    }
    Some(s)
}

/// True when the values of state element `k` in the body reach nothing but the root's
/// operand `k`.
fn only_feeds_itself(body: &Computation, k: usize) -> bool {
    let Some(&p) = body.params.first() else {
        return false;
    };
    let root = body.root;
    let mut stack: Vec<InstrId> = body
        .instr(p)
        .users
        .iter()
        .copied()
        .filter(|&g| body.instr(g).tuple_index() == Some(k as i64))
        .collect();
    let mut seen: HashSet<InstrId> = stack.iter().copied().collect();
    while let Some(x) = stack.pop() {
        if x == root {
            return false;
        }
        for &u in &body.instr(x).users {
            if u == root {
                let positions: Vec<usize> = body
                    .instr(root)
                    .operands
                    .iter()
                    .enumerate()
                    .filter(|(_, &o)| o == x)
                    .map(|(i, _)| i)
                    .collect();
                if positions != [k] {
                    return false;
                }
            } else if seen.insert(u) {
                stack.push(u);
            }
        }
    }
    true
}

/// The array leaves of a (nested) tuple shape, with their index paths.
fn leaves(shape: &Shape, path: &mut Vec<usize>, out: &mut Vec<(Vec<usize>, Shape)>) {
    match shape {
        Shape::Tuple(t) => {
            for (k, e) in t.iter().enumerate() {
                path.push(k);
                leaves(e, path, out);
                path.pop();
            }
        }
        s => out.push((path.clone(), s.clone())),
    }
}

/// The leaves of value `v` (of tuple shape `shape`) through nested get-tuple-elements.
fn leaf_values(
    comp: &mut Computation,
    names: &mut edit::NameGen,
    v: InstrId,
    shape: &Shape,
) -> Vec<InstrId> {
    let mut out = Vec::new();
    for (k, e) in shape.tuple_shapes().iter().enumerate() {
        let g = Instruction::new(
            names.fresh("get-tuple-element"),
            Opcode::GetTupleElement,
            e.clone(),
            vec![v],
        )
        .with_attr(AttrName::Index, AttrValue::Int(k as i64));
        let g = edit::add(comp, g);
        if e.is_tuple() {
            out.extend(leaf_values(comp, names, g, e));
        } else {
            out.push(g);
        }
    }
    out
}

/// A value of (nested) tuple shape `shape` built from its leaves, in order.
fn rebuild(
    comp: &mut Computation,
    names: &mut edit::NameGen,
    leaves: &mut std::slice::Iter<'_, InstrId>,
    shape: &Shape,
) -> InstrId {
    match shape {
        Shape::Tuple(t) => {
            let ops: Vec<InstrId> = t.iter().map(|e| rebuild(comp, names, leaves, e)).collect();
            edit::add(
                comp,
                Instruction::new(names.fresh("tuple"), Opcode::Tuple, shape.clone(), ops),
            )
        }
        _ => *leaves
            .next()
            .unwrap_or_else(|| unreachable!("one leaf per array")),
    }
}

/// Replaces the nested loop state of `w` by its flat leaves. True when it changed.
fn flatten_nested_state(
    module: &mut Module,
    ci: usize,
    w: InstrId,
    cond: CompId,
    body: CompId,
    names: &mut edit::NameGen,
) -> bool {
    let nested = (*module.computations[ci].instr(w).shape).clone();
    if !nested.tuple_shapes().iter().any(Shape::is_tuple) {
        return false;
    }
    let mut ls = Vec::new();
    leaves(&nested, &mut Vec::new(), &mut ls);
    let flat = Shape::tuple(ls.into_iter().map(|(_, s)| s).collect());
    // Condition and body: the flat parameter, the nested value rebuilt for old readers.
    for cid in [cond, body] {
        let cc = module.computation_mut(cid);
        let p = cc.params[0];
        let readers = cc.instr(p).users.clone();
        cc.instr_mut(p).set_shape(flat.clone());
        let elems: Vec<InstrId> = (0..flat.tuple_shapes().len())
            .map(|k| {
                let g = Instruction::new(
                    names.fresh("get-tuple-element"),
                    Opcode::GetTupleElement,
                    flat.tuple_shapes()[k].clone(),
                    vec![p],
                )
                .with_attr(AttrName::Index, AttrValue::Int(k as i64));
                edit::add(cc, g)
            })
            .collect();
        let nested_value = rebuild(cc, names, &mut elems.iter(), &nested);
        for r in readers {
            for op in &mut cc.instr_mut(r).operands {
                if *op == p {
                    *op = nested_value;
                }
            }
        }
        if cc.root == p {
            cc.root = nested_value;
        }
        if cid == body {
            let old_root = cc.root;
            let flat_elems = leaf_values(cc, names, old_root, &nested);
            let t = edit::add(
                cc,
                Instruction::new(
                    names.fresh("tuple"),
                    Opcode::Tuple,
                    flat.clone(),
                    flat_elems,
                ),
            );
            cc.root = t;
        }
        cc.recompute_users();
        edit::repair_order(cc);
    }
    // The loop: a flat initial value, the nested result rebuilt for its users.
    let comp = &mut module.computations[ci];
    let init = comp.instr(w).operands[0];
    let users = comp.instr(w).users.clone();
    let was_root = comp.root == w;
    let flat_init = leaf_values(comp, names, init, &nested);
    let t = edit::add(
        comp,
        Instruction::new(names.fresh("tuple"), Opcode::Tuple, flat.clone(), flat_init),
    );
    comp.instr_mut(w).operands = vec![t];
    comp.instr_mut(w).set_shape(flat.clone());
    let outs = leaf_values(comp, names, w, &flat);
    let result = rebuild(comp, names, &mut outs.iter(), &nested);
    for u in users {
        for op in &mut comp.instr_mut(u).operands {
            if *op == w {
                *op = result;
            }
        }
    }
    if was_root {
        comp.root = result;
    }
    comp.recompute_users();
    edit::repair_order(comp);
    true
}

/// Redirects reads of state elements that always equal an earlier element to that
/// element. True when something changed.
fn merge_duplicate_state(
    module: &mut Module,
    ci: usize,
    w: InstrId,
    cond: CompId,
    body: CompId,
) -> bool {
    let comp = &module.computations[ci];
    let init = comp.instr(comp.instr(w).operands[0]);
    if init.opcode != Opcode::Tuple || read_indices(comp, w).is_none() {
        return false;
    }
    let b = module.computation(body);
    let root = b.root_instr();
    let c = module.computation(cond);
    if root.opcode != Opcode::Tuple
        || b.params.first().and_then(|&p| read_indices(b, p)).is_none()
        || c.params.first().and_then(|&p| read_indices(c, p)).is_none()
    {
        return false;
    }
    let n = init.operands.len();
    let mut alias: Vec<Option<usize>> = vec![None; n];
    for k2 in 0..n {
        for k1 in 0..k2 {
            if alias[k1].is_some() {
                continue;
            }
            let same_init = init.operands[k1] == init.operands[k2];
            let same_next = root.operands[k1] == root.operands[k2]
                || (super::while_loop_constant_sinking::invariant(b, k1)
                    && super::while_loop_constant_sinking::invariant(b, k2));
            if same_init && same_next {
                alias[k2] = Some(k1);
                break;
            }
        }
    }
    // Only elements still read somewhere are worth redirecting.
    let mut changed = false;
    let redirect = |comp: &mut Computation, tuple: InstrId, alias: &[Option<usize>]| -> bool {
        let mut any = false;
        for g in comp.instr(tuple).users.clone() {
            let Some(k) = comp.instr(g).tuple_index() else {
                continue;
            };
            if let Some(Some(k1)) = alias.get(k as usize) {
                comp.instr_mut(g)
                    .set_attr(AttrName::Index, AttrValue::Int(*k1 as i64));
                any = true;
            }
        }
        any
    };
    for cid in [cond, body] {
        let cc = module.computation_mut(cid);
        let p = cc.params[0];
        changed |= redirect(cc, p, &alias);
    }
    changed |= redirect(&mut module.computations[ci], w, &alias);
    changed
}

fn remove_dead_state(
    module: &mut Module,
    ci: usize,
    w: InstrId,
    cond: CompId,
    body: CompId,
    names: &mut edit::NameGen,
) -> bool {
    let comp = &module.computations[ci];
    let wi = comp.instr(w);
    let n = wi.shape.tuple_shapes().len();
    if comp.root == w || n == 0 {
        return false;
    }
    let Some(outside) = read_indices(comp, w) else {
        return false;
    };
    let c = module.computation(cond);
    let Some(in_cond) = c.params.first().and_then(|&p| read_indices(c, p)) else {
        return false;
    };
    let b = module.computation(body);
    if b.root_instr().opcode != Opcode::Tuple
        || b.params.first().and_then(|&p| read_indices(b, p)).is_none()
    {
        return false;
    }
    let dead: Vec<usize> = (0..n)
        .filter(|k| !outside.contains(k) && !in_cond.contains(k) && only_feeds_itself(b, *k))
        .collect();
    if dead.is_empty() || dead.len() == n {
        return false;
    }
    let keep: Vec<usize> = (0..n).filter(|k| !dead.contains(k)).collect();
    let new_index = |k: i64| keep.iter().position(|&x| x as i64 == k).map(|x| x as i64);
    let new_shape = Shape::tuple(
        keep.iter()
            .map(|&k| wi.shape.tuple_shapes()[k].clone())
            .collect(),
    );
    // Condition and body: parameter shape, gte indices, body root.
    for cid in [cond, body] {
        let cc = module.computation_mut(cid);
        let p = cc.params[0];
        cc.instr_mut(p).set_shape(new_shape.clone());
        let users = cc.instr(p).users.clone();
        let mut dead_gtes = HashSet::new();
        for g in users {
            let k = cc.instr(g).tuple_index().unwrap_or(-1);
            match new_index(k) {
                Some(nk) => cc
                    .instr_mut(g)
                    .set_attr(AttrName::Index, AttrValue::Int(nk)),
                None => {
                    dead_gtes.insert(g);
                }
            }
        }
        if cid == body {
            let root = cc.root;
            let ops = cc.instr(root).operands.clone();
            let r = cc.instr_mut(root);
            r.operands = keep.iter().map(|&k| ops[k]).collect();
            r.set_shape(new_shape.clone());
            cc.recompute_users();
            // What computed the dead elements now feeds nothing: the final dead-code
            // sweep of the pass removes it, stale reads of the old state included.
        } else {
            edit::remove_instructions(cc, &dead_gtes);
        }
    }
    // The loop, its initial tuple and its users.
    let comp = &mut module.computations[ci];
    let init = comp.instr(w).operands[0];
    let elems: Vec<InstrId> = if comp.instr(init).opcode == Opcode::Tuple {
        let ops = comp.instr(init).operands.clone();
        keep.iter().map(|&k| ops[k]).collect()
    } else {
        keep.iter()
            .map(|&k| {
                let g = Instruction::new(
                    names.fresh("get-tuple-element"),
                    Opcode::GetTupleElement,
                    comp.instr(init).shape.tuple_shapes()[k].clone(),
                    vec![init],
                )
                .with_attr(AttrName::Index, AttrValue::Int(k as i64));
                edit::add(comp, g)
            })
            .collect()
    };
    let t = Instruction::new(
        names.fresh("tuple"),
        Opcode::Tuple,
        new_shape.clone(),
        elems,
    );
    let t = edit::add(comp, t);
    let wmut = comp.instr_mut(w);
    wmut.operands = vec![t];
    wmut.set_shape(new_shape);
    for g in comp.instr(w).users.clone() {
        if let Some(nk) = comp.instr(g).tuple_index().and_then(new_index) {
            comp.instr_mut(g)
                .set_attr(AttrName::Index, AttrValue::Int(nk));
        }
    }
    comp.recompute_users();
    edit::repair_order(comp);
    true
}
