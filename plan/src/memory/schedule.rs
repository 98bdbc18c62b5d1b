//! Scheduling for the lowest peak (issue 32 item 3): several orders of a computation's
//! instructions — the stored def-before-use order, a depth-first post-order that visits
//! the largest operand first (XLA's DFS scheduler), and a list scheduler that runs next
//! whatever frees the most bytes net (XLA's list scheduler; ties in stored order, or to
//! the reader of the newest value) — each costed by a heap
//! simulation of the dataflow values; the lowest peak wins (ties: the earlier candidate).
//! Every order puts operands and control predecessors first and keeps instructions with
//! side effects in their stored order.

use std::collections::{BTreeSet, HashMap, HashSet};

use hlo::{CompId, InstrId, Module, Opcode};

use super::heap::{peak, Interval};
use super::values::{Dataflow, ShareReason};

/// A candidate order and its cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Which scheduler made it.
    pub name: &'static str,
    /// Live bytes at its peak step (the heap simulation, fragmentation aside).
    pub peak: u64,
    /// The instructions, in order.
    pub order: Vec<InstrId>,
}

/// The candidates for one computation and the winner.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// Every candidate, in the order tried.
    pub candidates: Vec<Candidate>,
    /// Index of the chosen (lowest peak) candidate.
    pub chosen: usize,
}

impl Schedule {
    /// The chosen order.
    pub fn order(&self) -> &[InstrId] {
        &self.candidates[self.chosen].order
    }
}

/// What must run before each instruction: operands, control predecessors, and the
/// previous instruction with side effects (in the stored order).
fn predecessors(
    module: &Module,
    comp: CompId,
    order: &[InstrId],
) -> HashMap<InstrId, Vec<InstrId>> {
    let c = module.computation(comp);
    let mut deps = HashMap::new();
    let mut last_effect: Option<InstrId> = None;
    for &id in order {
        let instr = c.instr(id);
        let mut d: Vec<InstrId> = instr
            .operands()
            .iter()
            .chain(instr.control_predecessors())
            .copied()
            .collect();
        if hlo::ir::edit::has_side_effect(module, instr) && instr.opcode() != Opcode::Parameter {
            d.extend(last_effect);
            last_effect = Some(id);
        }
        d.sort_unstable();
        d.dedup();
        deps.insert(id, d);
    }
    deps
}

/// The live ranges of the values held in `comp` under `order`; a value of a computation
/// an instruction calls is live while that instruction runs.
pub fn intervals(
    module: &Module,
    comp: CompId,
    flow: &Dataflow,
    order: &[InstrId],
) -> Vec<Interval> {
    let c = module.computation(comp);
    let pos: HashMap<InstrId, usize> = order.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let end = order.len().saturating_sub(1);
    let is_entry = comp == module.entry_id();
    let callee_step = callee_steps(module, comp, &pos);
    let donated = donated_outputs(flow);
    let mut out = Vec::new();
    for (id, v) in flow.values.iter().enumerate() {
        let start = v
            .positions
            .iter()
            .filter(|p| p.comp == comp)
            .filter_map(|p| pos.get(&p.instr))
            .min();
        let Some(&start) = start else {
            if let Some(&at) = callee_step.get(&v.def.comp) {
                out.push(Interval {
                    bytes: v.bytes,
                    start: at,
                    end: at,
                });
            }
            continue;
        };
        let last = v
            .uses
            .iter()
            .filter(|u| u.comp == comp)
            .filter_map(|u| pos.get(&u.instr))
            .max()
            .copied()
            .unwrap_or(start)
            .max(start);
        let root_holds = v
            .positions
            .iter()
            .any(|p| p.comp == comp && p.instr == c.root());
        let is_parameter = v.def.comp == comp && c.instr(v.def.instr).opcode() == Opcode::Parameter;
        let (start, last) = match () {
            _ if is_parameter => (0, end),
            _ if (is_entry && v.live_out) || root_holds => (start, end),
            _ => (start, last),
        };
        // An entry output written into a donated parameter's bytes takes none of its
        // own (the parameter is live from the start); counted, it would make every
        // order that writes outputs early (an optimizer's updates right after each
        // gradient) look costlier than one that makes every gradient first.
        let bytes = if is_entry && donated.contains(&id) {
            0
        } else {
            v.bytes
        };
        out.push(Interval {
            bytes,
            start,
            end: last,
        });
    }
    out
}

