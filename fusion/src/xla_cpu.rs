//! Fusions XLA:CPU compiles and runs when it reads a fused module back.
//!
//! XLA's layout assignment keeps the layouts of a fusion's parameters, constants and root
//! and clears every other fused instruction's (fusion computations are layout-free
//! inside), and XLA:CPU's emitters abort on a value whose layout they need. A fused module
//! that XLA is to compile and run too must keep such values at the edge of a fusion. They
//! are, for the XLA version whose sources we read (the rules below mirror its checks, so
//! they must match it exactly rather than be tidied up):
//! - a value the loop emitter computes as a function of its own: XLA's computation
//!   partitioner makes one of an instruction read under several indexings (several users
//!   that are not all of XLA's elementwise opcodes on one shared indexing, an operand a
//!   concatenate reads twice, gather indices of more than one column);
//! - the operands of an in-place root (dynamic-update-slice, scatter), which their
//!   emitters compute as functions of their own;
//! - a transpose, which the cost analysis tests for being a bitcast, unless it is the root
//!   and reads a parameter;
//! - a reshape or transpose that the hero search reaches from the root through elementwise
//!   ops, which it tests for being a bitcast, unless it is the root reading a parameter;
//! - a concatenate that search reaches, unless it is the root and reads parameters only
//!   (the concatenate emitter computes its operands as functions of their own);
//! - a gather that is not in XLA's canonical form (`GatherSimplifier::IsSimplifiedGather`),
//!   which its indexing analysis requires inside fusions;
//! - a rank-1 reduce-window (a cumulative sum): XLA's reduce-window rewriter runs inside
//!   fusions too and wraps it in reshapes, which the hero search then tests;
//! - in a computation XLA:CPU may emit with its older per-element IR emitter, any operand
//!   of an op that is not elementwise: that emitter builds the operand's index with the
//!   operand's layout. XLA turns a small while loop into a call it emits that way, unless
//!   the loop holds an op that call cannot run (custom call, infeed, outfeed, a collective;
//!   versions differ on more, and have a size limit, so every other loop counts as small).
//!   A scatter does not count: XLA may first expand a small one into a loop of its own
//!   ([`per_element_computations`]).
//!
//! One more need is met when the fusion is built instead of by refusing it: XLA's shape
//! inference for a select with a non-scalar predicate takes the result's layout from the
//! predicate and then reads a detail of `on_true`'s layout, so a select whose predicate is
//! a parameter and whose `on_true` is fused reads a copy of the predicate made inside the
//! fusion ([`select_predicate_needs_copy`]).
//!
//! And one more, from XLA's algebraic simplifier: it sinks reshapes below an elementwise
//! op, and it takes a fusion of elementwise ops alone for one; cloning the fusion to the
//! reshapes' operand shape while its computation keeps the old one, it fails the verifier.
//! So a kernel of elementwise ops alone does not read only reshapes
//! ([`elementwise_of_reshapes`]).
//!
//! [`crate::XlaCpuReach`] holds the fusion passes to these rules.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use hlo::{CompId, Computation, InstrId, Module, Opcode};

