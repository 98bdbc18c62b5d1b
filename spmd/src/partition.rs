//! Partitioning: the module every device runs, from the propagation's decisions. Each
//! instruction of the entry computation is copied with its per-device shape after its
//! operands are resharded to what its decision asks; partial sums are all-reduced; the
//! `Sharding` custom calls disappear into the reshards they ask for. Parameters and the
//! root carry their (global) shardings, as in XLA's partitioned modules, so that a runner
//! knows how to split the global inputs and assemble the global outputs.

use std::collections::HashMap;

use hlo::attrs::{AttrName, AttrValue, SliceDim};
use hlo::ir::edit::{add_scalar_binary_computation, NameGen};
use hlo::ir::{call_graph, ComputationLayout, ModuleAttr, ModuleAttrValue};
use hlo::pass::Pass;
use hlo::sharding::{Sharding, ShardingAttr, ShardingKind};
use hlo::{CompId, ElementType, InstrId, Module, Opcode, Shape};

use crate::decision::{Decisions, ValueTiling};
use crate::emit::{local_shape, Emit};
use crate::error::SpmdError;
use crate::mask::mask_reduced_padding;
use crate::propagate::propagate;

/// A partitioned module and the decisions that made it.
#[derive(Clone, Debug)]
pub struct Partitioned {
    /// The per-device module (`num_partitions` = the device count).
    pub module: Module,
    /// The decisions, as `hloc partition --explain` prints them.
    pub explain: String,
}

/// The per-device module of annotated `module` on `devices` devices.
pub fn partition(module: &Module, devices: usize) -> Result<Partitioned, SpmdError> {
    let grid = hlo::collective_groups::Grid::of_module(module);
    if grid.count() > 1 {
        return Err(SpmdError::invalid(
            "module",
            format!(
                "already partitioned (replica_count={}, num_partitions={})",
                grid.replicas, grid.partitions
            ),
        ));
    }
    let mut m = module.clone();
    // Before inlining: which Shardy regions sit inside others is read off the calls.
    crate::sdy_nested::mark(&mut m)?;
    hlo_transforms::call_inliner::CallInliner
        .run(&mut m)
        .map_err(|e| SpmdError::invalid("module", format!("call inlining: {e}")))?;
    let decisions = propagate(&m, devices)?;
    let explain = decisions.explain_module(&m, m.entry());
    let adds = add_computations(&mut m, &decisions)?;
    let mut channel = 0;
    let entry = m.entry_id();
    let new = build(&mut m, entry, &decisions, &adds, None, &mut channel)?;
    m.set_entry(new)
        .map_err(|e| SpmdError::invalid("module", e.to_string()))?;
    strip_called_sharding_calls(&mut m);
    // Values only resharding read (a scalar broadcast made again at each user's shape).
    hlo::ir::edit::remove_dead_code_in_every_computation(&mut m);
    call_graph::remove_unreachable_computations(&mut m);
    // Combined after the unpartitioned computations are gone (their collectives, a manual
    // region's, are not run).
    let repeated = crate::dedupe::dedupe_collectives(&mut m);
    let combined = crate::combine::combine_collectives(&mut m);
    let mut explain = explain;
    if repeated > 0 {
        explain.push_str(&format!(
            "repeated collectives: {repeated} removed (the same value over the same groups again)
"
        ));
    }
    for (n, what, same) in [
        (combined.all_reduce, "all-reduce", "groups and reducer"),
        (combined.all_gather, "all-gather", "groups and dimension"),
        (
            combined.reduce_scatter,
            "reduce-scatter",
            "groups, dimension and reducer",
        ),
    ] {
        if n > 0 {
            explain.push_str(&format!(
                "{what} combiner: {n} {what}(s) joined independent ones of the same {same}\n"
            ));
        }
    }
    // A combined collective keeps its first member's reducer computation.
    call_graph::remove_unreachable_computations(&mut m);
    call_graph::sort_computations(&mut m);
    set_header(&mut m, devices);
    if let Err(errors) = hlo::verifier::verify(&m) {
        let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        return Err(SpmdError::invalid(
            "partitioned module",
            format!("fails verification: {}", text.join("; ")),
        ));
    }
    Ok(Partitioned { module: m, explain })
}