/// The values written into a donated parameter's bytes (the module's
/// `input_output_alias`).
fn donated_outputs(flow: &Dataflow) -> HashSet<usize> {
    flow.shares
        .iter()
        .filter(|s| s.reason == ShareReason::Donated)
        .map(|s| s.output)
        .collect()
}

/// For every computation that an instruction of `comp` calls (directly or through the
/// computations it calls), the step of that instruction (the first, if several).
fn callee_steps(
    module: &Module,
    comp: CompId,
    pos: &HashMap<InstrId, usize>,
) -> HashMap<CompId, usize> {
    let mut steps: HashMap<CompId, usize> = HashMap::new();
    for (id, instr) in module.computation(comp).instructions() {
        let Some(&at) = pos.get(&id) else { continue };
        let mut todo = instr.called_computations();
        while let Some(cc) = todo.pop() {
            if cc == comp || steps.get(&cc).is_some_and(|&s| s <= at) {
                continue;
            }
            steps.insert(cc, at);
            for (_, i) in module.computation(cc).instructions() {
                todo.extend(i.called_computations());
            }
        }
    }
    steps
}

/// Depth-first post-order from the root (then any instruction not reached, in stored
/// order), visiting an instruction's dependencies largest result first.
fn dfs_by_size(
    module: &Module,
    comp: CompId,
    stored: &[InstrId],
    deps: &HashMap<InstrId, Vec<InstrId>>,
) -> Vec<InstrId> {
    let c = module.computation(comp);
    let size = |id: InstrId| super::values::shape_bytes_all(c.instr(id).shape());
    let mut done: BTreeSet<InstrId> = BTreeSet::new();
    let mut out = Vec::with_capacity(stored.len());
    let starts = std::iter::once(c.root()).chain(stored.iter().copied());
    for start in starts {
        if done.contains(&start) || !deps.contains_key(&start) {
            continue;
        }
        let mut stack: Vec<(InstrId, Vec<InstrId>)> = Vec::new();
        let push = |id: InstrId, stack: &mut Vec<(InstrId, Vec<InstrId>)>| {
            let mut ds: Vec<InstrId> = deps.get(&id).cloned().unwrap_or_default();
            // Popped from the end: the largest last, so visited first.
            ds.sort_by_key(|&d| (size(d), std::cmp::Reverse(d)));
            stack.push((id, ds));
        };
        done.insert(start);
        push(start, &mut stack);
        while let Some((id, ds)) = stack.last_mut() {
            match ds.pop() {
                Some(d) if !done.contains(&d) && deps.contains_key(&d) => {
                    done.insert(d);
                    push(d, &mut stack);
                }
                Some(_) => {}
                None => {
                    out.push(*id);
                    stack.pop();
                }
            }
        }
    }
    out
}