/// The first member of a kernel (`members` of `comp`, root `root`) that keeps XLA:CPU from
/// compiling it, with why (mostly: a layout its emitter would need); `None` when XLA takes
/// the kernel as a fusion.
/// `per_element` says whether XLA:CPU may emit `comp` with its per-element IR emitter
/// ([`per_element_computations`]).
pub fn incompatibility(
    comp: &Computation,
    members: &[InstrId],
    root: InstrId,
    per_element: bool,
    position: impl Fn(InstrId) -> usize,
) -> Option<(InstrId, &'static str)> {
    if members.len() < 2 {
        return None;
    }
    let set: HashSet<InstrId> = members.iter().copied().collect();
    let inside = |id: InstrId| set.contains(&id);
    let users = |id: InstrId| -> Vec<InstrId> {
        let mut seen = HashSet::default();
        let users = comp.users(id).iter().copied();
        users.filter(|&u| inside(u) && seen.insert(u)).collect()
    };
    for &m in members {
        let i = comp.instr(m);
        if i.opcode() == Opcode::Gather && !is_simplified_gather(comp, m) {
            return Some((m, "a gather not in XLA's canonical form"));
        }
        if i.opcode() == Opcode::ReduceWindow
            && comp
                .operands(m)
                .first()
                .is_some_and(|&o| comp.instr(o).shape().dims().len() == 1)
        {
            return Some((
                m,
                "a rank-1 reduce-window (XLA rewrites it with reshapes inside the fusion)",
            ));
        }
        if i.opcode() == Opcode::Transpose
            && (m != root || comp.operands(m).first().is_some_and(|&o| inside(o)))
        {
            return Some((m, "a transpose XLA's cost analysis tests for a bitcast"));
        }
        let ops = comp.operands(m);
        if per_element && !is_elementwise(i.opcode()) {
            if let Some(&o) = ops.iter().find(|&&o| inside(o)) {
                return Some((o, "an operand of a non-elementwise op in a loop body"));
            }
        }
    }
    if matches!(
        comp.instr(root).opcode(),
        Opcode::DynamicUpdateSlice | Opcode::Scatter
    ) {
        if let Some(&o) = comp.operands(root).iter().find(|&&o| inside(o)) {
            return Some((o, "an operand of an in-place root"));
        }
    }
    if let Some(found) = hero_search_needs_layout(comp, root, &inside) {
        return Some(found);
    }
    if let Some(m) = partitioner_function_root(comp, members, root, position, &users) {
        return Some((m, "a value read under several indexings"));
    }
    elementwise_of_reshapes(comp, members, &inside).then_some((
        root,
        "the root of elementwise ops reading only reshapes (XLA's simplifier breaks that fusion)",
    ))
}

/// Whether a kernel is XLA's elementwise ops alone and its every input (operand from
/// outside, scalar constants aside) a reshape: XLA's simplifier would move the reshapes
/// below the fusion and break it.
pub fn elementwise_of_reshapes(
    comp: &Computation,
    members: &[InstrId],
    inside: &dyn Fn(InstrId) -> bool,
) -> bool {
    if !members
        .iter()
        .all(|&m| is_elementwise(comp.instr(m).opcode()))
    {
        return false;
    }
    let mut inputs = members
        .iter()
        .flat_map(|&m| comp.operands(m).iter().copied())
        .filter(|&o| !inside(o))
        .filter(|&o| {
            let i = comp.instr(o);
            !(i.opcode() == Opcode::Constant && i.shape().dims().is_empty())
        })
        .peekable();
    inputs.peek().is_some() && inputs.all(|o| comp.instr(o).opcode() == Opcode::Reshape)
}

/// Whether the partitioner must evaluate `id` under more than one indexing for one user.
fn evaluated_more_than_once(comp: &Computation, id: InstrId, users: &[InstrId]) -> bool {
    users.iter().any(|&u| {
        let ui = comp.instr(u);
        let positions = ui.operands().iter().filter(|&&o| o == id).count();
        match ui.opcode() {
            Opcode::Gather => {
                let dims = comp.instr(id).shape().dims();
                ui.operands().get(1) == Some(&id) && dims.len() >= 2 && dims[1] > 1
            }
            Opcode::Concatenate => positions > 1,
            _ => false,
        }
    })
}

/// The first internal member XLA's computation partitioner would make the root of a
/// function of its own (whose signature needs the value's layout). Walks users before
/// operands, giving each instruction a (function, indexing) pair as the partitioner does.
fn partitioner_function_root(
    comp: &Computation,
    members: &[InstrId],
    root: InstrId,
    position: impl Fn(InstrId) -> usize,
    users: &dyn Fn(InstrId) -> Vec<InstrId>,
) -> Option<InstrId> {
    let mut order = members.to_vec();
    order.sort_by_key(|&m| std::cmp::Reverse(position(m)));
    let mut ids: HashMap<InstrId, (u32, u32)> = HashMap::default();
    let (mut functions, mut indexings) = (0u32, 0u32);
    for m in order {
        let us = users(m);
        let is_root = m == root || us.is_empty();
        let first = us.first().and_then(|u| ids.get(u)).copied();
        let consistent = us.iter().all(|u| ids.get(u).copied() == first);
        let elementwise = us.iter().all(|&u| is_elementwise(comp.instr(u).opcode()));
        let id = if !is_root && consistent && elementwise {
            first.unwrap_or_default()
        } else if is_root || us.len() > 1 || evaluated_more_than_once(comp, m, &us) {
            if !is_root {
                return Some(m);
            }
            functions += 1;
            indexings += 1;
            (functions, indexings)
        } else {
            indexings += 1;
            (first.unwrap_or_default().0, indexings)
        };
        ids.insert(m, id);
    }
    None
}

