//! `bf16 x bf16` GEMMs (result `f32`, `bf16` or `f16`) on AVX512-BF16 (Zen 4 and later,
//! Cooper Lake; issue 30) where the CPU has no AMX tiles: XLA:CPU sums these with the same
//! `vdpbf16ps`, and the convert path ([`crate::gemm_half::Widened`]: both operands widened
//! to `f32` copies, then an `f32` GEMM) took 1.69x its time on `[1024,1024]^2`.
//!
//! The rhs is packed once per call into [`crate::gemm_amx_pack`]'s panels (16 columns of
//! contracted `(even, odd)` pairs, zeros past `k` and `n`): exactly the operand one
//! `vdpbf16ps` reads per pair. The lhs is read in place where its contracted elements are
//! contiguous (each pair one `u32` to broadcast; the last pair of an odd `k` from a copy
//! with a zero partner, since its partner in memory is the next row's element or past
//! the buffer), else packed per row chunk as `[q][MR]` pairs. Each task owns a block of
//! result rows and panels of one batch element and walks the contraction in [`KC`]-pair
//! blocks and its rows in [`MC`]-row chunks, so the two panels of a register tile stay in
//! L1 and the chunk's lhs in L2, as the `s8` kernel ([`crate::gemm_s8_avx2`]) does. The
//! sums go straight into an `f32` result with contiguous rows where the block is whole
//! tiles, else into a per-thread `f32` block that is rounded once (to nearest even) into
//! the result's type.
//!
//! As on the tiles, `bf16` denormal inputs read as zero and denormal sums flush to zero
//! ([`crate::gemm_bf16_tile`]); otherwise the results differ from the convert path only
//! in the order of the `f32` additions.
#![allow(unsafe_code)]

use std::cell::Cell;

use codegen::kir::ScalarType;
use plan::GemmShape;
use rayon::prelude::*;

use crate::gemm_amx_pack::{self, View, TILE_U16};
use crate::gemm_amx_tiles::TILE_K;
use crate::gemm_bf16_tile::{self as kernel, LhsPairs, MR, NR};
use crate::gemm_half::convert;

/// Contracted pairs per block: two panels' block is `2 * KC * 64` bytes (32 KiB), in L1.
const KC: usize = 256;
/// Rows of a chunk of the lhs (a multiple of [`MR`]): `MC * KC * 4` bytes (96 KiB) in L2.
const MC: usize = 96;
/// Multiply-adds from which a product is split among the threads: one core sums about
/// 2^27 a millisecond here, and handing work to the pool costs 15-25 us (see
/// `gemm::PARALLEL_MIN_FLOPS`).
const PARALLEL_MIN_MACS: usize = 1 << 22;
/// Tasks per thread of a split product: a descheduled thread holds back one of them.
const TASKS_PER_THREAD: usize = 4;

