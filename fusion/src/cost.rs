//! The cost model: the modelled time of one kernel (a fusion or a single op) from the
//! indexing maps of its instructions and a [`Device`].
//!
//! For every instruction of a computation, [`CompInfo`] holds the reads of each operand per
//! output element: the number of points of the op's output-to-input maps (the
//! utilization of its maps: a broadcast reads each input element once per output row, a
//! reduce reads its whole reduced extent per output element) divided by its output
//! elements. A kernel's cost composes these counts from its root down: each member is
//! evaluated once per read of it by another member (a producer duplicated behind a
//! broadcast is evaluated once per broadcast element), and each input of the kernel is
//! read that many times. The first read of each input element moves its bytes; re-reads
//! hit the cache level the whole input fits in (a broadcast re-read from L1 costs a tenth
//! of a DRAM read). Every transfer is charged at the bandwidth of the level its tensor
//! fits in (a tensor just written and small enough stays in cache). Then
//! `time = max(memory time, compute time) + launch`, compute time being the flops of every
//! member (per-opcode table, [`crate::ops::flops_per_element`]) at the device's rate for
//! the element type.

use std::collections::{BTreeMap, HashMap, HashSet};

use device::{Device, DeviceKind};
use hlo::{CompId, ElementType, InstrId, Module, Opcode};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use smallvec::SmallVec;

use crate::cost_chains;
use crate::cost_contraction::LoopContraction;
use crate::cost_gather_index;
use crate::cost_gemm::GemmWork;
use crate::cost_strided;
use crate::emitter_reach::EmitterRules;
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

/// The kernel that computes the whole computation `comp`, as a fusion computes its fused
/// computation: `(members, roots)`, the members being every instruction but the parameters
/// and the roots the root, or the operands of a tuple root. `None` when `comp` is not in
/// `module`.
pub fn computation_kernel(module: &Module, comp: CompId) -> Option<(Vec<InstrId>, Vec<InstrId>)> {
    let body = module.get_computation(comp)?;
    let members: Vec<InstrId> = body
        .instructions()
        .filter(|(_, i)| i.opcode() != Opcode::Parameter)
        .map(|(id, _)| id)
        .collect();
    let root = body.root_instr();
    let roots: Vec<InstrId> = if root.opcode() == Opcode::Tuple {
        root.operands().to_vec()
    } else {
        vec![body.root()]
    };
    Some((members, roots))
}

fn first_array(s: &hlo::Shape) -> Option<&hlo::Shape> {
    if s.is_tuple() {
        s.tuple_shapes().iter().find_map(first_array)
    } else {
        Some(s)
    }
}

/// `(elements, bytes)` of a shape (tuples summed).
pub fn shape_size(s: &hlo::Shape) -> (f64, f64) {
    if s.is_tuple() {
        return s.tuple_shapes().iter().fold((0.0, 0.0), |(e, b), t| {
            let (te, tb) = shape_size(t);
            (e + te, b + tb)
        });
    }
    let e = s.element_count().unwrap_or(0).max(0) as f64;
    let b = s.byte_size().unwrap_or(0).max(0) as f64;
    (e, b)
}

/// Enumerated exactly below this many points when a map has constraints.
const ENUMERATE_LIMIT: u128 = 1 << 16;

