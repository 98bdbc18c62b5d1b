//! The GPU scatter emitter's decision: how a single-operand scatter's updates spread over
//! threads, and its thread map from a thread's coordinates to the update element it
//! applies (`(th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id, unroll_id] -> (update
//! index)`). The kernel writes the output in place (it holds the operand on entry), so
//! every strategy applies each update element once, where the update-to-output map puts
//! it, skipping a window that leaves the operand. Three strategies, by what the scatter
//! promises and what its combiner is:
//! - [`ScatterStrategy::Unique`]: the indices are unique (`unique_indices=true`): one
//!   thread per update element, which reads, combines and stores its output element (no
//!   other thread touches it);
//! - [`ScatterStrategy::Atomic`]: indices may collide but the combiner is exactly
//!   commutative and associative (integer add, multiply, min, max, and, or, xor; float
//!   min and max; overwrite is neither): one thread per update element, combining by an
//!   atomic read-modify-write. Any order of the colliding updates gives the same bits;
//! - [`ScatterStrategy::Ordered`]: any other combiner (overwrite, float add and multiply,
//!   a general computation), where the order of colliding updates decides the result: one
//!   thread per window element, each walking the updates in order (`chunk_id`), which is
//!   the sequential order the evaluator defines; two threads never meet when every
//!   operand dimension the indices address has a window of one element (then distinct
//!   window elements differ in a dimension no index moves). A scatter without window
//!   dimensions then runs on one thread: correct, no faster than the sequential kernel.
//!   With [`SORTED_MIN_POSITIONS`] scatter positions or more it runs sorted instead
//!   ([`SortedScatter`]): the positions sorted by destination, a thread per destination
//!   applying its run in the same order.
//!
//! Float adds stay ordered although a GPU has an atomic add for them: the result would
//! then depend on the threads' timing (XLA:GPU accepts that unless its deterministic-ops
//! flag is set; hloc keeps every program's outputs independent of the schedule, which
//! `--backend cuda-host` checks by running each block's threads in both orders).

use std::fmt;

use affine::{Expr, Interval, Var};
use hlo::{AttrName, AttrValue, ElementType, InstrId, Opcode};

use crate::gpu_launch::{coords, delinearize, thread_map, GpuEmitter, Launch, LOOP_THREADS, WARP};

/// How a scatter's updates are applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterStrategy {
    /// Unique indices: one thread per update element, a plain read, combine and store.
    Unique,
    /// One thread per update element, combining by an atomic read-modify-write.
    Atomic,
    /// One thread per window element, the updates in order.
    Ordered,
}

impl fmt::Display for ScatterStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ScatterStrategy::Unique => "unique indices",
            ScatterStrategy::Atomic => "atomic",
            ScatterStrategy::Ordered => "window threads, updates in order",
        })
    }
}

/// A scatter's launch: the strategy and the thread map to the update index.
#[derive(Clone, Debug, PartialEq)]
pub struct ScatterLaunch {
    /// How colliding updates are kept apart.
    pub strategy: ScatterStrategy,
    /// Grid, block and thread map (its results: the update's logical index). Under
    /// [`ScatterStrategy::Ordered`], `chunk_id` walks the update's scatter dimensions in
    /// row-major order, one update after the other in each thread.
    pub launch: Launch,
}

impl ScatterLaunch {
    /// `scatter (STRATEGY) emitter: blocks=B threads=T chunks=C` (the launch line of dumps
    /// and kernel comments).
    pub fn dims_text(&self) -> String {
        let chunks = self.launch.thread_map.ranges()[coords::CHUNK as usize].hi + 1;
        format!(
            "scatter ({}) emitter: blocks={} threads={} chunks={chunks}",
            self.strategy, self.launch.blocks, self.launch.threads
        )
    }
}

/// What a scatter's update computation is, when it is one binary operation of the element
/// and the update, or the update itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combiner {
    /// `update` (the element is overwritten).
    Overwrite,
    /// `op(element, update)` or `op(update, element)`.
    Binary(Opcode),
    /// Anything else.
    Other,
}

/// The update computation `comp` of a scatter, classified.
pub fn combiner(module: &hlo::Module, comp: hlo::CompId) -> Combiner {
    let c = module.computation(comp);
    let (Some(p0), Some(p1)) = (c.parameter(0), c.parameter(1)) else {
        return Combiner::Other;
    };
    let root = c.root_instr();
    if c.root() == p1 {
        return Combiner::Overwrite;
    }
    let ops = root.operands();
    let binary =
        ops.len() == 2 && ((ops[0] == p0 && ops[1] == p1) || (ops[0] == p1 && ops[1] == p0));
    match root.opcode() {
        op @ (Opcode::Add
        | Opcode::Multiply
        | Opcode::Minimum
        | Opcode::Maximum
        | Opcode::And
        | Opcode::Or
        | Opcode::Xor)
            if binary =>
        {
            Combiner::Binary(op)
        }
        _ => Combiner::Other,
    }
}