thread_local! {
    /// This thread's packed rhs and lhs chunk (`u32` pairs), kept between calls (no page
    /// faults per call); taken out while in use.
    static PAIRS: [Cell<Vec<u32>>; 2] = const { [Cell::new(Vec::new()), Cell::new(Vec::new())] };
    /// This thread's `f32` block of sums for results not stored in place.
    static SUMS: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// A buffer of at least `len` `u32`s from slot `slot` (contents unspecified).
fn take_pairs(slot: usize, len: usize) -> Vec<u32> {
    let mut v = PAIRS.with(|s| s[slot].take());
    if v.len() < len {
        v = vec![0; len];
    }
    v
}

/// Runs GEMM `s` on AVX512-BF16 when both its operands are `bf16` and this process's
/// path is [`crate::gemm_path::Path::Avx512Bf16`]; `false` (nothing written) otherwise.
///
/// # Safety
/// As `gemm::gemm`'s: the pointers hold the operands and the result with the layouts the
/// shape's strides were computed from, the result aliases neither operand.
pub(crate) unsafe fn gemm(
    s: &GemmShape,
    ptrs: (*const u8, *const u8, *mut u8),
    threads: usize,
) -> bool {
    let runs = s.lhs_ty == ScalarType::BF16
        && s.rhs_ty == ScalarType::BF16
        && matches!(
            s.out_ty,
            ScalarType::F32 | ScalarType::BF16 | ScalarType::F16
        )
        && crate::gemm_path::path() == crate::gemm_path::Path::Avx512Bf16;
    if runs {
        // SAFETY: the caller's contract; the path is chosen only where the CPU has
        // AVX512-BF16.
        unsafe { gemm_on(s, ptrs, threads) };
    }
    runs
}

/// Runs `bf16 x bf16` GEMM `s` (result `f32`, `bf16` or `f16`) on the register tiles.
///
/// # Safety
/// As [`gemm`]'s, and the CPU has AVX512-BF16 ([`kernel::available`]).
pub(crate) unsafe fn gemm_on(
    s: &GemmShape,
    (lhs, rhs, out): (*const u8, *const u8, *mut u8),
    threads: usize,
) {
    let count: usize = s.batch.iter().map(|b| b.0).product();
    if count == 0 || s.m == 0 || s.n == 0 {
        return;
    }
    let steps = s.k.div_ceil(TILE_K);
    let panels = s.n.div_ceil(NR);
    let panel = steps * TILE_U16 / 2;
    let macs = count.saturating_mul(s.m * s.n * s.k);
    let parallel = threads > 1 && macs >= PARALLEL_MIN_MACS;
    let mut b = take_pairs(0, count * panels * panel);
    // SAFETY: the caller's contract for the rhs; `b` holds every element's panels.
    unsafe { pack_rhs(s, rhs, &mut b[..count * panels * panel], panel, parallel) };
    let (row_parts, col_parts) = if parallel {
        split(s.m, panels, (TASKS_PER_THREAD * threads).div_ceil(count))
    } else {
        (1, 1)
    };
    let per = row_parts * col_parts;
    let tiles_m = s.m.div_ceil(MR);
    let pairs_n = panels.div_ceil(2);
    let addrs = (lhs as usize, b.as_ptr() as usize, out as usize);
    let task = |t: usize| {
        let (e, rest) = (t / per, t % per);
        let (ri, ci) = (rest / col_parts, rest % col_parts);
        // Row parts of whole register tiles, column parts of whole panel pairs.
        let rows = (
            tiles_m * ri / row_parts * MR,
            (tiles_m * (ri + 1) / row_parts * MR).min(s.m),
        );
        let cols = (
            pairs_n * ci / col_parts * 2,
            (pairs_n * (ci + 1) / col_parts * 2).min(panels),
        );
        if rows.0 >= rows.1 || cols.0 >= cols.1 {
            return;
        }
        let b = (addrs.1 as *const u32).wrapping_add(e * panels * panel);
        let job = Block {
            s,
            e,
            lhs: addrs.0 as *const u16,
            b,
            panel,
            out: addrs.2 as *mut u8,
        };
        // SAFETY: the caller's contract; tasks write disjoint blocks of the result.
        unsafe { job.run(rows, cols) };
    };
    if parallel {
        (0..count * per).into_par_iter().for_each(task);
    } else {
        (0..count * per).for_each(task);
    }
    PAIRS.with(|p| p[0].set(b));
}

/// Row and column parts giving about `tasks` tasks: rows first (each part at least one
/// register tile tall), then panel pairs for products too short to feed the threads.
fn split(m: usize, panels: usize, tasks: usize) -> (usize, usize) {
    let rows = m.div_ceil(MR).clamp(1, tasks);
    let cols = tasks.div_ceil(rows).clamp(1, panels.div_ceil(2));
    (rows, cols)
}

/// Packs every batch element's rhs into `b` (`panel` `u32`s a panel, an element's
/// panels after another's): a tile step of every panel at a time where its rows are
/// contiguous (the rows read whole, in order), else panel by panel.
///
/// # Safety
/// `rhs` holds every batch element's `k x n` rhs at the shape's strides; `b` holds their
/// panels.
unsafe fn pack_rhs(s: &GemmShape, rhs: *const u8, b: &mut [u32], panel: usize, parallel: bool) {
    let steps = s.k.div_ceil(TILE_K);
    let panels = s.n.div_ceil(NR);
    let count = b.len() / (panels * panel).max(1);
    let rhs = rhs as usize;
    let view = |e: usize| {
        let (_, ro, _) = s.batch_offsets(e);
        View {
            at: (rhs as *const u16).wrapping_offset(ro),
            rows: s.k,
            cols: s.n,
            strides: s.rhs,
        }
    };
    if s.rhs.1 == 1 {
        let at = b.as_mut_ptr() as usize;
        let step = |t: usize| {
            let (e, st) = (t / steps, t % steps);
            let dst = (at as *mut u32).wrapping_add(e * panels * panel);
            // SAFETY: the caller's contract: the view lies in the rhs's allocation, its
            // rows contiguous; each task writes its own step's rows of element `e`'s
            // panels.
            unsafe { gemm_amx_pack::rhs_step(&view(e), st, 0..panels, dst, panel) };
        };
        if parallel {
            (0..count * steps).into_par_iter().for_each(step);
        } else {
            (0..count * steps).for_each(step);
        }
        return;
    }
    let one = |(j, dst): (usize, &mut [u32])| {
        // SAFETY: as above; `dst` is one panel.
        unsafe { gemm_amx_pack::rhs_panel(&view(j / panels), j % panels, steps, dst) };
    };
    if parallel {
        b.par_chunks_mut(panel).enumerate().for_each(one);
    } else {
        b.chunks_mut(panel).enumerate().for_each(one);
    }
}

/// One task's operands: batch element `e` of the product, its packed rhs panels.
struct Block<'a> {
    s: &'a GemmShape,
    e: usize,
    /// The whole lhs (every batch element).
    lhs: *const u16,
    /// Element `e`'s packed rhs panels, `panel` `u32`s each.
    b: *const u32,
    panel: usize,
    /// The whole result.
    out: *mut u8,
}