/// Reads of each operand per output element, from the op's output-to-input maps. An
/// operand whose maps are unknown is read once per element.
fn reads_per_element(module: &Module, instr: &hlo::InstrRef<'_>, out_elements: f64) -> Vec<f64> {
    let i = instr.instr();
    let c = instr.computation();
    let operand_elements: Vec<f64> = i
        .operands()
        .iter()
        .map(|&o| shape_size(c.instr(o).shape()).0)
        .collect();
    let fallback = |k: usize| {
        if out_elements > 0.0 {
            operand_elements[k] / out_elements
        } else {
            0.0
        }
    };
    let n = i.operands().len();
    if ops::is_bookkeeping(i.opcode()) || out_elements <= 0.0 {
        return (0..n).map(fallback).collect();
    }
    if let Some(scan) = ops::scan(i) {
        // The scan emitter reads each input element once and the init values once per
        // line, not a window per output element.
        let per_line = 1.0 / scan.len as f64;
        return (0..n)
            .map(|k| if k < n / 2 { 1.0 } else { per_line })
            .collect();
    }
    if i.opcode() == Opcode::Scatter && n >= 3 {
        // The scatter kernel walks its updates once (each update element and its index
        // read once, combined into one result element); its operands are the buffers it
        // updates. The maps' box charges every update per result element.
        let updates = (n - 1) / 2;
        return (0..n)
            .map(|k| if k < updates { 1.0 } else { fallback(k) })
            .collect();
    }
    if i.opcode() == Opcode::DynamicUpdateSlice && n >= 2 {
        // The in-place kernel walks its update once (each update element read once, the
        // start indices once); its operand is the buffer it updates. The maps' box (the
        // update's map constrained to the window, a box of the whole output) charged
        // every update element per output element: a [1,32,512] row into a [64,32,512]
        // scan output was priced at 110 us a step where it runs in 6.
        return (0..n)
            .map(|k| if k == 0 { 1.0 } else { fallback(k) })
            .collect();
    }
    if let Some(sas) = select_scatter_plan(instr) {
        // The kernel's loops, not the maps' box (every source window per element).
        let [x, src, init, _] = sas.per_element(out_elements, operand_elements[1]);
        return [x, src, init].into_iter().take(n).collect();
    }
    let _ = module;
    let Ok(groups) = indexing::output_to_input(instr) else {
        return (0..n).map(fallback).collect();
    };
    (0..n)
        .map(|k| {
            let mut points = 0.0;
            for g in &groups {
                match g.operands.get(k) {
                    Some(set) if !set.is_undefined() => {
                        for m in set.maps() {
                            points += map_points(&m.map);
                        }
                    }
                    _ => return fallback(k),
                }
            }
            points / out_elements
        })
        .collect()
}

/// The kernel plan of a select-and-scatter ([`crate::select_scatter::plan`]); `None` for
/// any other op or a window the kernel does not take.
fn select_scatter_plan(instr: &hlo::InstrRef<'_>) -> Option<crate::select_scatter::SasPlan> {
    let i = instr.instr();
    if i.opcode() != Opcode::SelectAndScatter || i.operands().len() != 3 {
        return None;
    }
    let c = instr.computation();
    let dims = |k: usize| c.instr(i.operands()[k]).shape().dims().to_vec();
    crate::select_scatter::plan(&i.window()?.dims, &dims(0), &dims(1))
}

/// Points of a map's domain: exact when it has constraints and is small, else its box.
pub fn map_points(map: &affine::IndexingMap) -> f64 {
    let bounds: Vec<affine::Interval> = map.dims().iter().chain(map.ranges()).copied().collect();
    let size = affine::enumerate::box_size(&bounds);
    if map.constraints().is_empty() || size > ENUMERATE_LIMIT {
        return size as f64;
    }
    let nd = map.dims().len();
    let runtimes: Vec<i64> = map.runtimes().iter().map(|r| r.lo).collect();
    let mut count = 0u64;
    affine::enumerate::for_each_in_box(&bounds, |flat| {
        let p = affine::Point {
            dims: &flat[..nd],
            ranges: &flat[nd..],
            runtimes: &runtimes,
        };
        if map.constraints_satisfied(&p).unwrap_or(true) {
            count += 1;
        }
        true
    });
    count as f64
}