/// Whether applying `combiner` to elements of type `ty` gives the same bits in any order
/// of the updates (commutative and associative exactly: integers wrap, float min and max
/// pick an operand; float add and multiply round).
pub fn order_free(combiner: Combiner, ty: ElementType) -> bool {
    let Combiner::Binary(op) = combiner else {
        return false;
    };
    let int = ty.is_integral() || ty == ElementType::Pred;
    match op {
        Opcode::Minimum | Opcode::Maximum => int || ty.is_float(),
        Opcode::Add | Opcode::Multiply | Opcode::And | Opcode::Or | Opcode::Xor => int,
        _ => false,
    }
}

/// The scatter launch of the single-operand scatter `id` of `module`'s computation `comp`
/// (updates of logical `udims`, window dimensions `update_window_dims`), or `None` where
/// no strategy applies (several operands, an ordered combiner whose windows may meet
/// across window elements, no update).
pub fn scatter_launch(
    module: &hlo::Module,
    comp: hlo::CompId,
    id: InstrId,
) -> Result<Option<ScatterLaunch>, affine::MapError> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let (Some(dn), Some(apply)) = (instr.scatter_dimension_numbers(), instr.to_apply()) else {
        return Ok(None);
    };
    if instr.opcode() != Opcode::Scatter || instr.operands().len() != 3 {
        return Ok(None);
    }
    let operand = c.instr(instr.operands()[0]).shape();
    let udims = c.instr(instr.operands()[2]).shape().dims().to_vec();
    let Some(ty) = operand.element_type() else {
        return Ok(None);
    };
    if udims.iter().any(|&d| d <= 0) {
        return Ok(None);
    }
    let unique = matches!(
        instr.attr(&AttrName::UniqueIndices),
        Some(AttrValue::Bool(true))
    );
    let comb = combiner(module, apply);
    let strategy = if unique {
        ScatterStrategy::Unique
    } else if order_free(comb, ty) {
        ScatterStrategy::Atomic
    } else {
        ScatterStrategy::Ordered
    };
    let window: Vec<usize> = dn
        .update_window_dims
        .iter()
        .filter_map(|&d| usize::try_from(d).ok())
        .filter(|&d| d < udims.len())
        .collect();
    if strategy == ScatterStrategy::Ordered {
        // Every indexed operand dimension has a one-element window: inserted, or spanned
        // by a window dimension of size 1.
        let odims = operand.dims();
        let spanned: Vec<usize> = (0..odims.len())
            .filter(|&d| {
                !dn.inserted_window_dims.contains(&(d as i64))
                    && !dn.input_batching_dims.contains(&(d as i64))
            })
            .collect();
        let one_wide = dn.scatter_dims_to_operand_dims.iter().all(|&od| {
            match spanned.iter().position(|&d| d as i64 == od) {
                Some(j) => window.get(j).is_some_and(|&u| udims[u] == 1),
                None => true,
            }
        });
        // (A batching dimension's coordinate is the update's batch position, walked in
        // order by the chunks: it never separates window elements.)
        if !one_wide {
            return Ok(None);
        }
    }
    let rank = udims.len();
    let (parallel, serial): (Vec<usize>, Vec<usize>) = if strategy == ScatterStrategy::Ordered {
        (0..rank).partition(|d| window.contains(d))
    } else {
        ((0..rank).collect(), Vec::new())
    };
    let n: i64 = parallel.iter().map(|&d| udims[d]).product::<i64>().max(1);
    let chunks: i64 = serial.iter().map(|&d| udims[d]).product::<i64>().max(1);
    let threads = LOOP_THREADS.min((n + WARP - 1) / WARP * WARP);
    let blocks = (n + threads - 1) / threads;
    let linear = Expr::var(Var::dim(coords::BL_X)) * Expr::constant(threads)
        + Expr::var(Var::dim(coords::TH_X));
    let mut results = vec![Expr::constant(0); rank];
    // Row-major within each group: the parallel dimensions over the threads (consecutive
    // threads on the update's minor-most dimension), the serial ones over the chunks.
    for (group, e) in [
        (&parallel, linear),
        (&serial, Expr::var(Var::range(coords::CHUNK))),
    ] {
        let sub: Vec<i64> = group.iter().map(|&d| udims[d]).collect();
        for (p, x) in delinearize(e, &sub, &[]).into_iter().enumerate() {
            results[group[p]] = x;
        }
    }
    let constraints = if blocks * threads > n {
        vec![(linear, Interval::new(0, n - 1))]
    } else {
        vec![]
    };
    let map = thread_map((blocks, threads), (chunks, 1), results, constraints)?;
    Ok(Some(ScatterLaunch {
        strategy,
        launch: Launch {
            emitter: GpuEmitter::Loop,
            blocks,
            threads,
            unroll: 1,
            thread_map: map,
        },
    }))
}

