//! What the cost model knows of a computation ([`CompInfo`]: per instruction its reads per
//! output element, flops and the loop facts the pricing rules need) and how a kernel's
//! members compose those reads ([`evaluate`]: evaluations of each member and element reads
//! of each input, from the roots down). The two live together because they recurse into
//! each other: a fusion's flops are its body's evaluation. [`crate::cost`] prices the
//! result.

use std::collections::{BTreeMap, HashMap, HashSet};

use hlo::{CompId, ElementType, InstrId, Module, Opcode};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

use crate::cost_chains;
use crate::cost_contraction::LoopContraction;
use crate::cost_gather_index;
use crate::cost_gemm::GemmWork;
use crate::cost_reads::{
    computation_kernel, first_array, reads_per_element, select_scatter_plan, shape_size,
};
use crate::cost_strided;
use crate::ops::{self, OpClass};

/// What the model knows about one instruction.
#[derive(Clone, Debug)]
pub struct OpInfo {
    /// The opcode.
    pub opcode: Opcode,
    /// Its role in fusion.
    pub class: OpClass,
    /// Output elements (all outputs of a tuple).
    pub elements: f64,
    /// Output bytes.
    pub bytes: f64,
    /// Operands in order.
    pub operands: Vec<InstrId>,
    /// Reads of operand `k` per output element.
    pub reads_per_element: Vec<f64>,
    /// The element type of the (first) output, for the flop rate.
    pub element_type: Option<ElementType>,
    /// Flops per output element (per input element read for a reduction): the opcode's
    /// entry of [`ops::flops_per_element`], or for a fusion those of its body.
    pub flops_per_element: f64,
    /// A broadcast whose operand dimensions are its leading dimensions: its operand's
    /// index does not change along the trailing (row-major minor) dimensions.
    pub broadcasts_trailing: bool,
    /// A reduction whose reduced dimensions include its operand's last (row-major
    /// minor) one: its loop over the operand runs innermost along that dimension.
    pub reduces_minor: bool,
    /// A broadcast that does not map its output's last (row-major minor) dimension: it
    /// reads one operand element for a whole run of the innermost loop.
    pub repeats_along_minor: bool,
    /// How many times a hoisted value of this broadcast's operand is computed by a kernel
    /// whose loops are this broadcast's: the code generator's grid runs one block per index
    /// of the most-major dimension, and a value hoisted out of the element loops stays
    /// inside the block loop. A broadcast that keeps the most-major dimension (operand
    /// dimensions leading) gives each block its own values (1); one of a scalar keeps
    /// none, so every block computes it again (the extent of that dimension): optax
    /// LAMB's trust ratio, a full reduction of a [256, 4096] weight read through a
    /// scalar broadcast, re-read the whole weight in each of the 256 blocks.
    pub block_repeats: f64,
    /// Whether operand `k` is read at the op's own index (an elementwise op and an
    /// operand of its dimensions): the emitters memoize a value per index, so readers
    /// that share an index share one evaluation.
    pub identity_reads: Vec<bool>,
    /// A dot's GEMM (what a CPU kernel of the dot alone runs as a library call).
    pub gemm: Option<GemmWork>,
    /// A dot's or convolution's loop where the code generator emits it (priced by
    /// `CostModel::loop_contractions`).
    pub contraction: Option<LoopContraction>,
    /// A gather's output elements per evaluation of its start indices on a hoisting
    /// emitter ([`cost_gather_index::index_run`]); 1 for other ops.
    pub index_run: f64,
    /// The element stride of a transpose's or slice's read of its operand along its own
    /// innermost loop ([`cost_strided::minor_read_stride`]); 1 for other ops.
    pub minor_read_stride: f64,
    /// A row reduction the CPU code generator sums as one dependent chain, and its type
    /// ([`cost_chains::chained_row`]); `None` for other ops.
    pub chained_row: Option<cost_chains::Chain>,
    /// The extent of the (first) output's last (row-major minor) dimension, the trip count
    /// of the innermost loop that computes it; 1 for a scalar.
    pub minor_extent: i64,
}

/// The model's view of one computation.
#[derive(Clone, Debug)]
pub struct CompInfo {
    /// Per arena index; `None` for removed instructions.
    pub ops: Vec<Option<OpInfo>>,
    /// Position of each instruction in def-before-use order (arena index -> position).
    pub position: Vec<usize>,
}