/// What XLA:CPU's hero search needs a layout for: it walks from the root up elementwise
/// ops of at most three operands, testing each reshape or transpose it meets for being a
/// bitcast (which needs the layouts of both sides: the root reading a parameter), and
/// stops at a concatenate, which then gets the concatenate emitter (which needs it at the
/// root, reading parameters). XLA skips values of several users in some versions and not
/// in others; the walk here never skips them.
fn hero_search_needs_layout(
    comp: &Computation,
    root: InstrId,
    inside: &dyn Fn(InstrId) -> bool,
) -> Option<(InstrId, &'static str)> {
    let mut stack = vec![root];
    let mut seen = HashSet::default();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) || !inside(n) {
            continue;
        }
        let i = comp.instr(n);
        let operands = i.operands();
        if i.opcode() == Opcode::Concatenate {
            if n != root {
                return Some((n, "a concatenate the hero search picks below the root"));
            }
            if let Some(&o) = operands.iter().find(|&&o| inside(o)) {
                return Some((o, "an operand of a concatenate root"));
            }
            continue;
        }
        if operands.is_empty() || operands.len() > 3 {
            continue;
        }
        match i.opcode() {
            Opcode::Reshape | Opcode::Transpose if n != root || inside(operands[0]) => {
                return Some((
                    n,
                    "a reshape or transpose the hero search tests for a bitcast",
                ));
            }
            op if is_elementwise(op) => stack.extend(operands.iter().copied()),
            _ => {}
        }
    }
    None
}

/// XLA's elementwise opcodes, through which its partitioner shares functions and its hero
/// search walks: hlo's list, which is XLA's (plus `mulhi`, which XLA modules do not hold).
fn is_elementwise(op: Opcode) -> bool {
    op.is_elementwise()
}

/// Whether gather `id` of `comp` is in XLA's canonical form
/// ([`hlo::attrs::GatherDimensionNumbers::is_xla_canonical`]).
pub fn is_simplified_gather(comp: &Computation, id: InstrId) -> bool {
    let i = comp.instr(id);
    match (i.gather_dimension_numbers(), i.operands().get(1)) {
        (Some(dn), Some(&indices)) => dn.is_xla_canonical(comp.instr(indices).shape().dims().len()),
        _ => false,
    }
}

/// Whether select `id` of `comp`, fused with the members `inside` says, must read a copy
/// of its predicate: the predicate is a non-scalar value from outside the fusion (a
/// parameter of it) and `on_true` is computed inside (see the module documentation).
pub fn select_predicate_needs_copy(
    comp: &Computation,
    id: InstrId,
    inside: impl Fn(InstrId) -> bool,
) -> bool {
    let i = comp.instr(id);
    let [pred, on_true, _] = i.operands() else {
        return false;
    };
    i.opcode() == Opcode::Select
        && !inside(*pred)
        && !comp.instr(*pred).shape().dims().is_empty()
        && inside(*on_true)
}