/// The modelled cost of one kernel.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KernelCost {
    /// Modelled time in seconds: `max(memory_s, compute_s) + launch_s`.
    pub time_s: f64,
    /// Time moving bytes.
    pub memory_s: f64,
    /// Time computing.
    pub compute_s: f64,
    /// Launch (or call) overhead.
    pub launch_s: f64,
    /// Bytes read: each input element once.
    pub bytes_read: f64,
    /// Bytes read again (served by a cache level when the input fits).
    pub bytes_reread: f64,
    /// Bytes written.
    pub bytes_written: f64,
    /// Flops.
    pub flops: f64,
    /// The part of `flops` that recomputes a transcendental per element of a reader
    /// ([`Evaluation::recomputed_flops`]).
    pub recomputed_flops: f64,
}

impl KernelCost {
    /// Adds another kernel's cost (for the cost of several kernels).
    pub fn add(&mut self, o: &KernelCost) {
        self.time_s += o.time_s;
        self.memory_s += o.memory_s;
        self.compute_s += o.compute_s;
        self.launch_s += o.launch_s;
        self.bytes_read += o.bytes_read;
        self.bytes_reread += o.bytes_reread;
        self.bytes_written += o.bytes_written;
        self.flops += o.flops;
        self.recomputed_flops += o.recomputed_flops;
    }

    /// Bytes moved: read, re-read and written.
    pub fn bytes(&self) -> f64 {
        self.bytes_read + self.bytes_reread + self.bytes_written
    }
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

/// The bytes an in-place root writes: a dynamic-update-slice writes its update into its
/// operand's buffer (the runtime aliases the two, copying the base first where it must
/// stay alive: a copy of its own), a scatter its updates' elements; `None` for any other
/// op (it writes all of its result).
fn in_place_update_bytes(info: &CompInfo, op: &OpInfo) -> Option<f64> {
    let bytes = |o: &InstrId| info.op(*o).map_or(0.0, |x| x.bytes);
    match op.opcode {
        Opcode::DynamicUpdateSlice => op.operands.get(1).map(bytes),
        Opcode::Scatter if op.operands.len() >= 3 => {
            let updates = (op.operands.len() - 1) / 2;
            let update_bytes: f64 = op.operands[updates + 1..].iter().map(bytes).sum();
            Some(update_bytes.min(op.bytes))
        }
        _ => None,
    }
}

/// How many times slower than the flops table's rate (vectorized polynomials at the
/// device's f32 rate) a transcendental runs when a CPU kernel recomputes it per element of
/// a reader. Such a read indexes the value through a division of the loop's index (a
/// broadcast behind a reshape root: `b[s0 * 8 + d1 / 32000]`), which the C compiler does not
/// vectorize, so the polynomial runs as one scalar call per element. Measured: beam search's
/// log-softmax kernel (`log` of a `[16,8]` sum recomputed for each of `[16,8,32000]`) took
/// 67.5 ms, 16.5 ns per element, where the table at the `cpu` description's 192 GFLOP/s
/// prices a log at 0.083 ns; backend-cpu measured its polynomials as scalar calls at
/// 10-20 ns (sin 16 ns, f64 log 21 ns). 128 prices a 16-flop log at 10.7 ns.
pub const SCALAR_RECOMPUTE_SLOWDOWN: f64 = 128.0;

/// Multiply-adds (all batch elements together) below which a CPU GEMM runs on the calling
/// thread alone: backend-cpu's `gemm::PARALLEL_MIN_FLOPS` (handing half of a smaller product
/// to the thread pool costs what the half saves: a recurrent step's `[16,192] x [192,192]`
/// took ~50 us in two parts, 16-21 on one thread). XLA:CPU's Eigen contractions pick one
/// thread for small products too.
pub const GEMM_ONE_THREAD_MULTIPLY_ADDS: f64 = (1u64 << 20) as f64;

/// The cost model of one device and the code generator that emits its kernels.
#[derive(Clone, Debug)]
pub struct CostModel<'d> {
    /// The device.
    pub device: &'d Device,
    /// Whether the code generator computes loop invariants once before the innermost loop
    /// ([`EmitterRules::hoists_invariant_values`]): [`evaluate`]'s `hoist`.
    pub hoists_invariant_values: bool,
    /// Whether reads down a column cost a cache line per element ([`cost_strided`]) and
    /// row sums the emitter leaves in order their chains ([`cost_chains`]): on for
    /// `--profile`'s predictions ([`CostModel::for_prediction`]); off for the fusion
    /// passes, whose decisions they change (19 of 66 fresh programs fused differently,
    /// transposes and slices leaving their consumers' kernels, softmax rows split) and
    /// which keep the earlier pricing until a same-run timing shows those decisions
    /// faster.
    pub prices_loop_order: bool,
}