/// Scatter positions (updates of one window each) from which an ordered scatter sorts
/// its updates by destination instead of walking them in one thread per window element:
/// the sorted form costs `log2(positions / 32) + 3` launches, so a short serial walk stays
/// (an estimate, not measured on a GPU: one launch's latency is a few microseconds,
/// about as long as a few dozen dependent read-modify-writes of one thread).
pub const SORTED_MIN_POSITIONS: i64 = 256;

/// Keys the sorted form puts in order by rank before its merge passes: a thread per key
/// counts the keys of its group below its own (32 loads of 8 bytes, two 128-byte lines
/// that the warp shares), one launch where merge passes of widths 1 to 16 took five.
pub const SORTED_GROUP: i64 = 32;

/// The sorted form of an ordered scatter: the updates' positions sorted by destination
/// (stably: the sequential order kept within a destination), then one thread per
/// destination (and window element) applying its run of updates in order, which is bit
/// for bit the sequential result whatever the combiner, with no atomics. Launches:
/// - keys: a thread per scatter position `i` stores `dest * positions + i` (`s64`), where
///   `dest` is the output offset of the update's first window element, or the output's
///   element count where the window leaves the operand (skipped); distinct starts have
///   disjoint windows (every indexed dimension's window is one element wide, the ordered
///   strategy's condition), so equal `dest` means the same output elements;
/// - groups: a thread per key stores it at its rank among the keys of its group of
///   `group` (keys are distinct: the ranks are a permutation of the group);
/// - `widths.len()` merge passes: a thread per key, runs of `w` merged into `2w` (the
///   keys are distinct, so the merge needs no tie rule and is the stable sort of `dest`);
/// - apply: a thread per (sorted position `p`, window element); the first of a run of
///   equal `dest` finds the run's end by a binary search (`search_steps`) and applies the
///   run's updates in order, `chunk` positions at a time over at most `chunks` chunks
///   (kernel loops have static bounds: `chunk` is about `sqrt(positions)`, so a run costs
///   `chunks` checks plus its length rounded to chunks).
#[derive(Clone, Debug, PartialEq)]
pub struct SortedScatter {
    /// Scatter positions (the keys).
    pub positions: i64,
    /// Elements of one update window.
    pub window: i64,
    /// The output's element count: the destination of an update whose window leaves the
    /// operand.
    pub skipped: i64,
    /// Keys per group sorted by rank before the merge passes.
    pub group: i64,
    /// The merge passes' input run widths (`group`, `2 * group`, ... below `positions`).
    pub widths: Vec<i64>,
    /// Binary-search steps over at most `positions` keys.
    pub search_steps: i64,
    /// Positions per chunk of the apply kernel's run loop (a power of two).
    pub chunk: i64,
    /// Chunks a run may span.
    pub chunks: i64,
}

impl SortedScatter {
    /// Kernels launched in all: keys, groups, the merge passes, apply.
    pub fn launches(&self) -> usize {
        self.widths.len() + 3
    }

    /// The launch line of kernel `k` (0: keys, 1: groups, then the merge passes, last:
    /// apply) of `blocks` blocks of `threads` threads.
    pub fn launch_text(&self, k: usize, (blocks, threads): (i64, i64)) -> String {
        let n = self.positions;
        let what = if k == 0 {
            "keys: a thread per position".to_string()
        } else if k == 1 {
            format!("groups of {} by rank", self.group)
        } else if k <= self.widths.len() + 1 {
            format!(
                "merge pass {} of {}: runs of {} into {}",
                k - 1,
                self.widths.len(),
                self.widths[k - 2],
                2 * self.widths[k - 2]
            )
        } else {
            format!(
                "apply: a thread per sorted position and window element, runs in chunks of {} \
                 (at most {})",
                self.chunk, self.chunks
            )
        };
        format!(
            "scatter (sorted by destination, {} launches; {what}) emitter: blocks={blocks} \
             threads={threads} positions={n} window={}",
            self.launches(),
            self.window
        )
    }
}