impl Block<'_> {
    /// Result rows `r0..r1` (whole register tiles but at the bottom) and panels `p0..p1`.
    ///
    /// # Safety
    /// As [`gemm_on`]'s; nothing else writes that block of the result meanwhile.
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn run(&self, (r0, r1): (usize, usize), (p0, p1): (usize, usize)) {
        let s = self.s;
        let (lo, _, oo) = s.batch_offsets(self.e);
        let kp = s.k.div_ceil(2);
        let (rows, width) = (r1 - r0, (p1 - p0) * NR);
        let cols = (s.n - p0 * NR).min(width);
        let tall = rows.div_ceil(MR) * MR;
        // Sums straight into an `f32` result whose block is whole tiles of contiguous
        // rows; else into this thread's block, rounded into the result at the end.
        let in_place =
            s.out_ty == ScalarType::F32 && s.out.1 == 1 && rows % MR == 0 && cols == width;
        let mut sums = (!in_place).then(|| {
            let mut v = SUMS.with(Cell::take);
            if v.len() < tall * width {
                v = vec![0.0; tall * width];
            }
            v
        });
        let (c, ldc) = match sums.as_mut() {
            Some(v) => (v.as_mut_ptr(), width),
            None => {
                let at = oo + r0 as isize * s.out.0 + (p0 * NR) as isize;
                ((self.out as *mut f32).wrapping_offset(at), s.out.0 as usize)
            }
        };
        // The lhs's pairs are read in place where its contracted elements are contiguous.
        let direct = s.lhs.1 == 1;
        let mut chunk = (!direct).then(|| take_pairs(1, MC * KC.min(kp)));
        let lhs_view = View {
            at: self.lhs.wrapping_offset(lo),
            rows: s.m,
            cols: s.k,
            strides: s.lhs,
        };
        // The pair of an odd `k` whose partner lies past the row.
        let odd_tail = s.k % 2 == 1;
        for q0 in (0..kp).step_by(KC) {
            let qn = KC.min(kp - q0);
            let add = q0 > 0;
            for c0 in (0..rows).step_by(MC) {
                let cn = MC.min(rows - c0);
                if let Some(a) = chunk.as_mut() {
                    // SAFETY: the caller's contract for the lhs; `a` holds `MC x KC` pairs.
                    unsafe { pack_lhs(&lhs_view, (r0 + c0, cn), (q0, qn), a) };
                }
                let mut p = p0;
                while p < p1 {
                    let two = p + 1 < p1;
                    for t in 0..cn.div_ceil(MR) {
                        let row = c0 + t * MR;
                        let cp = c.wrapping_add(row * ldc + (p - p0) * NR);
                        let panels = [p, p + 1].map(|p| self.b.wrapping_add(p * self.panel));
                        let a = match chunk.as_ref() {
                            Some(a) => packed_rows(a, t * qn * MR),
                            None => self.lhs_rows(r0 + row, q0),
                        };
                        // In place, an odd `k`'s last pair comes from a copy.
                        let qd = if direct && odd_tail && q0 + qn == kp {
                            qn - 1
                        } else {
                            qn
                        };
                        // SAFETY: the panels hold `kp` pairs, the lhs rows `qd` from `q0`
                        // (clamped to the last row, whose sums land in `sums` only), the
                        // result block the tile (whole tiles in place, `tall x width` in
                        // `sums`); the CPU has AVX512-BF16.
                        unsafe {
                            let b = panels.map(|b| b.add(q0 * NR));
                            if qd > 0 {
                                product(a, b, two, qd, cp, ldc, add);
                            }
                            if qd < qn {
                                let last = self.last_pairs(r0 + row);
                                let b = panels.map(|b| b.add((q0 + qd) * NR));
                                let a = packed_rows(&last, 0);
                                product(a, b, two, 1, cp, ldc, add || qd > 0);
                            }
                        }
                    }
                    p += if two { 2 } else { 1 };
                }
            }
        }
        if let Some(a) = chunk {
            PAIRS.with(|p| p[1].set(a));
        }
        if let Some(v) = sums {
            // SAFETY: the block's rows and columns of the result (the caller's contract).
            unsafe { self.store(&v, (r0, rows), (p0 * NR, cols), width) };
            SUMS.with(|c| c.set(v));
        }
    }

    /// The lhs rows `r..r + MR` of the element read in place from pair `q0` (rows past
    /// `m` repeat the last one: their sums are never stored).
    fn lhs_rows(&self, r: usize, q0: usize) -> LhsPairs {
        let s = self.s;
        let (lo, _, _) = s.batch_offsets(self.e);
        let rows = std::array::from_fn(|i| {
            let row = (r + i).min(s.m - 1) as isize;
            let at = lo + row * s.lhs.0 + 2 * q0 as isize;
            self.lhs.wrapping_offset(at).cast::<u8>()
        });
        LhsPairs { rows, pair: 4 }
    }

    /// The last pair of an odd `k` for lhs rows `r..r + MR`: element `k - 1` with a zero
    /// partner (zero past `m`).
    fn last_pairs(&self, r: usize) -> [u32; MR] {
        let s = self.s;
        let (lo, _, _) = s.batch_offsets(self.e);
        std::array::from_fn(|i| {
            if r + i >= s.m {
                return 0;
            }
            let at = lo + (r + i) as isize * s.lhs.0 + (s.k - 1) as isize * s.lhs.1;
            // SAFETY: element `(r + i, k - 1)` of the lhs (the caller's contract).
            u32::from(unsafe { *self.lhs.offset(at) })
        })
    }

    /// Stores `sums` (row stride `width`) into result rows `r0..r0 + rows`, columns
    /// `c0..c0 + cols`, rounded once into the result's type.
    ///
    /// # Safety
    /// Those elements of batch element `e`'s result lie in the result (the caller's
    /// contract) and nothing else touches them meanwhile.
    unsafe fn store(
        &self,
        sums: &[f32],
        (r0, rows): (usize, usize),
        (c0, cols): (usize, usize),
        width: usize,
    ) {
        let s = self.s;
        let (_, _, oo) = s.batch_offsets(self.e);
        let (rs, cs) = s.out;
        for r in 0..rows {
            let src = &sums[r * width..][..cols];
            let at = oo + (r0 + r) as isize * rs + c0 as isize * cs;
            // SAFETY: elements `(r0 + r, c0..c0 + cols)` of the result.
            unsafe { convert::store_row(src, s.out_ty, self.out, at, cs) };
        }
    }
}

