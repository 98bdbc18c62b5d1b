//! IR-editing helpers shared by the passes: fresh names, adding instructions, replacing
//! uses, cloning a called body into its caller, bulk removal of dead instructions and
//! order repair. Call-graph queries live in [`super::call_graph`].

use std::collections::{HashMap, HashSet};

use crate::attrs::{AttrName, AttrValue};
use crate::ir::{Computation, InstrId, Instruction, Module};
use crate::opcode::Opcode;

/// Hands out instruction names not used anywhere in the module (`base.N`).
#[derive(Debug, Default)]
pub struct NameGen {
    used: HashSet<String>,
    next: HashMap<String, u64>,
}

impl NameGen {
    /// Collects every instruction and computation name of `module`.
    pub fn new(module: &Module) -> NameGen {
        let mut used = HashSet::new();
        for c in &module.computations {
            used.insert(c.name.clone());
            for i in &c.instrs {
                used.insert(i.name.clone());
            }
        }
        NameGen {
            used,
            next: HashMap::new(),
        }
    }

    /// `name` itself when no instruction or computation has it yet, else a fresh one.
    pub fn keep_or_fresh(&mut self, name: &str) -> String {
        if self.used.insert(name.to_string()) {
            name.to_string()
        } else {
            self.fresh(name)
        }
    }

    /// A fresh name derived from `base` (its `.N` suffix replaced).
    pub fn fresh(&mut self, base: &str) -> String {
        let stem = match base.rsplit_once('.') {
            Some((s, n)) if !s.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => s,
            _ => base,
        };
        let stem = if stem.is_empty() { "v" } else { stem };
        let counter = self.next.entry(stem.to_string()).or_insert(1);
        loop {
            let name = format!("{stem}.{counter}");
            *counter += 1;
            if self.used.insert(name.clone()) {
                return name;
            }
        }
    }
}

/// True for instructions that must not be removed or merged even when unused:
/// parameters, I/O, collectives, RNG state, custom calls marked with side effects, and
/// instructions calling computations that have such instructions.
pub fn has_side_effect(module: &Module, instr: &Instruction) -> bool {
    use Opcode::*;
    let own = matches!(
        instr.opcode,
        Parameter
            | Send
            | SendDone
            | Recv
            | RecvDone
            | Infeed
            | Outfeed
            | Rng
            | RngGetAndUpdateState
            | AfterAll
            | AllReduceStart
            | AllReduceDone
            | AllGatherStart
            | AllGatherDone
            | CollectivePermuteStart
            | CollectivePermuteDone
            | AllReduce
            | AllGather
            | AllToAll
            | CollectivePermute
            | CollectiveBroadcast
            | ReduceScatter
            | RaggedAllToAll
            | OptimizationBarrier
            | AddDependency
    ) || (instr.opcode == CustomCall
        && matches!(
            instr.attr(&AttrName::CustomCallHasSideEffect),
            Some(AttrValue::Bool(true))
        ));
    own || instr.called_computations_iter().any(|c| {
        module.get_computation(c).is_some_and(|comp| {
            comp.instructions()
                .any(|(_, i)| i.opcode != Parameter && has_side_effect(module, i))
        })
    })
}

/// Puts the computation's order back into def-before-use order (after instructions were
/// appended at the end), dropping nothing.
pub fn repair_order(comp: &mut Computation) {
    let order = comp.def_before_use_order().into_owned();
    comp.order = order;
}

/// Removes the instructions for which `dead` is true (they must have no live users
/// outside the set, must not be the root or parameters), in one sweep.
pub fn remove_instructions(comp: &mut Computation, dead: &HashSet<InstrId>) {
    if dead.is_empty() {
        return;
    }
    comp.order.retain(|i| !dead.contains(i));
    for i in &mut comp.instrs {
        let control = AttrName::ControlPredecessors;
        if let Some(AttrValue::Instructions(v)) = i
            .attrs
            .iter_mut()
            .find(|a| a.name == control)
            .map(|a| &mut a.value)
        {
            v.retain(|p| !dead.contains(p));
            if v.is_empty() {
                i.attrs.retain(|a| a.name != control);
            }
        }
    }
    comp.recompute_users();
}

/// Runs [`remove_dead_code`] on every computation of the module (each one borrowed out of
/// the module in turn, since dead-code removal reads the module's other computations).
/// Returns how many instructions were removed in all.
pub fn remove_dead_code_in_every_computation(module: &mut Module) -> usize {
    let mut removed = 0;
    for ci in 0..module.computations.len() {
        let mut comp = std::mem::replace(&mut module.computations[ci], placeholder_computation());
        removed += remove_dead_code(module, &mut comp);
        module.computations[ci] = comp;
    }
    removed
}

/// A one-instruction computation to hold a slot while the real one is borrowed out.
fn placeholder_computation() -> crate::ir::Computation {
    let mut b = crate::ir::ComputationBuilder::new("");
    b.add(crate::ir::Instruction::parameter(
        "p",
        0,
        crate::shape::Shape::tuple(Vec::new()),
    ));
    b.build(None)
        .unwrap_or_else(|_| unreachable!("a one-parameter computation builds"))
}