/// The expensive part of an instruction's [`OpInfo`] (its reads per element from its
/// indexing maps, and its flops), remembered across the analyses of one pass: the merge
/// passes analyse a computation again after every merge, and a merge adds new
/// instructions (under fresh names) but leaves the others' maps as they were.
///
/// Keyed by computation and instruction names: merges renumber computations, and names are
/// unique in a module. Entries of instructions no longer in their computation are dropped
/// whenever it is analysed again, so a name given to a new instruction later (by another
/// pass) never finds a stale entry.
#[derive(Clone, Debug, Default)]
pub struct InfoCache {
    entries: HashMap<String, HashMap<String, CachedOp>>,
}

/// What [`InfoCache`] keeps of one instruction, checked against its opcode and operand
/// count.
#[derive(Clone, Debug)]
struct CachedOp {
    opcode: Opcode,
    operand_count: usize,
    reads_per_element: Vec<f64>,
    flops_per_element: f64,
}

impl CompInfo {
    /// Analyses every live instruction of computation `comp`.
    pub fn new(module: &Module, comp: CompId) -> CompInfo {
        CompInfo::with_cache(module, comp, &mut InfoCache::default())
    }

    /// [`CompInfo::new`], reusing (and filling) `cache`: an instruction with the same
    /// computation, name, opcode and operand count as when it was cached keeps its cached
    /// reads and flops.
    pub fn with_cache(module: &Module, comp: CompId, cache: &mut InfoCache) -> CompInfo {
        let c = module.computation(comp);
        // Forget instructions that are gone: a later pass may give their names to others.
        if let Some(known) = cache.entries.get_mut(c.name()) {
            let live: HashSet<&str> = c.instructions().map(|(_, i)| i.name()).collect();
            known.retain(|name, _| live.contains(name.as_str()));
        }
        let mut ops = vec![None; c.instrs.len()];
        let mut position = vec![usize::MAX; c.instrs.len()];
        let controlled: HashSet<InstrId> = c
            .instructions()
            .flat_map(|(_, i)| i.control_predecessors().iter().copied())
            .collect();
        for (pos, &id) in c.def_before_use_order().iter().enumerate() {
            position[id.index()] = pos;
            let instr = c.instr(id);
            let (elements, bytes) = shape_size(instr.shape());
            let mut class = ops::classify(module, instr);
            let has_control = !instr.control_predecessors().is_empty() || controlled.contains(&id);
            if has_control && ops::is_fusible(class) {
                class = OpClass::Unfusible;
            }
            // A bitcast-convert between types of different widths folds a dimension into
            // wider elements (or out of them): XLA's fusion emitters index only same-width
            // ones (its indexing aborts on a fused one), and unfused it is a free alias.
            let width = |s: &hlo::Shape| s.element_type().and_then(|t| t.byte_width());
            if instr.opcode() == Opcode::BitcastConvert
                && instr
                    .operands()
                    .first()
                    .is_some_and(|&o| width(c.instr(o).shape()) != width(instr.shape()))
            {
                class = OpClass::Unfusible;
            }
            let cached = cache
                .entries
                .get(c.name())
                .and_then(|m| m.get(instr.name()))
                .filter(|e| {
                    e.opcode == instr.opcode() && e.operand_count == instr.operands().len()
                });
            let (reads, flops_per_element) = match cached {
                Some(e) => (e.reads_per_element.clone(), e.flops_per_element),
                None => {
                    let e = analyse(module, comp, id, cache);
                    let out = (e.reads_per_element.clone(), e.flops_per_element);
                    cache
                        .entries
                        .entry(c.name().to_string())
                        .or_default()
                        .insert(instr.name().to_string(), e);
                    out
                }
            };
            let broadcasts_trailing = instr.opcode() == Opcode::Broadcast
                && instr.dimensions().is_some_and(|d| {
                    d.iter().enumerate().all(|(i, &x)| x == i as i64)
                        && instr
                            .operands()
                            .first()
                            .is_some_and(|&o| c.instr(o).shape().dims().len() == d.len())
                });
            let rank = instr.shape().dims().len() as i64;
            let repeats_along_minor = instr.opcode() == Opcode::Broadcast
                && rank > 0
                && instr.dimensions().is_some_and(|d| !d.contains(&(rank - 1)));
            let block_repeats = match instr.shape().dims().first() {
                Some(&outer)
                    if broadcasts_trailing
                        && instr
                            .operands()
                            .first()
                            .is_some_and(|&o| c.instr(o).shape().dims().is_empty()) =>
                {
                    outer.max(1) as f64
                }
                _ => 1.0,
            };
            let reduces_minor = class == OpClass::Reduction
                && instr.dimensions().is_some_and(|d| {
                    instr.operands().first().is_some_and(|&o| {
                        let rank = c.instr(o).shape().dims().len() as i64;
                        rank > 0 && d.contains(&(rank - 1))
                    })
                });
            let identity_reads = instr
                .operands()
                .iter()
                .map(|&o| {
                    instr.opcode().is_elementwise()
                        && c.instr(o).shape().dims() == instr.shape().dims()
                })
                .collect();
            let gemm = GemmWork::of_dot(module, comp, id);
            let contraction = LoopContraction::of(module, comp, id);
            let minor_read_stride = match instr.operands().first() {
                Some(&o) => cost_strided::minor_read_stride(instr, c.instr(o).shape().dims()),
                None => 1.0,
            };
            let chained_row = match instr.operands().first() {
                Some(&o) => cost_chains::chained_row(module, instr, c.instr(o).shape().dims()),
                None => None,
            };
            ops[id.index()] = Some(OpInfo {
                chained_row,
                minor_extent: first_array(instr.shape())
                    .and_then(|s| s.dims().last().copied())
                    .unwrap_or(1)
                    .max(1),
                minor_read_stride,
                index_run: cost_gather_index::index_run(instr),
                gemm,
                contraction,
                broadcasts_trailing,
                repeats_along_minor,
                block_repeats,
                reduces_minor,
                identity_reads,
                flops_per_element,
                opcode: instr.opcode(),
                class,
                elements,
                bytes,
                operands: instr.operands().to_vec(),
                reads_per_element: reads,
                element_type: first_array(instr.shape()).and_then(|s| s.element_type()),
            });
        }
        CompInfo { ops, position }
    }