/// The rows of a packed `[q][MR]` tile starting at `a[at]`.
fn packed_rows(a: &[u32], at: usize) -> LhsPairs {
    let base = a[at..].as_ptr().cast::<u8>();
    LhsPairs {
        rows: std::array::from_fn(|i| base.wrapping_add(4 * i)),
        pair: 4 * MR,
    }
}

/// One register tile over two panels (`two`) or the first.
///
/// # Safety
/// As [`kernel::tile`]'s (for one panel, the second pointer unused).
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn product(
    a: LhsPairs,
    b: [*const u32; 2],
    two: bool,
    qn: usize,
    c: *mut f32,
    ldc: usize,
    add: bool,
) {
    // SAFETY: the caller's contract.
    unsafe {
        if two {
            kernel::tile::<2>(a, b, qn, c, ldc, add);
        } else {
            kernel::tile::<1>(a, [b[0]], qn, c, ldc, add);
        }
    }
}

/// Packs lhs rows `r0..r0 + rows`, pairs `q0..q0 + qn` into `a`: for each [`MR`]-row tile,
/// pair `q`, row `i` at `a[tile][q][i]` (element `2q` in the low half); zeros past `k` and
/// the rows.
///
/// # Safety
/// `v`'s elements lie inside one allocation; `a` holds `rows.div_ceil(MR) * qn * MR`.
unsafe fn pack_lhs(v: &View, (r0, rows): (usize, usize), (q0, qn): (usize, usize), a: &mut [u32]) {
    let tiles = rows.div_ceil(MR);
    for t in 0..tiles {
        let dst = &mut a[t * qn * MR..(t + 1) * qn * MR];
        for (q, pairs) in dst.chunks_exact_mut(MR).enumerate() {
            let k = 2 * (q0 + q);
            for (i, d) in pairs.iter_mut().enumerate() {
                let r = t * MR + i;
                *d = if r < rows {
                    // SAFETY: `get` reads only elements of the view (the caller's
                    // contract), zero past its extents.
                    unsafe { u32::from(v.get(r0 + r, k)) | (u32::from(v.get(r0 + r, k + 1)) << 16) }
                } else {
                    0
                };
            }
        }
    }
}

#[cfg(test)]
#[path = "gemm_bf16_tests.rs"]
mod tests;