/// Removes every instruction that is unused, not the root and free of side effects,
/// repeatedly (so whole dead chains go). Returns how many were removed.
pub fn remove_dead_code(module: &Module, comp: &mut Computation) -> usize {
    let mut dead = HashSet::new();
    let order: Vec<InstrId> = comp.order.clone();
    let mut live_users: HashMap<InstrId, usize> = order
        .iter()
        .map(|&id| (id, comp.instr(id).users.len()))
        .collect();
    let has_control_successor: HashSet<InstrId> = order
        .iter()
        .flat_map(|&id| comp.instr(id).control_predecessors().to_vec())
        .collect();
    for &id in order.iter().rev() {
        let instr = comp.instr(id);
        if id == comp.root
            || live_users[&id] > 0
            || has_control_successor.contains(&id)
            || has_side_effect(module, instr)
        {
            continue;
        }
        dead.insert(id);
        let mut seen = HashSet::new();
        for &op in &instr.operands {
            if seen.insert(op) {
                if let Some(n) = live_users.get_mut(&op) {
                    *n = n.saturating_sub(1);
                }
            }
        }
    }
    let n = dead.len();
    remove_instructions(comp, &dead);
    n
}

/// Adds to `module` the reducer-style computation `name(x, y) = op(x, y)` on scalars of
/// `ty` (a reduce's or scatter's `to_apply`).
pub fn add_scalar_binary_computation(
    module: &mut Module,
    names: &mut NameGen,
    name: &str,
    op: Opcode,
    ty: crate::shape::ElementType,
) -> crate::ir::CompId {
    use crate::ir::ComputationBuilder;
    use crate::shape::Shape;
    let mut b = ComputationBuilder::new(names.fresh(name));
    let x = b.add(Instruction::parameter(
        names.fresh("x"),
        0,
        Shape::scalar(ty),
    ));
    let y = b.add(Instruction::parameter(
        names.fresh("y"),
        1,
        Shape::scalar(ty),
    ));
    let r = b.add(Instruction::new(
        names.fresh(op.as_str()),
        op,
        Shape::scalar(ty),
        vec![x, y],
    ));
    let comp = b
        .build(Some(r))
        .unwrap_or_else(|_| unreachable!("two parameters and a binary op build"));
    module.add_computation(comp)
}

/// Adds `instr` to `comp` (appended; call [`repair_order`] when done) and returns its id.
pub fn add(comp: &mut Computation, instr: Instruction) -> InstrId {
    let id = InstrId::from_index(comp.instrs.len());
    for &op in &instr.operands {
        let users = &mut comp.instrs[op.index()].users;
        if !users.contains(&id) {
            users.push(id);
        }
    }
    comp.instrs.push(instr);
    comp.order.push(id);
    id
}

/// Makes every use of `old` (and the root, if it is `old`) use `new`. Both must be in
/// `comp` (ids from this computation, which the passes guarantee).
pub fn replace_uses(comp: &mut Computation, old: InstrId, new: InstrId) {
    // Both ids come from this computation, so the only error case cannot happen.
    let _ = comp.replace_all_uses(old, new);
}

/// Copies the instructions of `callee` (other than its parameters) into `caller`, with
/// parameter `k` replaced by `args[k]`, fresh names where needed, operands and control
/// predecessors remapped. Returns the id of the copy of the callee's root. The copies are
/// appended: call [`repair_order`] when done.
pub fn clone_body_into(
    names: &mut NameGen,
    callee: &Computation,
    caller: &mut Computation,
    args: &[InstrId],
) -> InstrId {
    let mut map: HashMap<InstrId, InstrId> = HashMap::new();
    for (k, &p) in callee.params.iter().enumerate() {
        if let Some(&a) = args.get(k) {
            map.insert(p, a);
        }
    }
    for &id in callee.def_before_use_order().iter() {
        if map.contains_key(&id) {
            continue;
        }
        let src = callee.instr(id);
        let mut copy = src.clone();
        copy.users.clear();
        copy.name = names.keep_or_fresh(&src.name);
        copy.operands = src.operands.iter().map(|o| map[o]).collect();
        for a in &mut copy.attrs {
            if let AttrValue::Instructions(v) = &mut a.value {
                v.iter_mut()
                    .for_each(|p| *p = map.get(p).copied().unwrap_or(*p));
            }
        }
        let new = add(caller, copy);
        map.insert(id, new);
    }
    map[&callee.root]
}

/// Gives every array shape without a layout the default descending one (`{rank-1, ..., 0}`),
/// in every computation of the module; scalars keep none (XLA prints `f32[]`). XLA's
/// compiler requires a layout on every array of a module it reads after layout
/// assignment (a fused module is one). Returns whether anything changed.
pub fn default_missing_layouts(module: &mut Module) -> bool {
    let mut changed = false;
    for comp in &mut module.computations {
        for id in comp.instruction_ids().to_vec() {
            changed |= default_layouts(comp.instr_mut(id).shape_mut());
        }
    }
    changed
}

/// Gives `s` (and every element of a tuple) the default layout where it has none; true
/// when something changed.
pub fn default_layouts(s: &mut crate::shape::Shape) -> bool {
    use crate::shape::{Layout, Shape};
    match s {
        Shape::Tuple(t) => t.iter_mut().fold(false, |c, e| default_layouts(e) | c),
        Shape::Array(_)
            if s.layout().is_none()
                && s.rank() > 0
                && s.element_type().is_some_and(|t| t.is_array_type()) =>
        {
            let r = s.rank();
            s.set_layout(Some(Layout::row_major(r)));
            true
        }
        Shape::Array(_) => false,
    }
}
