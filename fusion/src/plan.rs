//! Priority fusion on one computation, as a plan: kernels (sets of original instructions
//! with a root) merged producer-into-all-consumers in order of modelled time saved.
//!
//! Every non-bookkeeping instruction starts as a kernel of its own. A producer kernel is a
//! candidate when it and all its consumers can fuse; its priority is the modelled time of
//! the producer and its consumers as separate kernels minus that of the consumers with
//! the producer fused into each (a producer with several consumers is duplicated). A
//! max-heap holds the candidates; after a fusion only the neighbours of the changed
//! kernels (the new kernels themselves and the producers of their inputs) are re-evaluated,
//! stale heap entries being recognized by a version counter. Fusing a producer into all
//! of its consumers (duplicating it) never creates a cycle: each new kernel reads only
//! what the producer or the consumer read before.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use hlo::{Computation, InstrId, Module};

use crate::cost::{evaluate, CompInfo, CostModel, Evaluation, KernelCost};
use crate::decision::{Cost, Decision, Reason};
use crate::emitter_reach::{self, EmitterReach};
use crate::ops::{self, OpClass};

/// A kernel of the plan.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The instruction whose value the kernel produces.
    pub root: InstrId,
    /// Its instructions, in def-before-use order (the root last).
    pub members: Vec<InstrId>,
    /// The decisions that built it, in order.
    pub decisions: Vec<Decision>,
    /// False once fused into its consumers.
    pub alive: bool,
}

/// The outcome of planning one computation.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Every kernel (dead ones included).
    pub kernels: Vec<Kernel>,
    /// The last refusal of each producer that stayed a kernel of its own, by its root.
    pub refusals: HashMap<InstrId, Decision>,
}

/// Most reductions one kernel may hold. Each is a loop of its own in the kernel's body
/// (a chain of them, each read through a broadcast by the next, runs one after another
/// once hoisted), and fusing one more saves only its result's round trip through memory,
/// while the C compiler's time grows with the function: issue 36's wide module (2,500
/// transpose -> exp -> row sum -> broadcast groups) fused 295 row sums per kernel and
/// spent most of its compile in gcc. The 68 user programs and the corpus fuse at most 14
/// into one kernel.
pub const MAX_REDUCTIONS: usize = 32;

struct Entry {
    benefit: f64,
    position: usize,
    kernel: usize,
    version: u64,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> Ordering {
        self.benefit
            .total_cmp(&o.benefit)
            .then(o.position.cmp(&self.position))
            .then(o.kernel.cmp(&self.kernel))
            .then(self.version.cmp(&o.version))
    }
}

/// A fusion that passed every check.
struct Candidate {
    consumers: Vec<usize>,
    merged: Vec<Vec<InstrId>>,
    cost: Cost,
    benefit: f64,
}

struct Planner<'a> {
    /// The module `comp` belongs to (for [`EmitterReach::confirm`]).
    module: &'a Module,
    comp: &'a Computation,
    /// What the code generator can emit: asked before a producer fuses into its consumers.
    reach: &'a dyn EmitterReach,
    /// Whether XLA:CPU may emit `comp` with its per-element IR emitter
    /// ([`crate::xla_cpu::per_element_computations`]).
    per_element: bool,
    info: &'a CompInfo,
    model: &'a CostModel<'a>,
    kernels: Vec<Kernel>,
    kernel_of_root: HashMap<InstrId, usize>,
    owners: HashMap<InstrId, Vec<usize>>,
    versions: Vec<u64>,
    /// The cost of each kernel as it is now (filled on first use, cleared on change).
    costs: Vec<std::cell::OnceCell<KernelCost>>,
    heap: BinaryHeap<Entry>,
    /// The candidate each kernel's heap entry of its current version stands for: a popped
    /// entry whose version still matches reuses it instead of evaluating the fusion again
    /// (every change a candidate depends on re-evaluates the kernel and bumps its version,
    /// see [`Planner::apply`]), which on long chains of growing kernels was a third of
    /// the planning time.
    pending: Vec<Option<Candidate>>,
    refusals: HashMap<InstrId, Decision>,
}