    /// The info of `id` (every live instruction has one).
    pub fn op(&self, id: InstrId) -> Option<&OpInfo> {
        self.ops.get(id.index()).and_then(Option::as_ref)
    }

    /// Position in def-before-use order.
    pub fn pos(&self, id: InstrId) -> usize {
        self.position.get(id.index()).copied().unwrap_or(usize::MAX)
    }
}

/// The expensive part of instruction `id`'s [`OpInfo`]: its reads per element (from its
/// indexing maps) and flops per element, with what it learns of fused computations added
/// to `cache`.
fn analyse(module: &Module, comp: CompId, id: InstrId, cache: &mut InfoCache) -> CachedOp {
    let instr = module.computation(comp).instr(id);
    let (elements, _) = shape_size(instr.shape());
    let reads = module
        .instr_ref(comp, id)
        .map(|r| reads_per_element(module, &r, elements))
        .unwrap_or_default();
    let flops = match instr.calls() {
        Some(callee) if instr.opcode() == Opcode::Fusion && elements > 0.0 => {
            body_flops(module, callee, cache) / elements
        }
        // A contraction: a multiply and an add per element of the lhs it reads for each
        // output element (the contraction, or a convolution's window and input features).
        _ if matches!(instr.opcode(), Opcode::Dot | Opcode::Convolution) => {
            2.0 * reads.first().copied().unwrap_or(0.0)
        }
        _ => match module
            .instr_ref(comp, id)
            .and_then(|r| select_scatter_plan(&r).map(|p| (p, r)))
        {
            // One comparison per select the kernel runs.
            Some((p, r)) => {
                let source = r.instr().operands()[1];
                let (source_elements, _) = shape_size(r.computation().instr(source).shape());
                p.per_element(elements, source_elements)[3]
            }
            None => ops::flops_per_element(instr.opcode()),
        },
    };
    CachedOp {
        opcode: instr.opcode(),
        operand_count: instr.operands().len(),
        reads_per_element: reads,
        flops_per_element: flops,
    }
}

/// Flops of one evaluation of a fused computation (every output computed once).
fn body_flops(module: &Module, callee: CompId, cache: &mut InfoCache) -> f64 {
    let Some((members, roots)) = computation_kernel(module, callee) else {
        return 0.0;
    };
    let info = CompInfo::with_cache(module, callee, cache);
    // Without hoisting: a fused body's flops as any emitter computes them.
    evaluate(&info, &members, &roots, false).flops
}