/// One scalar `add` computation per element type whose dots leave partial sums.
fn add_computations(
    m: &mut Module,
    decisions: &Decisions,
) -> Result<HashMap<ElementType, CompId>, SpmdError> {
    let mut names = NameGen::new(m);
    let mut types = Vec::new();
    partial_types(m, m.entry_id(), decisions, &mut types)?;
    Ok(types
        .into_iter()
        .map(|ty| {
            let c = add_scalar_binary_computation(m, &mut names, "add", Opcode::Add, ty);
            (ty, c)
        })
        .collect())
}

/// The element types of the dots and convolutions of `comp` (and the computations its
/// decisions partition with it) that leave partial sums.
fn partial_types(
    m: &Module,
    comp: CompId,
    decisions: &Decisions,
    types: &mut Vec<ElementType>,
) -> Result<(), SpmdError> {
    for (id, instr) in m.computation(comp).instructions() {
        let Some(d) = decisions.get(id) else { continue };
        if d.partial.is_some() && matches!(instr.opcode(), Opcode::Dot | Opcode::Convolution) {
            let ty = instr
                .shape()
                .element_type()
                .ok_or_else(|| SpmdError::invalid(instr.name(), "a dot of no element type"))?;
            if !types.contains(&ty) {
                types.push(ty);
            }
        }
        for c in &d.called {
            partial_types(m, c.comp, &c.decisions, types)?;
        }
    }
    Ok(())
}