/// Plans priority fusion of `comp` (`per_element`: whether XLA:CPU may emit it with its
/// per-element IR emitter, which needs more layouts).
pub fn plan(
    module: &Module,
    comp: &Computation,
    per_element: bool,
    info: &CompInfo,
    model: &CostModel<'_>,
    reach: &dyn EmitterReach,
) -> Plan {
    let mut p = Planner {
        module,
        comp,
        reach,
        per_element,
        info,
        model,
        kernels: Vec::new(),
        kernel_of_root: HashMap::default(),
        owners: HashMap::default(),
        versions: Vec::new(),
        costs: Vec::new(),
        heap: BinaryHeap::new(),
        pending: Vec::new(),
        refusals: HashMap::default(),
    };
    let order = comp.def_before_use_order().into_owned();
    for &id in &order {
        let Some(op) = info.op(id) else { continue };
        if op.class == OpClass::Bookkeeping {
            continue;
        }
        let k = p.kernels.len();
        p.kernels.push(Kernel {
            root: id,
            members: vec![id],
            decisions: Vec::new(),
            alive: true,
        });
        p.kernel_of_root.insert(id, k);
        p.owners.insert(id, vec![k]);
        p.versions.push(0);
        p.costs.push(std::cell::OnceCell::new());
        p.pending.push(None);
    }
    for k in 0..p.kernels.len() {
        p.reevaluate(k);
    }
    while let Some(e) = p.heap.pop() {
        if !p.kernels[e.kernel].alive || p.versions[e.kernel] != e.version {
            continue;
        }
        let found = match p.pending[e.kernel].take() {
            Some(c) => Some(Ok(c)),
            None => p.candidate(e.kernel),
        };
        match found {
            Some(Ok(c)) => match p.confirm(e.kernel, c) {
                Ok(c) => p.apply(e.kernel, c),
                Err(d) => {
                    p.refusals.insert(p.kernels[e.kernel].root, *d);
                }
            },
            Some(Err(d)) => {
                p.refusals.insert(p.kernels[e.kernel].root, d);
            }
            None => {}
        }
    }
    Plan {
        kernels: p.kernels,
        refusals: p.refusals,
    }
}