/// How often each member of a kernel is evaluated and each input read.
#[derive(Clone, Debug, Default)]
pub struct Evaluation {
    /// Evaluations (output elements computed) of each member.
    pub evals: FxHashMap<InstrId, f64>,
    /// Element reads of each input (operand of a member outside the kernel).
    pub reads: BTreeMap<InstrId, f64>,
    /// Flops of the whole kernel.
    pub flops: f64,
    /// The part of [`Evaluation::flops`] that recomputes an expensive member
    /// ([`ops::is_expensive`]: a transcendental) beyond once per element of its own in
    /// one index space: a value read through a broadcast (or another map that reads an
    /// element again) that the code generator does not hoist is evaluated anew for every
    /// element reading it.
    pub recomputed_flops: f64,
    /// The expensive member whose recomputation costs the most flops, for the report.
    pub most_recomputed: Option<Recomputed>,
    /// With hoisting, the bytes of the largest row a reduction inside the kernel (not a
    /// root) reads: the kernel re-reads its inputs row by row, within this working set.
    pub row_bytes: Option<f64>,
    /// Element reads of each input made with a stride along the innermost loop (below a
    /// transpose that moves the minor dimension, [`cost_strided`]), and the largest such
    /// stride in elements.
    pub strided_reads: BTreeMap<InstrId, (f64, f64)>,
}

/// An expensive member a kernel evaluates more often than it has elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Recomputed {
    /// The member.
    pub member: InstrId,
    /// Its evaluations in the kernel.
    pub evaluations: f64,
    /// Its elements (what computing it once takes).
    pub elements: f64,
    /// Flops of the evaluations beyond one per element.
    pub extra_flops: f64,
}

/// The index space a value is read in: a root's own, or the one an op reading it under a
/// non-identity map (operand `k` of instruction `id`) creates, or a hoisted broadcast's.
/// Readers in one index space read the same elements and share one evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum IndexSpace {
    Root(InstrId),
    Operand(InstrId, usize),
    Hoisted(InstrId),
}

/// Evaluation counts of one value per index space it is read in.
#[derive(Default)]
struct Spaces(SmallVec<[(IndexSpace, f64); 2]>);

impl Spaces {
    /// Readers of one space share the evaluations: the most any of them needs.
    fn add(&mut self, space: IndexSpace, count: f64) {
        match self.0.iter_mut().find(|(s, _)| *s == space) {
            Some((_, c)) => *c = c.max(count),
            None => self.0.push((space, count)),
        }
    }

    fn total(&self) -> f64 {
        self.0.iter().map(|(_, c)| c).sum()
    }
}