/// The sorted form of scatter `id` of `comp` (see [`SortedScatter`]): where its strategy
/// is [`ScatterStrategy::Ordered`], it has at least [`SORTED_MIN_POSITIONS`] scatter
/// positions, and its keys fit an `s64`; else `None`. Batching dimensions need nothing
/// of their own: an operand batching dimension's coordinate is the update's batch
/// position, part of the output offset `dest`, and like an inserted dimension it is one
/// element wide, so equal `dest` still means the same window and distinct ones disjoint
/// windows.
pub fn sorted_scatter(
    module: &hlo::Module,
    comp: hlo::CompId,
    id: InstrId,
) -> Result<Option<SortedScatter>, affine::MapError> {
    let Some(sl) = scatter_launch(module, comp, id)? else {
        return Ok(None);
    };
    let c = module.computation(comp);
    let instr = c.instr(id);
    if sl.strategy != ScatterStrategy::Ordered {
        return Ok(None);
    }
    let positions = sl.launch.thread_map.ranges()[coords::CHUNK as usize].hi + 1;
    let udims = c.instr(instr.operands()[2]).shape().dims();
    let window: i64 = udims.iter().product::<i64>() / positions.max(1);
    let Ok(skipped) = instr.shape().element_count() else {
        return Ok(None);
    };
    let fits = skipped
        .checked_add(1)
        .and_then(|e| e.checked_mul(positions))
        .is_some_and(|k| k < i64::MAX / 2);
    if positions < SORTED_MIN_POSITIONS || !fits {
        return Ok(None);
    }
    let mut widths = Vec::new();
    let mut w = SORTED_GROUP;
    while w < positions {
        widths.push(w);
        w *= 2;
    }
    // ceil(log2(positions + 1)) halvings empty any range of up to `positions` keys.
    let search_steps = 64 - i64::from((positions as u64).leading_zeros());
    let sqrt = (positions as f64).sqrt().ceil() as i64;
    let chunk = (sqrt.max(1) as u64).next_power_of_two() as i64;
    let chunks = (positions + chunk - 1) / chunk;
    Ok(Some(SortedScatter {
        positions,
        window,
        skipped,
        group: SORTED_GROUP,
        widths,
        search_steps,
        chunk,
        chunks,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(text: &str) -> hlo::Module {
        hlo::parse_module(text).unwrap()
    }

    fn launch_of(text: &str) -> Option<ScatterLaunch> {
        let m = module(text);
        let comp = m.entry_id();
        let c = m.computation(comp);
        let id = c.root();
        scatter_launch(&m, comp, id).unwrap()
    }

    fn scatter(ty: &str, combiner: &str, attrs: &str, window: (&str, &str, &str)) -> String {
        let (upd, uwd, iwd) = window;
        let body = match combiner {
            "set" => format!("ROOT b = {ty}[] parameter(1)"),
            op => format!("b = {ty}[] parameter(1)\n  ROOT r = {ty}[] {op}(a, b)"),
        };
        format!(
            "HloModule m\n\ncomb {{\n  a = {ty}[] parameter(0)\n  {body}\n}}\n\n\
             ENTRY e {{\n  o = {ty}[8,3] parameter(0)\n  i = s32[6,1] parameter(1)\n  \
             u = {ty}[{upd}] parameter(2)\n  ROOT s = {ty}[8,3] scatter(o, i, u), \
             update_window_dims={{{uwd}}}, inserted_window_dims={{{iwd}}}, \
             scatter_dims_to_operand_dims={{0}}, index_vector_dim=1{attrs}, to_apply=comb\n}}\n"
        )
    }

    /// Each strategy's choice, and its thread map by enumeration: every update element
    /// exactly once; ordered threads walk the updates in row-major order.
    #[test]
    fn strategies_and_their_thread_maps() {
        let rows = ("6,3", "1", "0");
        let cases = [
            (scatter("f32", "add", "", rows), ScatterStrategy::Ordered),
            (scatter("s32", "add", "", rows), ScatterStrategy::Atomic),
            (scatter("f32", "maximum", "", rows), ScatterStrategy::Atomic),
            (scatter("f32", "set", "", rows), ScatterStrategy::Ordered),
            (
                scatter("f32", "multiply", ", unique_indices=true", rows),
                ScatterStrategy::Unique,
            ),
        ];
        for (text, want) in cases {
            let l = launch_of(&text).expect("a launch");
            assert_eq!(l.strategy, want, "{text}");
            let mut seen = vec![Vec::new(); 18];
            crate::gpu_launch::for_each_thread_point(&l.launch.thread_map, |flat, idx| {
                seen[(idx[0] * 3 + idx[1]) as usize].push((flat[3], flat[0], flat[6]));
            });
            assert!(seen.iter().all(|s| s.len() == 1), "{text}: {seen:?}");
            if want == ScatterStrategy::Ordered {
                // Three threads (the window), six chunks each: update r is chunk r.
                assert_eq!(l.launch.threads, 32);
                for (e, s) in seen.iter().enumerate() {
                    assert_eq!(s[0], (0, e as i64 % 3, e as i64 / 3), "{text}");
                }
            }
        }
        assert!(launch_of(&scatter("f32", "add", "", rows))
            .unwrap()
            .dims_text()
            .contains("chunks=6"));
    }

    /// An ordered combiner whose windows span an indexed dimension (windows of two rows
    /// may overlap across window elements) has no launch.
    #[test]
    fn overlapping_windows_take_no_ordered_launch() {
        let text = scatter("f32", "add", "", ("6,2,3", "1,2", ""));
        assert!(launch_of(&text).is_none(), "{text}");
        // The same windows with an order-free combiner are atomic.
        let ints = scatter("s32", "add", "", ("6,2,3", "1,2", ""));
        assert_eq!(launch_of(&ints).unwrap().strategy, ScatterStrategy::Atomic);
    }

    #[test]
    fn combiners_are_classified() {
        let m = module(&scatter("f32", "set", "", ("6,3", "1", "0")));
        let comp = m.computation_by_name("comb").unwrap();
        assert_eq!(combiner(&m, comp), Combiner::Overwrite);
        assert!(order_free(Combiner::Binary(Opcode::Add), ElementType::S32));
        assert!(!order_free(Combiner::Binary(Opcode::Add), ElementType::F32));
        assert!(order_free(
            Combiner::Binary(Opcode::Maximum),
            ElementType::BF16
        ));
        assert!(!order_free(Combiner::Overwrite, ElementType::S32));
    }

    /// An ordered scatter of many positions takes the sorted form (any combiner that is
    /// not order-free); few positions, order-free combiners and unique indices do not.
    #[test]
    fn many_ordered_updates_sort_by_destination() {
        let sorted = |ty: &str, comb: &str, attrs: &str, n: i64| {
            let text = scatter(ty, comb, attrs, ("6,3", "1", "0"))
                .replace("s32[6,1]", &format!("s32[{n},1]"))
                .replace(
                    &format!("{ty}[6,3] parameter(2)"),
                    &format!("{ty}[{n},3] parameter(2)"),
                );
            let m = module(&text);
            let comp = m.entry_id();
            sorted_scatter(&m, comp, m.computation(comp).root()).unwrap()
        };
        let s = sorted("f32", "add", "", 300).expect("sorted");
        assert_eq!((s.positions, s.window, s.skipped), (300, 3, 24));
        assert_eq!(s.widths, vec![32, 64, 128, 256]);
        assert_eq!((s.chunk, s.chunks, s.search_steps), (32, 10, 9));
        assert_eq!(s.launches(), 7);
        assert!(s
            .launch_text(1, (3, 128))
            .contains("7 launches; groups of 32 by rank)"));
        assert!(s
            .launch_text(2, (3, 128))
            .contains("merge pass 1 of 4: runs of 32 into 64"));
        assert!(s
            .launch_text(6, (8, 128))
            .starts_with("scatter (sorted by destination, 7 launches; apply: "));
        assert!(sorted("f32", "set", "", 256).is_some());
        assert!(sorted("s32", "set", "", 256).is_some());
        assert!(sorted("f32", "add", "", 255).is_none());
        assert!(sorted("s32", "add", "", 300).is_none());
        assert!(sorted("f32", "add", ", unique_indices=true", 300).is_none());
    }

    /// Batching dimensions take the sorted form too: the positions count the batch.
    #[test]
    fn batched_ordered_updates_sort_by_destination() {
        let text = "HloModule m\n\ncomb {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
             ROOT r = f32[] add(a, b)\n}\n\nENTRY e {\n  o = f32[4,30,3] parameter(0)\n  \
             i = s32[4,100,1] parameter(1)\n  u = f32[4,100,3] parameter(2)\n  \
             ROOT s = f32[4,30,3] scatter(o, i, u), update_window_dims={2}, \
             inserted_window_dims={1}, input_batching_dims={0}, \
             scatter_indices_batching_dims={0}, scatter_dims_to_operand_dims={1}, \
             index_vector_dim=2, to_apply=comb\n}\n";
        let m = module(text);
        let comp = m.entry_id();
        let s = sorted_scatter(&m, comp, m.computation(comp).root())
            .unwrap()
            .expect("sorted");
        assert_eq!((s.positions, s.window, s.skipped), (400, 3, 360));
    }
}
