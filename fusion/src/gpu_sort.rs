//! The GPU sort emitter's decision: which sorts and top-ks run as a bitonic sort in shared
//! memory, how many rows a block sorts, and the thread map from a thread's coordinates to
//! the element it loads and stores (`(th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id,
//! unroll_id] -> (index)`).
//!
//! A block holds `rows_per_block` rows of the sorted dimension in shared memory, each in
//! `padded` slots (the row length rounded up to a power of two), every operand's element
//! beside its position in the row (an `s32`). It sorts each row by a bitonic network of
//! compare-exchanges in one direction (each merge starts by comparing a half with the
//! other half reversed, then halves it), so the slots past the row's end behave as
//! elements after every other and are never compared: no padding value is needed. Two
//! elements are ordered by the comparator, and where neither is before the other by their
//! positions, which makes the order total and the result the stable sort's (the one the
//! evaluator defines) whether or not the sort asks for stability. A top-k sorts its row
//! and stores the first `k`.
//!
//! A row takes the sort only where its slots of every operand and the positions fit the
//! shared memory one block may declare statically (48 KiB on every CUDA architecture, at
//! most the device's per-SM amount); longer rows stay on the library routine.

use std::fmt;

use affine::{Expr, Interval, Var};
use device::Device;
use hlo::{CompId, ElementType, InstrId, Opcode};

use crate::gpu_launch::{coords, delinearize, thread_map, GpuEmitter, Launch, WARP};

/// Bytes of static shared memory one block may declare on every CUDA architecture (the
/// CUDA printer refuses more: dynamic shared memory needs an opt-in it does not use).
pub const STATIC_SHARED_BYTES: i64 = 48 * 1024;

/// Compare-exchanges a block aims to run at once (one per thread): four warps, as the
/// loop emitter's blocks.
pub const SORT_THREADS: i64 = 128;

/// Most threads of a sort block (a long row's pairs beyond them loop).
pub const MAX_SORT_THREADS: i64 = 512;

/// What orders a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortOrder {
    /// A `sort`'s comparator over two elements of every operand (parameters `2k` and
    /// `2k + 1` are operand `k`'s elements `a` and `b`).
    Sort {
        /// The comparator computation.
        comparator: CompId,
    },
    /// The `topk` op: XLA's total order, largest first unless `largest=false`.
    TopK {
        /// The `k` largest (else smallest).
        largest: bool,
    },
    /// XLA:CPU's `TopK` custom call: its comparator over two values (and, with four
    /// parameters, their `s32` positions).
    TopKCall {
        /// The comparator computation.
        comparator: CompId,
        /// Its parameters: 2 or 4.
        params: usize,
    },
}

/// A sort's (or top-k's) launch.
#[derive(Clone, Debug, PartialEq)]
pub struct SortLaunch {
    /// What orders a row.
    pub order: SortOrder,
    /// The sorted logical dimension.
    pub dim: usize,
    /// The operands' logical dimensions.
    pub dims: Vec<i64>,
    /// Row length.
    pub n: i64,
    /// Slots per row: `n` rounded up to a power of two.
    pub padded: i64,
    /// Elements stored per row: `n` for a sort, `k` for a top-k.
    pub keep: i64,
    /// Rows (elements of the other dimensions).
    pub rows: i64,
    /// Rows one block sorts.
    pub rows_per_block: i64,
    /// Grid, block and the write map: thread `th_x` of block `bl_x` stores, at chunk
    /// `chunk_id`, slot `chunk_id * threads + th_x` of the block's rows, whose result
    /// index (the row's coordinates, the position `< keep` along `dim`) the map gives.
    pub launch: Launch,
    /// The read map: the same slots' operand elements (positions `< n`).
    pub read_map: affine::IndexingMap,
}

impl SortLaunch {
    /// `sort (bitonic, shared memory) emitter: blocks=B threads=T rows/block=R slots=S`
    /// (the launch line of dumps and kernel comments).
    pub fn dims_text(&self) -> String {
        format!(
            "sort (bitonic, shared memory) emitter: blocks={} threads={} rows/block={} \
             slots/row={} stages={}",
            self.launch.blocks,
            self.launch.threads,
            self.rows_per_block,
            self.padded,
            self.stages().len()
        )
    }

    /// The network's compare-exchange stages in order, `(half, flip)`: pairs `half`
    /// apart within groups of `2 * half` slots, or with `flip` the group's first half
    /// against its second half reversed (the start of each merge).
    pub fn stages(&self) -> Vec<(i64, bool)> {
        let mut out = Vec::new();
        let mut size = 2;
        while size <= self.padded {
            out.push((size / 2, true));
            let mut h = size / 4;
            while h >= 1 {
                out.push((h, false));
                h /= 2;
            }
            size *= 2;
        }
        out
    }
}