/// Composes read counts from `roots` (each computed once per element, or as often as
/// other members read it if that is more) down through `members` (which must include the
/// roots). A value read by several members at their own index (elementwise readers of its
/// shape) is evaluated once per element for all of them, as the emitters memoize it; reads
/// under other maps (slices, broadcasts, gathers, ...) each evaluate it anew. With `hoist`
/// (the code generator moves loop-invariant values out of the innermost loop), a
/// member read through a broadcast along the trailing dimensions is computed once per
/// index of its own, not once per element of the broadcast — once per parallel block
/// where it keeps none of the blocked dimensions ([`OpInfo::block_repeats`]).
pub fn evaluate(
    info: &CompInfo,
    members: &[InstrId],
    roots: &[InstrId],
    hoist: bool,
) -> Evaluation {
    let set: FxHashSet<InstrId> = members.iter().copied().collect();
    let mut order: Vec<InstrId> = members.to_vec();
    order.sort_by_key(|&m| std::cmp::Reverse(info.pos(m)));
    let mut ev = Evaluation::default();
    ev.evals.reserve(members.len());
    let mut spaces: FxHashMap<InstrId, Spaces> = FxHashMap::default();
    spaces.reserve(members.len());
    let mut input_spaces: BTreeMap<InstrId, Spaces> = BTreeMap::new();
    // Members indexed with a stride along the innermost loop (absent: contiguous).
    let mut strides: FxHashMap<InstrId, f64> = FxHashMap::default();
    for m in order {
        let Some(op) = info.op(m) else { continue };
        let mut mine = spaces.remove(&m).unwrap_or_default();
        let my_stride = strides.get(&m).copied().unwrap_or(1.0);
        // An output is computed once per element, shared with the members that read all
        // of it (an elementwise reader, another output's reduction): more only where
        // they read less than all of it.
        if roots.contains(&m) && mine.total() < op.elements {
            let missing = op.elements - mine.total();
            mine.add(IndexSpace::Root(m), missing);
        }
        let e = mine.total();
        ev.evals.insert(m, e);
        let fpe = op.flops_per_element;
        ev.flops += if op.class == OpClass::Reduction {
            e * op.reads_per_element.first().copied().unwrap_or(0.0) * fpe
        } else {
            e * fpe
        };
        // Evaluations of one index space beyond one per element, where a broadcast that
        // repeats each element along the innermost loop reads it (not hoisted, behind a
        // reshape root: `b[s0 * 8 + d1 / 32000]`). Several spaces that each read every
        // element once (a reduction's pass and the output's pass over a softmax row, the
        // taps of a stencil), or a broadcast along the minor dimension (contiguous reads
        // the C compiler vectorizes), are vector work priced by the flops alone.
        let reused: f64 = mine
            .0
            .iter()
            .filter(|(s, _)| match *s {
                IndexSpace::Operand(r, _) => info.op(r).is_some_and(|r| r.repeats_along_minor),
                _ => false,
            })
            .map(|&(_, c)| (c - op.elements).max(0.0))
            .sum();
        if op.class != OpClass::Reduction
            && ops::is_expensive(op.opcode)
            && reused > op.elements * 1e-9
        {
            // Reductions recomputed per element are the heroes' rule (never fused so);
            // an elementwise transcendental evaluated again per reader element is priced.
            let extra = reused * fpe;
            ev.recomputed_flops += extra;
            if ev.most_recomputed.is_none_or(|r| extra > r.extra_flops) {
                ev.most_recomputed = Some(Recomputed {
                    member: m,
                    evaluations: e,
                    elements: op.elements,
                    extra_flops: extra,
                });
            }
        }
        if hoist && op.class == OpClass::Reduction && !roots.contains(&m) {
            if let Some(input) = op.operands.first().and_then(|&o| info.op(o)) {
                let per_element = if input.elements > 0.0 {
                    input.bytes / input.elements
                } else {
                    0.0
                };
                let row = op.reads_per_element.first().copied().unwrap_or(0.0) * per_element;
                ev.row_bytes = Some(ev.row_bytes.map_or(row, |b: f64| b.max(row)));
            }
        }
        // The code generator hoists a broadcast operand out of the innermost loop only
        // where that loop runs along the broadcast's trailing dimensions: where the
        // broadcast is evaluated in a root's own loop nest, or in the loop of a reduction
        // over the minor dimension (every reader between them reads at its own index).
        // Behind a reshape, a slice or another broadcast the innermost loop is another
        // dimension, and the operand is computed per element (GroupNorm's variance read
        // through a reshape of [N, G, C/G] to [N, C] was computed C/G times per value).
        let in_row_loops = !mine.0.is_empty()
            && mine.0.iter().all(|(s, _)| match *s {
                IndexSpace::Root(_) => true,
                IndexSpace::Operand(r, 0) => info.op(r).is_some_and(|r| r.reduces_minor),
                _ => false,
            });
        for (k, &o) in op.operands.iter().enumerate() {
            let identity = op.identity_reads.get(k).copied().unwrap_or(false);
            let stride = cost_strided::operand_stride(
                op.opcode,
                op.minor_read_stride,
                identity,
                k,
                my_stride,
            );
            if stride > 1.0 {
                if set.contains(&o) {
                    let s = strides.entry(o).or_insert(1.0);
                    *s = s.max(stride);
                } else {
                    let reads = e * op.reads_per_element.get(k).copied().unwrap_or(0.0);
                    let r = ev.strided_reads.entry(o).or_insert((0.0, 1.0));
                    r.0 += reads;
                    r.1 = r.1.max(stride);
                }
            }
            let target = if set.contains(&o) {
                spaces.entry(o).or_default()
            } else {
                input_spaces.entry(o).or_default()
            };
            if hoist
                && op.broadcasts_trailing
                && op.elements > 0.0
                && in_row_loops
                && set.contains(&o)
            {
                let distinct = info.op(o).map_or(op.elements, |x| x.elements);
                // Once per index of its own at most: however many paths evaluate the
                // broadcast per element, one hoisted value serves the whole row; again in
                // every parallel block where the value keeps no blocked dimension.
                target.add(
                    IndexSpace::Hoisted(o),
                    (e * distinct / op.elements).min(distinct) * op.block_repeats,
                );
                continue;
            }
            if op.identity_reads.get(k).copied().unwrap_or(false) {
                for &(space, count) in &mine.0 {
                    target.add(space, count);
                }
            } else {
                let reads = op.reads_per_element.get(k).copied().unwrap_or(0.0);
                let reads =
                    cost_gather_index::operand_reads(op.opcode, k, reads, op.index_run, hoist);
                target.add(IndexSpace::Operand(m, k), e * reads);
            }
        }
    }
    ev.reads = input_spaces
        .into_iter()
        .map(|(o, s)| (o, s.total()))
        .collect();
    ev
}
