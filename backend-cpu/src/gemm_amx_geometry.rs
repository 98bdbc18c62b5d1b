//! How an AMX product ([`crate::gemm_amx`]) is cut into tiles, L2-sized blocks of tile
//! panels and tasks for the threads.

use plan::GemmShape;

use crate::gemm_amx_pack_s8::TILE_K_S8;
use crate::gemm_amx_tiles::{Op, TILE_BYTES, TILE_K, TILE_ROWS};

/// Multiply-adds from which a product is split among the threads: one core sums about
/// 2^28 a millisecond on the tiles, and handing work to the pool costs 15-25 us (see
/// `gemm::PARALLEL_MIN_FLOPS`).
const PARALLEL_MIN_MACS: usize = 1 << 23;

/// Bytes of a block's lhs and rhs panels together: half of a 2 MiB L2.
const BLOCK_BYTES: usize = 1 << 20;

/// The largest block, in panels of 16 a side.
const MAX_BLOCK_PANELS: usize = 32;

/// How a product is cut into tiles and blocks.
#[derive(Debug)]
pub(crate) struct Geometry {
    /// Batch elements.
    pub(crate) count: usize,
    /// Panels of 16 rows of the result (and the lhs).
    pub(crate) mp: usize,
    /// Panels of 16 columns of the result (and the rhs).
    pub(crate) np: usize,
    /// Tile steps along the contraction (32 `bf16` or 64 `s8` each).
    pub(crate) steps: usize,
    /// Whether the lhs is read in place (rows contiguous, whole tiles).
    pub(crate) lhs_direct: bool,
    /// Panels of a block: rows, columns (even but at the edges).
    pub(crate) block: (usize, usize),
    /// Whether the blocks run on the pool.
    pub(crate) parallel: bool,
    /// Whether each column block's rhs panels are packed by the task that computes the
    /// block's whole column (every row block), into that thread's buffer, rather than all
    /// of them before any product: the packed panels are then read from L2 while still
    /// there, and the packing of one block overlaps the other threads' products. A 4096 x
    /// 4096 `s8` rhs was otherwise written out whole (16 MiB) and read back per row block.
    /// Only `s8` products whose rhs rows are contiguous (packed by tile steps), and not
    /// where the column blocks are too few for the threads: `bf16` ones ran as fast or
    /// slower so (a transposed `bf16` rhs, `[1024, 1024]`, 2.7-3.0 ms against 2.3-2.4, the
    /// binaries alternated on the loaded machine).
    pub(crate) fused: bool,
}

impl Geometry {
    pub(crate) fn of(s: &GemmShape, op: Op, threads: usize) -> Geometry {
        let count: usize = s.batch.iter().map(|b| b.0).product();
        let mp = s.m.div_ceil(TILE_ROWS);
        let np = s.n.div_ceil(TILE_ROWS);
        let k_step = step_elements(op);
        let steps = s.k.div_ceil(k_step);
        let lhs_direct = s.lhs.1 == 1
            && s.lhs.0 >= s.k as isize
            && s.k.is_multiple_of(k_step)
            && s.m.is_multiple_of(TILE_ROWS);
        let side = (BLOCK_BYTES / 2 / (steps * TILE_BYTES)).clamp(2, MAX_BLOCK_PANELS) & !1;
        let (mut bm, mut bn) = (side.min(mp), side.min(np));
        let macs = count.saturating_mul(s.m * s.n * s.k);
        let parallel = threads > 1 && macs >= PARALLEL_MIN_MACS;
        let mut fused = op == Op::S8 && s.rhs.1 == 1;
        if parallel && fused {
            // Enough column blocks (each a task) for every thread to take two, else the
            // blocks of rows and columns are the tasks.
            let columns = |bn: usize| count * np.div_ceil(bn);
            let mut fbn = bn;
            while columns(fbn) < 2 * threads && fbn > 2 {
                fbn = (fbn / 2).max(2) & !1;
            }
            fused = columns(fbn) >= 2 * threads;
            if fused {
                bn = fbn;
            }
        }
        if parallel && !fused {
            // Enough blocks for every thread to take two.
            let blocks = |bm: usize, bn: usize| count * mp.div_ceil(bm) * np.div_ceil(bn);
            while blocks(bm, bn) < 2 * threads && (bm > 2 || bn > 2) {
                if bm >= bn {
                    bm = (bm / 2).max(2) & !1;
                } else {
                    bn = (bn / 2).max(2) & !1;
                }
            }
        }
        Geometry {
            count,
            mp,
            np,
            steps,
            lhs_direct,
            block: (bm.max(1), bn.max(1)),
            parallel,
            fused,
        }
    }
}

/// Contracted elements of one tile step of `op`'s operands (64 bytes).
pub(crate) fn step_elements(op: Op) -> usize {
    match op {
        Op::Bf16 => TILE_K,
        Op::S8 => TILE_K_S8,
    }
}

/// Bytes of one element of `op`'s operands.
pub(crate) fn element_bytes(op: Op) -> usize {
    match op {
        Op::Bf16 => 2,
        Op::S8 => 1,
    }
}
