//! The collective combiners (as XLA's `AllReduceCombiner`, `AllGatherCombiner` and
//! `ReduceScatterCombiner`): independent all-reduces, all-gathers or reduce-scatters of
//! one computation over the same groups, with the same element type (and the same
//! reducer, the same gathered or scattered dimension) become one variadic collective (a
//! tuple of their results, read back by `get-tuple-element`). The bytes moved are the
//! same; the devices meet once instead of once per collective (a data-parallel step
//! all-reduces each gradient, and its norm, separately; an FSDP layer gathers each
//! weight). Two collectives combine only when neither depends on the other: each is
//! added to the first group of its kind whose members it does not depend on, in
//! def-before-use order, and the groups are applied one at a time, dependencies
//! recomputed after each, so that joining two groups never makes a cycle.

use std::collections::HashSet;

use hlo::attrs::AttrName;
use hlo::ir::edit::{self, NameGen};
use hlo::ir::reducer::{self, Reducer};
use hlo::{CompId, Computation, ElementType, InstrId, Instruction, Module, Opcode, Shape};

/// What collectives must share to combine: opcode, reducer (none for an all-gather),
/// element type, and their attributes other than `channel_id` and `to_apply` (groups,
/// `use_global_device_ids`, `dimensions`), as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kind {
    op: Opcode,
    reducer: Option<Reducer>,
    ty: ElementType,
    attrs: String,
    channel: bool,
}

/// How many collectives of each opcode the combiners removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Combined {
    pub all_reduce: usize,
    pub all_gather: usize,
    pub reduce_scatter: usize,
}

/// Combines the all-reduces, all-gathers and reduce-scatters of every computation of `m`.
pub(crate) fn combine_collectives(m: &mut Module) -> Combined {
    let mut removed = Combined::default();
    for index in 0..m.computations.len() {
        let id = CompId::from_index(index);
        while let Some((op, group)) = next_group(m, id) {
            let n = group.len() - 1;
            match op {
                Opcode::AllGather => removed.all_gather += n,
                Opcode::ReduceScatter => removed.reduce_scatter += n,
                _ => removed.all_reduce += n,
            }
            let mut names = NameGen::new(m);
            let comp = &mut m.computations[index];
            apply(comp, &group, &mut names);
        }
    }
    removed
}

/// The combinable kind of all-reduce, all-gather or reduce-scatter `instr`: one array
/// operand and result, a reducer `classify` recognizes (but for an all-gather), no
/// control edges.
pub(crate) fn kind_of(m: &Module, instr: &Instruction) -> Option<Kind> {
    let op = instr.opcode();
    if !matches!(
        op,
        Opcode::AllReduce | Opcode::AllGather | Opcode::ReduceScatter
    ) || instr.operands().len() != 1
        || !instr.shape().is_array()
        || !instr.control_predecessors().is_empty()
    {
        return None;
    }
    let reducer = match op {
        Opcode::AllGather => None,
        _ => Some(reducer::classify(m, instr.to_apply()?)?),
    };
    let attrs = instr
        .attrs()
        .iter()
        .filter(|a| {
            !matches!(
                a.name,
                AttrName::ChannelId | AttrName::ToApply | AttrName::Metadata
            )
        })
        .map(|a| format!("{}={:?}", a.name.as_str(), a.value))
        .collect::<Vec<_>>()
        .join(",");
    Some(Kind {
        op,
        reducer,
        ty: instr.shape().element_type()?,
        attrs,
        channel: instr.attr(&AttrName::ChannelId).is_some(),
    })
}

/// The first group of two or more collectives of computation `id` that combine, with
/// their opcode.
fn next_group(m: &Module, id: CompId) -> Option<(Opcode, Vec<InstrId>)> {
    let comp = m.computation(id);
    let order = comp.def_before_use_order().into_owned();
    let candidates: Vec<(InstrId, Kind)> = order
        .iter()
        .filter_map(|&i| kind_of(m, comp.instr(i)).map(|k| (i, k)))
        .collect();
    let mut groups: Vec<(Kind, Vec<InstrId>, HashSet<InstrId>)> = Vec::new();
    for (i, k) in candidates {
        // A member's dependants (itself included): `i` joins a group none of whose members
        // it depends on.
        let joins = groups
            .iter()
            .position(|(gk, _, below)| *gk == k && !below.contains(&i));
        match joins {
            Some(g) => {
                groups[g].1.push(i);
                let more = dependants(comp, i);
                groups[g].2.extend(more);
            }
            None => groups.push((k, vec![i], dependants(comp, i))),
        }
    }
    groups
        .into_iter()
        .find(|(_, members, _)| members.len() > 1)
        .map(|(k, members, _)| (k.op, members))
}

/// `id` and every instruction that depends on it (through operands or control edges).
fn dependants(comp: &Computation, id: InstrId) -> HashSet<InstrId> {
    let mut seen = HashSet::from([id]);
    let mut todo = vec![id];
    while let Some(i) = todo.pop() {
        let next = comp
            .users(i)
            .iter()
            .copied()
            .chain(comp.control_successors(i));
        for u in next.collect::<Vec<_>>() {
            if seen.insert(u) {
                todo.push(u);
            }
        }
    }
    seen
}

/// Replaces the collectives `group` of `comp` (of one opcode) by one variadic collective.
fn apply(comp: &mut Computation, group: &[InstrId], names: &mut NameGen) {
    let first = comp.instr(group[0]).clone();
    let operands: Vec<InstrId> = group.iter().map(|&g| comp.instr(g).operands()[0]).collect();
    let shapes: Vec<Shape> = group
        .iter()
        .map(|&g| comp.instr(g).shape().clone())
        .collect();
    let mut combined = Instruction::new(
        names.fresh(&format!("{}-combined", first.opcode().as_str())),
        first.opcode(),
        Shape::tuple(shapes.clone()),
        operands,
    );
    for a in first.attrs() {
        if a.name != AttrName::Metadata {
            combined.set_attr(a.name.clone(), a.value.clone());
        }
    }
    let combined = edit::add(comp, combined);
    let mut dead = HashSet::new();
    for (k, (&g, shape)) in group.iter().zip(shapes).enumerate() {
        let name = comp.instr(g).name().to_string();
        let gte = Instruction::new(
            names.fresh(&name),
            Opcode::GetTupleElement,
            shape,
            vec![combined],
        )
        .with_attr(AttrName::Index, hlo::attrs::AttrValue::Int(k as i64));
        let gte = edit::add(comp, gte);
        edit::replace_uses(comp, g, gte);
        dead.insert(g);
    }
    edit::remove_instructions(comp, &dead);
    edit::repair_order(comp);
}