impl fmt::Display for SortOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SortOrder::Sort { .. } => f.write_str("comparator"),
            SortOrder::TopK { largest: true } => f.write_str("top-k, largest first"),
            SortOrder::TopK { largest: false } => f.write_str("top-k, smallest first"),
            SortOrder::TopKCall { .. } => f.write_str("TopK comparator"),
        }
    }
}

/// The GPU sort launch of instruction `id` of `module`'s computation `comp` (a `sort`
/// along one dimension, a `topk` or a `TopK` custom call) on `device`, or `None` where
/// it is none of these, has no element, or a row does not fit the shared memory.
pub fn sort_launch(
    module: &hlo::Module,
    comp: CompId,
    id: InstrId,
    device: &Device,
) -> Result<Option<SortLaunch>, affine::MapError> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let Some(&first) = instr.operands().first() else {
        return Ok(None);
    };
    let shape = c.instr(first).shape();
    let dims = shape.dims().to_vec();
    let m2m: Vec<i64> = shape
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_default();
    let rank = dims.len();
    if rank == 0 {
        return Ok(None);
    }
    let result_last = |k: usize| {
        let leaves = instr.shape().tuple_shapes();
        leaves.get(k).and_then(|s| s.dims().last().copied())
    };
    let (order, dim, keep) = match instr.opcode() {
        Opcode::Sort => {
            let (Some([d]), Some(comparator)) = (instr.dimensions(), instr.to_apply()) else {
                return Ok(None);
            };
            let Some(d) = usize::try_from(*d).ok().filter(|&d| d < rank) else {
                return Ok(None);
            };
            (SortOrder::Sort { comparator }, d, dims[d])
        }
        Opcode::TopK => {
            let largest = !matches!(
                instr.attr(&hlo::AttrName::Largest),
                Some(hlo::AttrValue::Bool(false))
            );
            let Some(k) = instr.topk_k() else {
                return Ok(None);
            };
            (SortOrder::TopK { largest }, rank - 1, k)
        }
        Opcode::CustomCall if instr.custom_call_target() == Some("TopK") => {
            let Some(&comparator) = instr.called_computations().first() else {
                return Ok(None);
            };
            let params = module.computation(comparator).parameters().len();
            let Some(k) = result_last(0) else {
                return Ok(None);
            };
            if params != 2 && params != 4 {
                return Ok(None);
            }
            (SortOrder::TopKCall { comparator, params }, rank - 1, k)
        }
        _ => return Ok(None),
    };
    let n = dims[dim];
    if n <= 0 || keep <= 0 || keep > n || dims.iter().any(|&d| d <= 0) {
        return Ok(None);
    }
    // Every operand shares the first's dimensions (the verifier's rule for sort).
    let mut slot_bytes = 4; // the position
    for &op in instr.operands() {
        let s = c.instr(op).shape();
        if s.dims() != dims.as_slice() {
            return Ok(None);
        }
        match s.element_type().and_then(ElementType::byte_width) {
            Some(w) if w > 0 => slot_bytes += i64::from(w),
            _ => return Ok(None),
        }
    }
    let padded = (n as u64).next_power_of_two() as i64;
    let shared = STATIC_SHARED_BYTES.min(device.cache.shared_memory_per_unit as i64);
    let row_bytes = padded.saturating_mul(slot_bytes);
    if row_bytes > shared {
        return Ok(None);
    }
    let rows: i64 = dims.iter().product::<i64>() / n;
    // Rows per block: enough for SORT_THREADS pairs, within the shared memory.
    let want = (2 * SORT_THREADS / padded).max(1);
    let rows_per_block = want.min(rows).min(shared / row_bytes).max(1);
    let slots = rows_per_block * padded;
    let pairs = (slots / 2).max(1);
    let threads = ((pairs + WARP - 1) / WARP * WARP).min(MAX_SORT_THREADS);
    let blocks = (rows + rows_per_block - 1) / rows_per_block;
    let chunks = (slots + threads - 1) / threads;
    // The other dimensions in the first operand's physical order.
    let order_all = crate::gpu_launch::physical_order(rank, &m2m);
    let others: Vec<usize> = order_all.iter().copied().filter(|&d| d != dim).collect();
    let odims: Vec<i64> = others.iter().map(|&d| dims[d]).collect();
    let om2m: Vec<i64> = (0..others.len() as i64).collect();
    let slot = Expr::var(Var::range(coords::CHUNK)) * Expr::constant(threads)
        + Expr::var(Var::dim(coords::TH_X));
    let row = Expr::var(Var::dim(coords::BL_X)) * Expr::constant(rows_per_block)
        + slot.floor_div(Expr::constant(padded));
    let pos = slot.modulo(Expr::constant(padded));
    let mut results = vec![Expr::constant(0); rank];
    for (p, e) in delinearize(row, &odims, &om2m).into_iter().enumerate() {
        results[others[p]] = e;
    }
    results[dim] = pos;
    let map_keeping = |limit: i64| {
        let mut constraints = Vec::new();
        if chunks * threads > slots {
            constraints.push((slot, Interval::new(0, slots - 1)));
        }
        if padded > limit {
            constraints.push((pos, Interval::new(0, limit - 1)));
        }
        if blocks * rows_per_block > rows {
            constraints.push((row, Interval::new(0, rows - 1)));
        }
        thread_map((blocks, threads), (chunks, 1), results.clone(), constraints)
    };
    let read_map = map_keeping(n)?;
    let write_map = map_keeping(keep)?;
    Ok(Some(SortLaunch {
        order,
        dim,
        dims,
        n,
        padded,
        keep,
        rows,
        rows_per_block,
        launch: Launch {
            emitter: GpuEmitter::Loop,
            blocks,
            threads,
            unroll: 1,
            thread_map: write_map,
        },
        read_map,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch_of(text: &str) -> Option<SortLaunch> {
        let m = hlo::parse_module(text).unwrap();
        let comp = m.entry_id();
        let id = m.computation(comp).root();
        sort_launch(&m, comp, id, &device::load("h100").unwrap()).unwrap()
    }

    fn sort(ty: &str, dims: &str, dim: usize, layout: &str) -> String {
        format!(
            "HloModule m\n\ncmp {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
             ROOT lt = pred[] compare(a, b), direction=LT\n}}\n\n\
             ENTRY e {{\n  x = {ty}[{dims}]{layout} parameter(0)\n  \
             ROOT s = {ty}[{dims}]{layout} sort(x), dimensions={{{dim}}}, to_apply=cmp\n}}\n"
        )
    }

    /// Every element of the operand is read by exactly one (thread, chunk) of one block,
    /// at a slot of its own row (by enumeration); rows share a block as the launch says.
    #[test]
    fn read_maps_cover_every_element_once() {
        let cases = [
            ("f32", "12", 0, "", 1, 16),
            ("f32", "5,3", 0, "{1,0}", 3, 8),
            ("s64", "7,100", 1, "", 7, 128),
            ("f32", "3,4,5", 1, "{0,2,1}", 15, 4),
            ("u8", "3000", 0, "", 1, 4096),
        ];
        for (ty, dims, dim, layout, rows, padded) in cases {
            let text = sort(ty, dims, dim, layout);
            let l = launch_of(&text).expect("a launch");
            assert_eq!((l.rows, l.padded), (rows, padded), "{text}");
            let d: Vec<i64> = dims.split(',').map(|x| x.parse().unwrap()).collect();
            let n: i64 = d.iter().product();
            let mut seen = vec![Vec::new(); n as usize];
            crate::gpu_launch::for_each_thread_point(&l.read_map, |flat, idx| {
                let row_major = idx.iter().zip(&d).fold(0, |acc, (i, e)| acc * e + i);
                let slot = flat[6] * l.launch.threads + flat[0];
                seen[row_major as usize].push((flat[3], slot));
            });
            assert!(seen.iter().all(|s| s.len() == 1), "{text}: {seen:?}");
            // Elements of one row share a block and a run of `padded` slots.
            for (e, s) in seen.iter().enumerate() {
                let (block, slot) = s[0];
                let pos = {
                    let mut r = e as i64;
                    let mut idx = vec![0; d.len()];
                    for k in (0..d.len()).rev() {
                        idx[k] = r % d[k];
                        r /= d[k];
                    }
                    idx[dim]
                };
                assert_eq!(slot % l.padded, pos, "{text}");
                assert!(block < l.launch.blocks);
            }
        }
    }

    #[test]
    fn rows_that_do_not_fit_the_shared_memory_take_no_launch() {
        // 8192 f32 keys and their positions: 64 KiB.
        assert!(launch_of(&sort("f32", "8192", 0, "")).is_none());
        assert!(launch_of(&sort("f32", "4096", 0, "")).is_some());
    }

    #[test]
    fn stages_form_the_bitonic_network() {
        let l = launch_of(&sort("f32", "12", 0, "")).unwrap();
        assert_eq!(
            l.stages(),
            vec![
                (1, true),
                (2, true),
                (1, false),
                (4, true),
                (2, false),
                (1, false),
                (8, true),
                (4, false),
                (2, false),
                (1, false)
            ]
        );
        assert!(l
            .dims_text()
            .contains("rows/block=1 slots/row=16 stages=10"));
    }

    #[test]
    fn top_k_keeps_k_per_row() {
        let text = "HloModule m\n\nENTRY e {\n  x = f32[4,9] parameter(0)\n  \
                    ROOT t = (f32[4,3], s32[4,3]) topk(x), k=3, largest=true\n}\n";
        let l = launch_of(text).unwrap();
        assert_eq!((l.n, l.keep, l.padded, l.rows), (9, 3, 16, 4));
        assert_eq!(l.order, SortOrder::TopK { largest: true });
        let mut stored = 0;
        crate::gpu_launch::for_each_thread_point(&l.launch.thread_map, |_, idx| {
            assert!(idx[1] < 3);
            stored += 1;
        });
        assert_eq!(stored, 12);
    }
}