impl<'d> CostModel<'d> {
    /// The model of kernels that the code generator whose switches are `rules` emits for
    /// `device`: the machine's facts from the one, how its kernels compute from the other.
    pub fn new(device: &'d Device, rules: &EmitterRules) -> CostModel<'d> {
        CostModel {
            device,
            hoists_invariant_values: rules.hoists_invariant_values,
            prices_loop_order: false,
        }
    }

    /// [`CostModel::new`] pricing what the emitter's loop order costs besides
    /// ([`CostModel::prices_loop_order`]): the model of `--profile`'s predictions.
    pub fn for_prediction(device: &'d Device, rules: &EmitterRules) -> CostModel<'d> {
        CostModel {
            prices_loop_order: true,
            ..CostModel::new(device, rules)
        }
    }
}

impl CostModel<'_> {
    /// The cost of a kernel made of `members` whose outputs are `roots`.
    pub fn kernel(&self, info: &CompInfo, members: &[InstrId], roots: &[InstrId]) -> KernelCost {
        let ev = evaluate(info, members, roots, self.hoists_invariant_values);
        self.kernel_evaluated(info, members, roots, &ev)
    }

    /// [`CostModel::kernel`] given `ev`, the kernel's [`evaluate`] with this model's
    /// `hoists_invariant_values`: for callers that need the evaluation too (priority
    /// fusion's hero checks), so a growing kernel is walked once per candidate, not twice.
    pub fn kernel_evaluated(
        &self,
        info: &CompInfo,
        members: &[InstrId],
        roots: &[InstrId],
        ev: &Evaluation,
    ) -> KernelCost {
        let d = self.device;
        if d.kind == DeviceKind::Cpu {
            // A dot alone is a library GEMM on the CPU: priced by what the library runs.
            if let [m] = members {
                if let Some(g) = info.op(*m).and_then(|o| o.gemm.as_ref()) {
                    return self.gemm(g);
                }
            }
        }
        let mut c = KernelCost {
            launch_s: d.kernel.launch_s,
            flops: ev.flops,
            ..KernelCost::default()
        };
        // A contraction of 16-bit floats widens its operands to `f32` where it packs them
        // (hloc's GEMM and XLA's alike): their re-reads move `f32` bytes.
        let widens = members.iter().filter_map(|&m| info.op(m)).any(|o| {
            matches!(o.opcode, Opcode::Dot | Opcode::Convolution)
                && matches!(o.element_type, Some(ElementType::BF16 | ElementType::F16))
        });
        // The buffers in-place roots update: aliased, not read (but where read otherwise).
        let updated: Vec<(InstrId, f64)> = roots
            .iter()
            .filter_map(|&r| info.op(r))
            .filter(|o| in_place_update_bytes(info, o).is_some())
            .filter_map(|o| Some((*o.operands.first()?, o.elements)))
            .collect();
        for (&input, &reads) in &ev.reads {
            let Some(op) = info.op(input) else { continue };
            let aliased: f64 = updated
                .iter()
                .filter(|&&(b, _)| b == input)
                .map(|&(_, e)| e)
                .sum();
            let reads = (reads - aliased).max(0.0);
            if op.elements <= 0.0 {
                continue;
            }
            let mut per_element = op.bytes / op.elements;
            if widens {
                per_element = per_element.max(4.0);
            }
            let first = reads.min(op.elements) * per_element;
            let again = (reads - op.elements).max(0.0) * per_element;
            c.bytes_read += first;
            c.bytes_reread += again;
            // Re-reads come from the cache level the input fits in, or the level one row
            // fits in where the kernel works row by row.
            let working_set = ev.row_bytes.map_or(op.bytes, |r| r.min(op.bytes));
            c.memory_s += first / d.reread_bytes_per_s(op.bytes as u64)
                + again / d.reread_bytes_per_s(working_set as u64);
            if d.kind == DeviceKind::Cpu && self.prices_loop_order {
                // Reads down a column fetch a line per element, from the level the input
                // fits in.
                if let Some(&(n, stride)) = ev.strided_reads.get(&input) {
                    let lines = cost_strided::extra_line_bytes(per_element, n, stride);
                    c.bytes_reread += lines;
                    c.memory_s += lines / d.reread_bytes_per_s(op.bytes as u64);
                }
            }
        }
        for &r in roots {
            if let Some(op) = info.op(r) {
                let written = in_place_update_bytes(info, op).unwrap_or(op.bytes);
                c.bytes_written += written;
                c.memory_s += written / d.reread_bytes_per_s(written as u64);
            }
        }
        let bf16 = roots
            .iter()
            .filter_map(|&r| info.op(r))
            .all(|o| o.element_type == Some(ElementType::BF16));
        let rate = if bf16 {
            d.bf16_flops_per_s()
        } else {
            d.f32_flops_per_s()
        };
        c.compute_s = c.flops / rate;
        if let Some(l) = self.loop_contractions(info, ev) {
            // Contractions run as loops: their taps at the loop's rate, not the vector rate.
            c.compute_s += l.seconds - l.flops / rate;
        }
        if d.kind == DeviceKind::Cpu && self.prices_loop_order {
            if let Some((flops, seconds)) = self.chained_reductions(info, ev) {
                // Short or narrow rows summed in order: a dependent step per element.
                c.compute_s += seconds - flops / rate;
            }
        }
        if let Some(t) = self.transcendentals(info, ev) {
            // Transcendentals at their polynomials' measured time per element.
            c.compute_s += t.seconds - t.flops / rate;
        }
        if d.kind == DeviceKind::Cpu {
            // A transcendental recomputed for every element that reads it (through a
            // broadcast the code generator does not hoist) is evaluated at an index that is
            // not the loop's: one polynomial after another, not a vector of them.
            c.recomputed_flops = ev.recomputed_flops;
            c.compute_s += ev.recomputed_flops * (SCALAR_RECOMPUTE_SLOWDOWN - 1.0) / rate;
        }
        c.time_s = c.memory_s.max(c.compute_s) + c.launch_s;
        c
    }

    /// The chained row reductions among a kernel's members ([`cost_chains`]), from its
    /// evaluation `ev`: `(flops the composition counted for them at the vector rate,
    /// seconds of their chains)`, each element a reduction reads one dependent step, the
    /// rows shared by the units; `None` where it has none or the device has no `[loops]`
    /// section.
    fn chained_reductions(&self, info: &CompInfo, ev: &Evaluation) -> Option<(f64, f64)> {
        let units = f64::from(self.device.compute.units.max(1));
        let (mut flops, mut seconds) = (0.0, 0.0);
        for (&m, &e) in &ev.evals {
            let Some(op) = info.op(m) else { continue };
            let Some(chain) = op.chained_row else {
                continue;
            };
            let steps = e * op.reads_per_element.first().copied().unwrap_or(0.0);
            flops += steps * op.flops_per_element;
            seconds += steps * chain.seconds_per_step(self.device)? / units;
        }
        (flops > 0.0).then_some((flops, seconds))
    }

    /// The cost of running `kernels` (each `(members, roots)`) one after another.
    pub fn kernels<'a>(
        &self,
        info: &CompInfo,
        kernels: impl IntoIterator<Item = (&'a [InstrId], &'a [InstrId])>,
    ) -> KernelCost {
        let mut total = KernelCost::default();
        for (m, r) in kernels {
            total.add(&self.kernel(info, m, r));
        }
        total
    }
}