/// The per-device copy of computation `comp_id` (the entry when `root_want` is `None`
/// and it is the module's entry; else a computation its decisions partition, whose root
/// is resharded to `root_want`), added to `m`; the computations it calls are built first.
/// `channel` is the last channel id used.
fn build(
    m: &mut Module,
    comp_id: CompId,
    decisions: &Decisions,
    adds: &HashMap<ElementType, CompId>,
    root_want: Option<&ValueTiling>,
    channel: &mut i64,
) -> Result<CompId, SpmdError> {
    let is_entry = comp_id == m.entry_id();
    let mut called: HashMap<InstrId, Vec<CompId>> = HashMap::new();
    let ids: Vec<InstrId> = m
        .computation(comp_id)
        .instructions()
        .map(|(id, _)| id)
        .collect();
    for id in ids {
        let Some(d) = decisions.get(id) else { continue };
        let mut new = Vec::with_capacity(d.called.len());
        for c in &d.called {
            new.push(build(
                m,
                c.comp,
                &c.decisions,
                adds,
                c.root.as_ref(),
                channel,
            )?);
        }
        if !new.is_empty() {
            called.insert(id, new);
        }
    }
    let comp = m.computation(comp_id).clone();
    let comp = &comp;
    // A computation built a second time (one body of two loops) gets fresh names.
    let name = format!("{}_spmd", comp.name());
    let again = m.computations.iter().any(|c| c.name() == name);
    let mut names = NameGen::new(m);
    let name = match again {
        true => names.fresh(&name),
        false => name,
    };
    let mut e = Emit::new(&name, names);
    e.set_channel(*channel);
    let mut value: HashMap<InstrId, InstrId> = HashMap::new();
    let decided = |id: InstrId| {
        decisions
            .get(id)
            .ok_or_else(|| SpmdError::invalid(comp.instr(id).name(), "no sharding decided"))
    };
    // Collectives added for a partially manual region's values must stay within a
    // manual coordinate (each instruction's additions checked after it is built).
    let mut copies = std::collections::HashSet::new();
    let mut pending: Option<(InstrId, usize)> = None;
    for &id in comp.def_before_use_order().iter() {
        if let Some((prev, mark)) = pending.take() {
            check_partial(&e, comp, decisions, prev, mark, &copies)?;
        }
        pending = Some((id, e.b.len()));
        let instr = comp.instr(id);
        let d = decided(id)?;
        if !instr.control_predecessors().is_empty() {
            return Err(SpmdError::unsupported(instr, "control predecessors"));
        }
        let mut operands = Vec::with_capacity(instr.operands().len());
        let mut tilings = Vec::with_capacity(instr.operands().len());
        for (i, &op) in instr.operands().iter().enumerate() {
            let now = decided(op)?.out.array().cloned();
            tilings.push(d.operands.get(i).cloned().flatten().or(now));
            let v = value[&op];
            let v = match (d.operands.get(i).cloned().flatten(), &decided(op)?.out) {
                (Some(to), _) if local_broadcast(comp, decisions, op, &to) => {
                    // A broadcast of a whole operand is made again at the shape the
                    // user needs instead of sliced.
                    let b = comp.instr(op);
                    let shape = local_shape(b.shape(), &to, b.name())?;
                    let src = value[&b.operands()[0]];
                    let dims = b.dimensions().unwrap_or_default().to_vec();
                    let i = e
                        .op(b.name(), Opcode::Broadcast, shape, vec![src])
                        .with_attr(AttrName::Dimensions, AttrValue::IntList(dims));
                    e.b.add(i)
                }
                (Some(to), ValueTiling::Array(from)) => {
                    e.reshard(v, comp.instr(op).shape(), from, &to, instr.name())?
                }
                (None, ValueTiling::Tuple(from)) => match d.tuple_operands.get(i) {
                    Some(Some(to)) => {
                        e.reshard_tuple(v, comp.instr(op).shape(), from, to, instr.name())?
                    }
                    _ => v,
                },
                _ => v,
            };
            operands.push(v);
        }
        mask_reduced_padding(&mut e, comp, instr, d, &tilings, &mut operands)?;
        for h in &d.halos {
            let t = tilings
                .get(h.operand)
                .cloned()
                .flatten()
                .ok_or_else(|| SpmdError::invalid(instr.name(), "a halo of a tuple operand"))?;
            let n = comp.instr(instr.operands()[h.operand]).shape().dims()[h.dim];
            let fill = match h.fill {
                Some(i) => operands[i],
                None => {
                    let ty = comp
                        .instr(instr.operands()[h.operand])
                        .shape()
                        .element_type()
                        .ok_or_else(|| SpmdError::invalid(instr.name(), "a halo of a tuple"))?;
                    e.zero(ty)?
                }
            };
            operands[h.operand] = e.halo(operands[h.operand], n, &t, h, fill, instr.name())?;
        }
        if crate::concat_split::applies(instr, d) {
            let t = d
                .local
                .array()
                .ok_or_else(|| SpmdError::invalid(instr.name(), "a tuple concatenate"))?;
            let dim = instr.dimensions().unwrap_or_default()[0] as usize;
            let lengths: Vec<i64> = instr
                .operands()
                .iter()
                .map(|&o| comp.instr(o).shape().dims()[dim])
                .collect();
            let shape = local_shape(instr.shape(), t, instr.name())?;
            let mut v = e.concat_split(&operands, &lengths, dim, t, &shape, instr.name())?;
            if let ValueTiling::Array(to) = &d.out {
                v = e.reshard(v, instr.shape(), t, to, instr.name())?;
            }
            value.insert(id, v);
            continue;
        }
        if is_pass_through(instr) {
            // The Sharding call and a manual region's boundaries: the operands, resharded,
            // are the value (a tuple of them where the call has several).
            let v = match operands.len() {
                1 => operands[0],
                _ => {
                    let shapes = operands
                        .iter()
                        .filter_map(|&o| e.b.get(o).map(|i| i.shape().clone()))
                        .collect();
                    let t = e.op(instr.name(), Opcode::Tuple, Shape::tuple(shapes), operands);
                    e.b.add(t)
                }
            };
            value.insert(id, v);
            continue;
        }
        let shape = match &d.local {
            ValueTiling::Array(t) => local_shape(instr.shape(), t, instr.name())?,
            // A manual region's op has its per-device shape already.
            ValueTiling::Manual => instr.shape().clone(),
            ValueTiling::Tuple(_) if instr.opcode() == Opcode::Tuple => Shape::tuple(
                operands
                    .iter()
                    .filter_map(|&o| e.b.get(o).map(|i| i.shape().clone()))
                    .collect(),
            ),
            ValueTiling::Tuple(ts) => Shape::tuple(
                instr
                    .shape()
                    .tuple_shapes()
                    .iter()
                    .zip(ts)
                    .map(|(s, t)| local_shape(s, t, instr.name()))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let mut copy = instr.clone();
        if again {
            copy.name = e.names.fresh(instr.name());
        }
        copy.operands = operands;
        copy.users.clear();
        copy.remove_attr(&AttrName::Sharding);
        if let Some(w) = &d.window {
            copy.set_attr(AttrName::Window, AttrValue::Window(w.clone()));
        }
        localize_sizes(&mut copy, comp, instr, &e, &shape);
        halo_extents(&mut copy, instr, d);
        if instr.opcode() == Opcode::GetTupleElement {
            let tuple = e.b.get(copy.operands[0]).map(|i| i.shape().clone());
            let index = instr.tuple_index().unwrap_or(0) as usize;
            let element = tuple.and_then(|t| t.tuple_shapes().get(index).cloned());
            copy.set_shape(element.ok_or_else(|| SpmdError::invalid(instr.name(), "tuple index"))?);
        } else {
            copy.set_shape(shape.clone());
        }
        if instr.opcode() == Opcode::Parameter && is_entry {
            copy.set_attr(AttrName::Sharding, sharding_attr(&d.out));
        }
        match (instr.opcode(), called.get(&id)) {
            (Opcode::While, Some(new)) => {
                copy.set_attr(AttrName::Condition, AttrValue::Computation(new[0]));
                copy.set_attr(AttrName::Body, AttrValue::Computation(new[1]));
            }
            (Opcode::Conditional, Some(new)) => {
                if instr.attr(&AttrName::BranchComputations).is_some() {
                    copy.set_attr(
                        AttrName::BranchComputations,
                        AttrValue::Computations(new.clone()),
                    );
                } else {
                    copy.set_attr(AttrName::TrueComputation, AttrValue::Computation(new[0]));
                    copy.set_attr(AttrName::FalseComputation, AttrValue::Computation(new[1]));
                }
            }
            _ => {}
        }
        let mut v = e.b.add(copy);
        copies.insert(v);
        if let Some(p) = &d.partial {
            let to_apply = match instr.opcode() {
                Opcode::Reduce => instr.to_apply(),
                _ => instr
                    .shape()
                    .element_type()
                    .and_then(|t| adds.get(&t).copied()),
            }
            .ok_or_else(|| {
                SpmdError::invalid(instr.name(), "no computation for the partial sums")
            })?;
            v = e.all_reduce(v, shape, p.groups.clone(), to_apply);
        }
        if let (ValueTiling::Array(from), ValueTiling::Array(to)) = (&d.local, &d.out) {
            v = e.reshard(v, instr.shape(), from, to, instr.name())?;
        }
        value.insert(id, v);
    }
    if let Some((prev, mark)) = pending.take() {
        check_partial(&e, comp, decisions, prev, mark, &copies)?;
    }
    let mut root = value[&comp.root()];
    let root_out = &decided(comp.root())?.out;
    *channel = e.channel();
    if !is_entry {
        let global = comp.root_instr().shape();
        root = match (root_out, root_want) {
            (ValueTiling::Tuple(from), Some(ValueTiling::Tuple(to))) if from != to => {
                e.reshard_tuple(root, global, from, to, comp.name())?
            }
            (ValueTiling::Array(from), Some(ValueTiling::Array(to))) if from != to => {
                e.reshard(root, global, from, to, comp.name())?
            }
            _ => root,
        };
        *channel = e.channel();
        let c =
            e.b.build(Some(root))
                .map_err(|err| SpmdError::invalid(comp.name(), err.to_string()))?;
        return Ok(m.add_computation(c));
    }
    if *root_out == ValueTiling::Manual {
        return Err(SpmdError::invalid(
            comp.root_instr().name(),
            "the root is a manual region's value (no region output sharding says how it is global)",
        ));
    }
    let mut c =
        e.b.build(Some(root))
            .map_err(|err| SpmdError::invalid("partitioned entry", err.to_string()))?;
    // The root carries its global sharding.
    c.instr_mut(root)
        .set_attr(AttrName::Sharding, sharding_attr(root_out));
    c.is_entry = true;
    Ok(m.add_computation(c))
}

/// Checks the collectives built for `id` (from builder index `mark` on, its own copy
/// aside) where it reads or makes a partially manual region's value
/// (`manual_partial::check_groups`); a region's entry reshards global values, unchecked,
/// but a nested region's entry reshards its enclosing region's value.
fn check_partial(
    e: &Emit,
    comp: &hlo::Computation,
    decisions: &Decisions,
    id: InstrId,
    mark: usize,
    copies: &std::collections::HashSet<InstrId>,
) -> Result<(), SpmdError> {
    let instr = comp.instr(id);
    // A region's entry is checked only where it reads a partially manual region's value
    // (a nested region's entry); an outer entry's own keys are its body's.
    let own = (!crate::rules_manual::enters(instr)).then_some(id);
    let keys = own
        .into_iter()
        .chain(instr.operands().iter().copied())
        .find_map(|o| decisions.partial_keys(o));
    let Some(keys) = keys else { return Ok(()) };
    let added: Vec<&hlo::Instruction> = (mark..e.b.len())
        .map(InstrId::from_index)
        .filter(|i| !copies.contains(i))
        .filter_map(|i| e.b.get(i))
        .collect();
    crate::manual_partial::check_groups(keys.len(), &added, keys, instr)
}

/// Computations other than the entry run as they are on every device (a loop body or a
/// branch whose values are whole, or a manual region's loop): a `Sharding` call in them
/// (a constraint in a scanned function) is its operand there, so it is replaced by it, and
/// `sharding=` annotations are dropped, as in XLA's partitioned modules.
fn strip_called_sharding_calls(m: &mut Module) {
    let entry = m.entry_id();
    for (index, c) in m.computations.iter_mut().enumerate() {
        if CompId::from_index(index) == entry {
            continue;
        }
        let ids: Vec<InstrId> = c.instructions().map(|(id, _)| id).collect();
        for id in ids {
            let i = c.instr(id);
            if i.opcode() == Opcode::CustomCall
                && i.custom_call_target() == Some("Sharding")
                && i.operands().len() == 1
            {
                let op = i.operands()[0];
                hlo::ir::edit::replace_uses(c, id, op);
            }
            c.instr_mut(id).remove_attr(&AttrName::Sharding);
        }
    }
}

/// A slice, dynamic-slice or gather that keeps a split dimension whole
/// (`rules_window.rs`) takes the local extent there: a full slice's limit and a gather's
/// full slice size are the operand's local length, a dynamic-slice's sizes its local
/// result's.
fn localize_sizes(
    copy: &mut hlo::Instruction,
    comp: &hlo::Computation,
    instr: &hlo::Instruction,
    e: &Emit,
    shape: &Shape,
) {
    match instr.opcode() {
        Opcode::Slice => {
            let global = comp.instr(instr.operands()[0]).shape().dims().to_vec();
            let Some(local) = e.b.get(copy.operands[0]).map(|i| i.shape().dims().to_vec()) else {
                return;
            };
            let Some(slice) = instr.slice() else { return };
            let slice: Vec<SliceDim> = slice
                .iter()
                .enumerate()
                .map(
                    |(d, s)| match s.start == 0 && s.limit == global[d] && s.stride == 1 {
                        true => SliceDim {
                            limit: local[d],
                            ..*s
                        },
                        false => *s,
                    },
                )
                .collect();
            copy.set_attr(AttrName::Slice, AttrValue::Slice(slice));
        }
        Opcode::DynamicSlice => {
            copy.set_attr(
                AttrName::DynamicSliceSizes,
                AttrValue::IntList(shape.dims().to_vec()),
            );
        }
        Opcode::Gather => {
            let global = comp.instr(instr.operands()[0]).shape().dims().to_vec();
            let Some(local) = e.b.get(copy.operands[0]).map(|i| i.shape().dims().to_vec()) else {
                return;
            };
            let Some(sizes) = instr.gather_slice_sizes() else {
                return;
            };
            let sizes = sizes
                .iter()
                .enumerate()
                .map(|(d, &n)| if n == global[d] { local[d] } else { n })
                .collect();
            copy.set_attr(AttrName::SliceSizes, AttrValue::IntList(sizes));
        }
        _ => {}
    }
}

/// A slice or pad whose operand was cut to its halo window along a dimension
/// (`halo_moves.rs`) takes that window whole there: the slice from its start with its
/// stride, the pad without padding.
fn halo_extents(copy: &mut hlo::Instruction, instr: &hlo::Instruction, d: &crate::Decision) {
    if d.halos.is_empty() {
        return;
    }
    match instr.opcode() {
        Opcode::Slice => {
            let Some(AttrValue::Slice(mut slice)) = copy.attr(&AttrName::Slice).cloned() else {
                return;
            };
            for h in &d.halos {
                if let Some(s) = slice.get_mut(h.dim) {
                    *s = SliceDim {
                        start: 0,
                        limit: h.length,
                        stride: s.stride,
                    };
                }
            }
            copy.set_attr(AttrName::Slice, AttrValue::Slice(slice));
        }
        Opcode::Pad => {
            let Some(mut padding) = instr.padding().cloned() else {
                return;
            };
            for h in &d.halos {
                if let Some(p) = padding.dims.get_mut(h.dim) {
                    p.low = 0;
                    p.high = 0;
                }
            }
            copy.set_attr(AttrName::Padding, AttrValue::Padding(padding));
        }
        _ => {}
    }
}

/// Custom calls whose value is their operands' (resharded by their decision): `Sharding`
/// (outside a manual region, or `{manual}` inside one) and the manual region's boundaries.
fn is_pass_through(instr: &hlo::Instruction) -> bool {
    instr.opcode() == Opcode::CustomCall
        && (instr.custom_call_target() == Some("Sharding")
            || crate::rules_manual::enters(instr)
            || crate::rules_manual::leaves(instr))
}

/// Whether `id` broadcasts an operand every device holds whole, and `to` splits only
/// dimensions the broadcast makes (none of the operand's): each device's piece is then
/// the broadcast of the whole operand at the piece's shape (a scalar's, a bias row's).
fn local_broadcast(
    comp: &hlo::Computation,
    decisions: &Decisions,
    id: InstrId,
    to: &crate::tiling::Tiling,
) -> bool {
    let i = comp.instr(id);
    if i.opcode() != Opcode::Broadcast {
        return false;
    }
    let Some(&operand) = i.operands().first() else {
        return false;
    };
    let whole = decisions
        .get(operand)
        .and_then(|d| d.out.array())
        .is_some_and(crate::tiling::Tiling::is_replicated);
    let dims = i.dimensions().unwrap_or_default();
    whole && dims.iter().all(|&d| to.tiles.get(d as usize) == Some(&1))
}

/// `sharding=` for a decided value.
fn sharding_attr(t: &ValueTiling) -> AttrValue {
    let s = match t {
        ValueTiling::Array(t) => t.to_sharding(),
        ValueTiling::Tuple(ts) => Sharding::new(ShardingKind::Tuple(
            ts.iter().map(|t| t.to_sharding()).collect(),
        )),
        ValueTiling::Manual => Sharding::new(ShardingKind::Manual),
    };
    AttrValue::Sharding(Box::new(ShardingAttr::new(s)))
}

/// `num_partitions` set to the device count, `entry_computation_layout` (if written) to
/// the per-device shapes.
fn set_header(m: &mut Module, devices: usize) {
    let entry = m.entry();
    let layout = ComputationLayout {
        parameters: entry
            .parameters()
            .iter()
            .map(|&p| entry.instr(p).shape().clone())
            .collect(),
        result: entry.root_instr().shape().clone(),
    };
    let n = devices as i64;
    let attrs = m.attrs_mut();
    for a in attrs.iter_mut() {
        if a.name == "entry_computation_layout" {
            a.value = ModuleAttrValue::Layout(layout.clone());
        }
    }
    match attrs.iter_mut().find(|a| a.name == "num_partitions") {
        Some(a) => a.value = ModuleAttrValue::Int(n),
        None => attrs.push(ModuleAttr {
            name: "num_partitions".into(),
            value: ModuleAttrValue::Int(n),
        }),
    }
}