impl Planner<'_> {
    fn name(&self, id: InstrId) -> String {
        self.comp.instr(id).name().to_string()
    }

    fn class(&self, id: InstrId) -> OpClass {
        self.info.op(id).map_or(OpClass::Unfusible, |o| o.class)
    }

    fn reevaluate(&mut self, k: usize) {
        self.versions[k] += 1;
        self.pending[k] = None;
        let root = self.kernels[k].root;
        match self.candidate(k) {
            Some(Ok(c)) => {
                self.refusals.remove(&root);
                self.heap.push(Entry {
                    benefit: c.benefit,
                    position: self.info.pos(root),
                    kernel: k,
                    version: self.versions[k],
                });
                self.pending[k] = Some(c);
            }
            Some(Err(d)) => {
                self.refusals.insert(root, d);
            }
            None => {
                self.refusals.remove(&root);
            }
        }
    }

    fn refuse(&self, k: usize, consumer: InstrId, reason: Reason, cost: Cost) -> Decision {
        Decision {
            producer: self.name(self.kernels[k].root),
            consumer: self.name(consumer),
            reason,
            cost,
            detail: None,
        }
    }

    /// The candidate fusion of kernel `k` into all its consumers; `None` when it has no
    /// consumers, `Err` with the refusal when it cannot or should not fuse.
    fn candidate(&self, k: usize) -> Option<Result<Candidate, Decision>> {
        let pk = &self.kernels[k];
        let users = self.comp.users(pk.root);
        let first_user = *users.first()?;
        if !ops::is_fusible(self.class(pk.root)) || self.class(pk.root) == OpClass::InPlace {
            let d = self.refuse(k, first_user, Reason::UnfusibleOp, Cost::default());
            return Some(Err(d));
        }
        if pk.root == self.comp.root() {
            let d = self.refuse(k, first_user, Reason::UnfusibleOp, Cost::default());
            return Some(Err(d));
        }
        if ops::scan(self.comp.instr(pk.root)).is_some() {
            // A scan's emitter walks its dimension once for all outputs; read by a
            // consumer's kernel it would be a window reduced per element.
            let mut d = self.refuse(k, first_user, Reason::UnfusibleOp, Cost::default());
            d.detail = Some("a scan (a cumulative reduce-window) is a kernel of its own".into());
            return Some(Err(d));
        }
        let mut consumers: Vec<usize> = Vec::new();
        for &u in users {
            match self.owners.get(&u) {
                Some(ks) => {
                    for &c in ks {
                        if c != k && !consumers.contains(&c) {
                            consumers.push(c);
                        }
                    }
                }
                None => {
                    let d = self.refuse(k, u, Reason::UnfusibleOp, Cost::default());
                    return Some(Err(d));
                }
            }
        }
        consumers.sort_by_key(|&c| self.info.pos(self.kernels[c].root));
        for &c in &consumers {
            let croot = self.kernels[c].root;
            let reason = match self.class(croot) {
                OpClass::Library => Reason::ConsumerIsLibraryCall,
                cl if !ops::is_fusible(cl) => Reason::UnfusibleOp,
                OpClass::InPlace if self.comp.operands(croot).first() == Some(&pk.root) => {
                    // The buffer an in-place update writes is never computed inside it.
                    Reason::UnfusibleOp
                }
                _ => continue,
            };
            return Some(Err(self.refuse(k, croot, reason, Cost::default())));
        }
        let mut unfused = self.cost_of(k);
        let mut fused = KernelCost::default();
        let mut merged = Vec::with_capacity(consumers.len());
        let mut too_large = None;
        let mut hero = None;
        let mut incompatible = None;
        for &c in &consumers {
            unfused.add(&self.cost_of(c));
            let m = self.merge(&self.kernels[c].members, &pk.members);
            let croot = self.kernels[c].root;
            let hoist = self.model.hoists_invariant_values;
            let ev = evaluate(self.info, &m, &[croot], hoist);
            fused.add(&self.model.kernel_evaluated(self.info, &m, &[croot], &ev));
            if too_large.is_none() && self.too_large(&m) {
                too_large = Some(croot);
            }
            if hero.is_none() && !self.heroes_compatible(&m, &ev) {
                hero = Some(croot);
            }
            if incompatible.is_none() {
                let candidate = emitter_reach::Candidate {
                    comp: self.comp,
                    members: &m,
                    roots: &[croot],
                    per_element: self.per_element,
                    position: &|i| self.info.pos(i),
                };
                incompatible = self
                    .reach
                    .can_emit(&candidate)
                    .err()
                    .map(|u| (croot, format!("{} is {}", self.name(u.at), u.why)));
            }
            merged.push(m);
        }
        let cost = Cost::of(&unfused, &fused, consumers.len());
        if let Some(c) = hero {
            return Some(Err(self.refuse(k, c, Reason::HeroIncompatible, cost)));
        }
        if let Some((c, why)) = incompatible {
            let mut d = self.refuse(k, c, Reason::TargetIncompatible, cost);
            d.detail = Some(why);
            return Some(Err(d));
        }
        if let Some(c) = too_large {
            return Some(Err(self.refuse(k, c, Reason::TooLarge, cost)));
        }
        let first = self.kernels[consumers[0]].root;
        let expensive = pk
            .members
            .iter()
            .any(|&m| self.info.op(m).is_some_and(|o| ops::is_expensive(o.opcode)));
        let has_reduction = pk.members.iter().any(|&m| self.reduces(m));
        if consumers.len() > 1 && has_reduction {
            let d = self.refuse(k, first, Reason::WouldDuplicateExpensive, cost);
            return Some(Err(d));
        }
        let benefit = unfused.time_s - fused.time_s;
        if benefit <= 0.0 {
            if fused.recomputed_flops > unfused.recomputed_flops {
                return Some(Err(self.recomputed_refusal(k, &consumers, &merged, cost)));
            }
            let reason = if consumers.len() > 1 && expensive {
                Reason::WouldDuplicateExpensive
            } else {
                Reason::NotProfitable
            };
            return Some(Err(self.refuse(k, first, reason, cost)));
        }
        Some(Ok(Candidate {
            consumers,
            merged,
            cost,
            benefit,
        }))
    }

    /// The refusal of a fusion that would recompute an expensive member per element of a
    /// reader ([`crate::cost::Evaluation::recomputed_flops`]): the consumer whose kernel
    /// recomputes most, and which member, how often.
    fn recomputed_refusal(
        &self,
        k: usize,
        consumers: &[usize],
        merged: &[Vec<InstrId>],
        cost: Cost,
    ) -> Decision {
        let hoist = self.model.hoists_invariant_values;
        let worst = consumers
            .iter()
            .zip(merged)
            .filter_map(|(&c, m)| {
                let croot = self.kernels[c].root;
                evaluate(self.info, m, &[croot], hoist)
                    .most_recomputed
                    .map(|r| (croot, r))
            })
            .max_by(|a, b| a.1.extra_flops.total_cmp(&b.1.extra_flops));
        let first = self.kernels[consumers[0]].root;
        let Some((croot, r)) = worst else {
            return self.refuse(k, first, Reason::WouldDuplicateExpensive, cost);
        };
        let mut d = self.refuse(k, croot, Reason::WouldDuplicateExpensive, cost);
        d.detail = Some(format!(
            "{} would be computed {} times for its {} elements (once per element reading it)",
            self.name(r.member),
            r.evaluations.round(),
            r.elements.round()
        ));
        d
    }

    /// Whether `m` is a reduction that combines elements (one over dimensions of size 1
    /// alone, a scalar read or a lookup's squeeze, moves them: no hero, nothing to
    /// duplicate).
    fn reduces(&self, m: InstrId) -> bool {
        if self.class(m) != OpClass::Reduction {
            return false;
        }
        let count = |id: InstrId| self.comp.instr(id).shape().element_count().ok();
        let input = self.comp.operands(m).first().and_then(|&o| count(o));
        match (input, count(m)) {
            (Some(i), Some(o)) => i != o,
            _ => true,
        }
    }

    fn cost_of(&self, k: usize) -> KernelCost {
        self.costs[k]
            .get_or_init(|| {
                let kernel = &self.kernels[k];
                self.model
                    .kernel(self.info, &kernel.members, &[kernel.root])
            })
            .clone()
    }

    fn merge(&self, a: &[InstrId], b: &[InstrId]) -> Vec<InstrId> {
        let mut m: Vec<InstrId> = a.iter().chain(b).copied().collect();
        m.sort_by_key(|&i| self.info.pos(i));
        m.dedup();
        m
    }

    fn too_large(&self, members: &[InstrId]) -> bool {
        let rules = self.reach.rules();
        if members.len() > rules.max_instructions {
            return true;
        }
        if members.iter().filter(|&&m| self.reduces(m)).count() > MAX_REDUCTIONS {
            return true;
        }
        inputs(self.comp, self.info, members).len() > rules.max_operands
    }

    /// One transpose kind per fusion where the device's transpose emitter tiles one
    /// permutation (equal input shapes and permutations), one reduction kind per fusion (equal input shapes and
    /// dimensions), never a reduction recomputed per element of its consumer (where the
    /// code generator hoists invariants, read through broadcasts along the minor dimensions, it is
    /// computed once per row), never a
    /// reduction with a transpose hero or an in-place update.
    fn heroes_compatible(&self, members: &[InstrId], ev: &Evaluation) -> bool {
        let reductions: Vec<InstrId> = members
            .iter()
            .copied()
            .filter(|&m| self.reduces(m))
            .collect();
        let transpose = |t: InstrId| {
            let i = self.comp.instr(t);
            let input = i
                .operand(0)
                .map(|o| self.comp.instr(o).shape().dims().to_vec());
            (input, i.dimensions().map(<[i64]>::to_vec))
        };
        let mut transposes = members
            .iter()
            .filter(|&&m| self.class(m) == OpClass::Transpose)
            .map(|&t| transpose(t));
        if let Some(first) = transposes.next() {
            let one_kind = self.reach.rules().one_transpose_kind_per_fusion;
            if one_kind && transposes.any(|t| t != first) {
                return false;
            }
        }
        if reductions.is_empty() {
            return true;
        }
        if members
            .iter()
            .any(|&m| matches!(self.class(m), OpClass::Transpose | OpClass::InPlace))
        {
            return false;
        }
        let signature = |r: InstrId| {
            let i = self.comp.instr(r);
            let input = i
                .operand(0)
                .map(|o| self.comp.instr(o).shape().dims().to_vec());
            (i.opcode(), input, i.dimensions().map(<[i64]>::to_vec))
        };
        let first = signature(reductions[0]);
        if reductions.iter().any(|&r| signature(r) != first) {
            return false;
        }
        reductions.iter().all(|r| {
            let e = ev.evals.get(r).copied().unwrap_or(0.0);
            let n = self.info.op(*r).map_or(0.0, |o| o.elements);
            e <= n * (1.0 + 1e-9)
        })
    }

    /// `c` if the code generator confirms every kernel it would form
    /// ([`EmitterReach::confirm`]), else the refusal of the first it does not.
    fn confirm(&self, k: usize, c: Candidate) -> Result<Candidate, Box<Decision>> {
        for (&ci, merged) in c.consumers.iter().zip(&c.merged) {
            let croot = self.kernels[ci].root;
            let candidate = emitter_reach::Candidate {
                comp: self.comp,
                members: merged,
                roots: &[croot],
                per_element: self.per_element,
                position: &|i| self.info.pos(i),
            };
            if let Err(u) = self.reach.confirm(self.module, &candidate) {
                let mut d = self.refuse(k, croot, Reason::TargetIncompatible, c.cost.clone());
                d.detail = Some(format!("{} is {}", self.name(u.at), u.why));
                return Err(Box::new(d));
            }
        }
        Ok(c)
    }

    fn apply(&mut self, k: usize, c: Candidate) {
        self.kernels[k].alive = false;
        self.pending[k] = None;
        let producer_root = self.kernels[k].root;
        self.kernel_of_root.remove(&producer_root);
        self.refusals.remove(&producer_root);
        let pmembers = self.kernels[k].members.clone();
        let pdecisions = self.kernels[k].decisions.clone();
        for m in &pmembers {
            if let Some(v) = self.owners.get_mut(m) {
                v.retain(|&x| x != k);
            }
        }
        for (&ci, merged) in c.consumers.iter().zip(c.merged) {
            for m in &pmembers {
                let v = self.owners.entry(*m).or_default();
                if !v.contains(&ci) {
                    v.push(ci);
                }
            }
            let croot = self.kernels[ci].root;
            let decision = Decision {
                producer: self.name(producer_root),
                consumer: self.name(croot),
                reason: Reason::Fused,
                cost: c.cost.clone(),
                detail: None,
            };
            let kernel = &mut self.kernels[ci];
            kernel.members = merged;
            self.costs[ci] = std::cell::OnceCell::new();
            kernel.decisions.extend(pdecisions.iter().cloned());
            kernel.decisions.push(decision);
        }
        for m in &pmembers {
            if self.owners.get(m).is_some_and(Vec::is_empty) {
                self.owners.remove(m);
            }
        }
        let mut affected: Vec<usize> = Vec::new();
        for &ci in &c.consumers {
            affected.push(ci);
            for x in inputs(self.comp, self.info, &self.kernels[ci].members) {
                if let Some(&pk) = self.kernel_of_root.get(&x) {
                    affected.push(pk);
                }
            }
        }
        let mut seen = HashSet::default();
        affected.retain(|k| seen.insert(*k));
        for a in affected {
            if self.kernels[a].alive {
                self.reevaluate(a);
            }
        }
    }
}

/// The inputs of a kernel: operands of its members outside it, each once, in order of
/// first use; scalar constants (copied into fusions) are not inputs.
pub fn inputs(comp: &Computation, info: &CompInfo, members: &[InstrId]) -> Vec<InstrId> {
    let set: rustc_hash::FxHashSet<InstrId> = members.iter().copied().collect();
    let mut out = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    let mut sorted = members.to_vec();
    sorted.sort_by_key(|&m| info.pos(m));
    for m in sorted {
        for &o in comp.operands(m) {
            if !set.contains(&o) && !is_inlined_constant(comp, o) && seen.insert(o) {
                out.push(o);
            }
        }
    }
    out
}

/// Scalar constants are copied into the fusions that read them instead of passed in.
pub fn is_inlined_constant(comp: &Computation, id: InstrId) -> bool {
    let i = comp.instr(id);
    i.opcode() == hlo::Opcode::Constant
        && i.shape().is_array()
        && i.shape().element_count().is_ok_and(|n| n <= 1)
}