/// A list scheduler: of the instructions whose dependencies ran, the one that frees the
/// most bytes net of what it defines; ties go to stored order, or with `recent` first to
/// the one reading the most recently scheduled value. The net bytes alone cannot tell an
/// optimizer step's next weight gradient (a GEMM starting a value) from the moment update
/// reading the gradient just made (a kernel writing an output of the same size, the
/// gradient still read by the other moment): both score minus the gradient's size, and
/// the stored order runs every gradient first, all of them live at once
/// (`mlp_adam_step_donated`: three 256 kB gradients). Reading the newest value first
/// finishes each gradient's readers before the next gradient starts.
fn list_greedy(
    module: &Module,
    comp: CompId,
    stored: &[InstrId],
    deps: &HashMap<InstrId, Vec<InstrId>>,
    (free, recent): (&HashSet<InstrId>, bool),
) -> Vec<InstrId> {
    let c = module.computation(comp);
    let rank: HashMap<InstrId, usize> = stored.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let mut waiting: HashMap<InstrId, usize> = HashMap::new();
    let mut users: HashMap<InstrId, Vec<InstrId>> = HashMap::new();
    for (&id, ds) in deps {
        waiting.insert(id, ds.iter().filter(|d| deps.contains_key(d)).count());
        for d in ds {
            users.entry(*d).or_default().push(id);
        }
    }
    // Operands' readers not yet run, to know when an operand dies.
    let mut readers_left: HashMap<InstrId, usize> = HashMap::new();
    for &id in stored {
        for &o in c.instr(id).operands() {
            *readers_left.entry(o).or_default() += 1;
        }
    }
    let root = c.root();
    let size = |id: InstrId| {
        if free.contains(&id) {
            0
        } else {
            super::values::shape_bytes_all(c.instr(id).shape()) as i64
        }
    };
    let mut ready: BTreeSet<(usize, InstrId)> = stored
        .iter()
        .filter(|id| waiting.get(id) == Some(&0))
        .map(|&id| (rank[&id], id))
        .collect();
    let mut out = Vec::with_capacity(stored.len());
    // Each scheduled instruction's position in `out`.
    let mut at: HashMap<InstrId, usize> = HashMap::new();
    while !ready.is_empty() {
        let best = ready
            .iter()
            .max_by_key(|&&(r, id)| {
                let newest = c
                    .instr(id)
                    .operands()
                    .iter()
                    .filter_map(|o| at.get(o))
                    .max()
                    .map_or(0, |&k| k + 1);
                let mut ops: Vec<InstrId> = c.instr(id).operands().to_vec();
                ops.sort_unstable();
                ops.dedup();
                let freed: i64 = ops
                    .iter()
                    .filter(|&&o| o != root)
                    .filter(|&&o| {
                        let n = c.instr(id).operands().iter().filter(|&&x| x == o).count();
                        readers_left.get(&o) == Some(&n)
                    })
                    .map(|&o| size(o))
                    .sum();
                let newest = if recent { newest } else { 0 };
                (freed - size(id), newest, std::cmp::Reverse(r))
            })
            .copied();
        let Some((r, id)) = best else { break };
        ready.remove(&(r, id));
        at.insert(id, out.len());
        out.push(id);
        for &o in c.instr(id).operands() {
            if let Some(n) = readers_left.get_mut(&o) {
                *n -= 1;
            }
        }
        for &u in users.get(&id).into_iter().flatten() {
            if let Some(w) = waiting.get_mut(&u) {
                *w -= 1;
                if *w == 0 {
                    ready.insert((rank[&u], u));
                }
            }
        }
    }
    out
}

/// Schedules `comp` (see the module docs).
pub fn schedule(module: &Module, comp: CompId, flow: &Dataflow) -> Schedule {
    let stored: Vec<InstrId> = module.computation(comp).def_before_use_order().into_owned();
    let deps = predecessors(module, comp, &stored);
    // Instructions whose whole result goes into donated parameters' bytes.
    let donated = donated_outputs(flow);
    let free: HashSet<InstrId> = if comp == module.entry_id() {
        let mut by_instr: HashMap<InstrId, (usize, usize)> = HashMap::new();
        for (id, v) in flow.values.iter().enumerate() {
            if v.def.comp == comp {
                let e = by_instr.entry(v.def.instr).or_default();
                e.0 += 1;
                e.1 += usize::from(donated.contains(&id));
            }
        }
        by_instr
            .into_iter()
            .filter(|&(_, (n, d))| d > 0 && d == n)
            .map(|(i, _)| i)
            .collect()
    } else {
        HashSet::new()
    };
    let mut candidates = Vec::new();
    let orders = [
        ("def-before-use", stored.clone()),
        ("dfs-by-size", dfs_by_size(module, comp, &stored, &deps)),
        (
            "list-greedy",
            list_greedy(module, comp, &stored, &deps, (&free, false)),
        ),
        (
            "list-greedy-recent",
            list_greedy(module, comp, &stored, &deps, (&free, true)),
        ),
    ];
    for (name, order) in orders {
        // An order that lost an instruction (a cycle through control edges) is no
        // candidate.
        if order.len() != stored.len() {
            continue;
        }
        let peak = peak(&intervals(module, comp, flow, &order));
        candidates.push(Candidate { name, peak, order });
    }
    let chosen = (0..candidates.len())
        .min_by_key(|&k| (candidates[k].peak, k))
        .unwrap_or(0);
    Schedule { candidates, chosen }
}