/// The computations XLA:CPU may emit with its per-element IR emitter: the bodies and
/// conditions of while loops that hold no op its call emitter cannot run, and everything
/// they call.
pub fn per_element_computations(module: &Module) -> HashSet<CompId> {
    let mut memo: HashMap<CompId, bool> = HashMap::default();
    let mut out = HashSet::default();
    for (_, c) in module.computations() {
        for (_, i) in c.instructions() {
            if i.opcode() != Opcode::While {
                continue;
            }
            let parts: Vec<CompId> = i.called_computations_iter().collect();
            if parts
                .iter()
                .any(|&p| holds_call_unavailable(module, p, &mut memo))
            {
                continue;
            }
            let mut stack = parts;
            while let Some(p) = stack.pop() {
                if out.insert(p) {
                    let c = module.computation(p);
                    stack.extend(
                        c.instructions()
                            .flat_map(|(_, i)| i.called_computations_iter()),
                    );
                }
            }
        }
    }
    out
}

/// Whether `comp` or anything it calls holds an op XLA:CPU's call emitter cannot run.
fn holds_call_unavailable(module: &Module, comp: CompId, memo: &mut HashMap<CompId, bool>) -> bool {
    if let Some(&v) = memo.get(&comp) {
        return v;
    }
    memo.insert(comp, false);
    let c = module.computation(comp);
    let mut found = false;
    for (_, i) in c.instructions() {
        use Opcode::*;
        let unavailable = matches!(
            i.opcode(),
            CustomCall
                | Infeed
                | Outfeed
                | AllGather
                | AllGatherStart
                | AllReduce
                | AllReduceStart
                | AllToAll
                | CollectiveBroadcast
                | CollectivePermute
                | CollectivePermuteStart
                | RaggedAllToAll
                | ReduceScatter
                | Send
                | Recv
        );
        if unavailable
            || i.called_computations_iter()
                .collect::<Vec<_>>()
                .into_iter()
                .any(|p| holds_call_unavailable(module, p, memo))
        {
            found = true;
            break;
        }
    }
    memo.insert(comp, found);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(text: &str) -> Module {
        hlo::parse_module(text).unwrap()
    }

    fn find(m: &Module, name: &str) -> (CompId, InstrId) {
        for (cid, c) in m.computations() {
            for (id, i) in c.instructions() {
                if i.name() == name {
                    return (cid, id);
                }
            }
        }
        panic!("no {name}");
    }

    #[test]
    fn canonical_gathers() {
        let m = module(
            r#"HloModule m
ENTRY e {
  x = f32[10,4] parameter(0)
  i = s32[6,1] parameter(1)
  v = s32[6] parameter(2)
  a = f32[6,1,4] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  b = f32[6,4] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  c = f32[6,1,4] gather(x, v), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  ROOT t = (f32[6,1,4], f32[6,4], f32[6,1,4]) tuple(a, b, c)
}"#,
        );
        let comp = m.entry();
        let is = |n| is_simplified_gather(comp, find(&m, n).1);
        assert!(is("a"));
        assert!(!is("b"), "a collapsed dimension");
        assert!(!is("c"), "indices of rank 1");
    }

    #[test]
    fn loops_without_custom_calls_are_emitted_per_element() {
        let m = module(
            r#"HloModule m
c1 {
  s = (s32[]) parameter(0)
  k = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(k, n), direction=LT
}
b1 {
  s = (s32[]) parameter(0)
  k = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  k1 = s32[] add(k, one)
  ROOT t = (s32[]) tuple(k1)
}
c2 {
  s = (s32[]) parameter(0)
  k = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(k, n), direction=LT
}
b2 {
  s = (s32[]) parameter(0)
  k = s32[] get-tuple-element(s), index=0
  k1 = s32[] custom-call(k), custom_call_target="f"
  ROOT t = (s32[]) tuple(k1)
}
ENTRY e {
  z = s32[] constant(0)
  i = (s32[]) tuple(z)
  w1 = (s32[]) while(i), condition=c1, body=b1
  w2 = (s32[]) while(i), condition=c2, body=b2
  ROOT t = ((s32[]), (s32[])) tuple(w1, w2)
}"#,
        );
        let per_element = per_element_computations(&m);
        let id = |n: &str| m.computation_by_name(n).unwrap();
        assert!(per_element.contains(&id("b1")) && per_element.contains(&id("c1")));
        assert!(!per_element.contains(&id("b2")) && !per_element.contains(&id("c2")));
        assert!(!per_element.contains(&m.entry_id()));
    }
}
