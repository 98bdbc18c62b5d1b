//! `bf16 x bf16` GEMMs (result `f32`, `bf16` or `f16`) on the AMX tiles of recent Xeons
//! (Sapphire Rapids on): `tdpbf16ps` sums `bf16` products in `f32` accumulator tiles over
//! the whole contraction, and each sum is rounded once into the result's type, as XLA:CPU
//! (oneDNN on the same tiles) computes them. The convert path of [`crate::gemm_half`]
//! (operands widened to `f32`, then `f32` GEMM) stays the fallback: on CPUs without
//! AMX-BF16, where Linux refuses the tile data, for `f16` operands (AMX-FP16 is a later
//! extension than this machine's; they are widened with F16C), for mixes with an `f32`
//! operand (rounding it to `bf16` would change the product), for contractions shorter than
//! [`MIN_K`] (padding to a 32-element tile step would dominate), and everywhere when the
//! environment says `HLOC_GEMM_HALF=convert` (so both paths are testable on one machine).
//!
//! `s8 x s8 -> s32` GEMMs run on the same tiles with `tdpbssd` (exact products, wrapping
//! `s32` sums, as XLA's integer dots; [`gemm_s8`]) where the CPU also has AMX-INT8, else
//! on [`crate::gemm_s8`]'s portable kernel (also forced by `HLOC_GEMM_INT=portable`).
//!
//! Products of `bf16` are exact in `f32`, so the two paths differ only in the order of the
//! `f32` additions, with one exception: the tiles read `bf16` denormal inputs as zero and
//! flush denormal `f32` results to zero (whatever MXCSR says; oneDNN and XLA:CPU do the
//! same on this hardware), where the convert path keeps them. Inputs below `2^-126` in
//! magnitude are where the two disagree.
//!
//! How a product runs: both operands are packed once per call into tile panels
//! ([`crate::gemm_amx_pack`]; the lhs is read in place when its rows are contiguous and its
//! extents whole tiles), then blocks of the result, sized so a block's lhs and rhs panels
//! stay in the core's L2, are computed 32 x 32 at a time over the whole contraction
//! ([`crate::gemm_amx_tiles`]) and stored with the result's strides; large products split
//! their blocks (and batch elements) among the threads.
#![allow(unsafe_code)]

use std::cell::Cell;

use codegen::kir::ScalarType;
use plan::GemmShape;
use rayon::prelude::*;

use crate::gemm_amx_geometry::{element_bytes, step_elements, Geometry};
use crate::gemm_amx_pack::{self, View, TILE_U16};
use crate::gemm_amx_pack_s8::{self as pack_s8, View8};
use crate::gemm_amx_tiles::{Dest, Lhs, Op, Out, Tiles, TILE_BYTES, TILE_K, TILE_ROWS};
use crate::gemm_half::convert;
use crate::gemm_path::{path, s8_on_tiles, Path};

/// The shortest contraction run on the tiles: shorter ones would be padded to a tile step
/// of 32 (more than doubling the packed rhs and the work).
pub(crate) const MIN_K: usize = 16;

/// Packed elements from which the packing is split among the threads.
const PACK_PARALLEL_MIN: usize = 1 << 17;

/// The shortest `s8` contraction run on the tiles (a tile step is 64).
pub(crate) const MIN_K_S8: usize = 32;

thread_local! {
    /// This thread's packed lhs and rhs buffers and its column block's rhs panels
    /// ([`Geometry::fused`]), kept between calls (no page faults per call); taken out while
    /// in use.
    static PACKED: [Cell<Vec<u32>>; 3] =
        const { [Cell::new(Vec::new()), Cell::new(Vec::new()), Cell::new(Vec::new())] };
}

/// `u32`s of padding that let a packed buffer start on a 64-byte line.
const ALIGN_PAD: usize = 16;

/// A buffer of slot `slot` with room for `len` `u32`s from a 64-byte boundary, and that
/// boundary's index.
fn take_packed(slot: usize, len: usize) -> (Vec<u32>, usize) {
    let mut v = PACKED.with(|s| s[slot].take());
    if v.len() < len + ALIGN_PAD {
        v = vec![0; len + ALIGN_PAD];
    }
    let start = v.as_ptr().align_offset(64).min(ALIGN_PAD);
    (v, start)
}

/// Runs GEMM `s` on the tiles when both its operands are `bf16` and this process's path
/// is [`Path::Amx`]; `false` (nothing written) when it is not one the tiles run.
///
/// # Safety
/// As `gemm::gemm`'s: the pointers hold the operands and the result with the layouts the
/// shape's strides were computed from, the result aliases neither operand.
pub(crate) unsafe fn gemm(
    s: &GemmShape,
    (lhs, rhs, out): (*const u8, *const u8, *mut u8),
    threads: usize,
) -> bool {
    let runs = s.lhs_ty == ScalarType::BF16
        && s.rhs_ty == ScalarType::BF16
        && matches!(
            s.out_ty,
            ScalarType::F32 | ScalarType::BF16 | ScalarType::F16
        )
        && s.k >= MIN_K
        && path() == Path::Amx;
    // SAFETY: the caller's contract.
    runs && unsafe { run(s, Op::Bf16, (lhs, rhs, out), threads) }
}

/// Runs `s8 x s8 -> s32` GEMM `s` on the tiles where this process runs them
/// ([`s8_on_tiles`]) and its contraction is at least [`MIN_K_S8`]; `false` (nothing
/// written) otherwise.
///
/// # Safety
/// As [`gemm`]'s.
pub(crate) unsafe fn gemm_s8(
    s: &GemmShape,
    (lhs, rhs, out): (*const u8, *const u8, *mut u8),
    threads: usize,
) -> bool {
    let runs = s.lhs_ty == ScalarType::S8
        && s.rhs_ty == ScalarType::S8
        && s.out_ty == ScalarType::S32
        && s.k >= MIN_K_S8
        && s8_on_tiles();
    // SAFETY: the caller's contract.
    runs && unsafe { run(s, Op::S8, (lhs, rhs, out), threads) }
}

/// Runs GEMM `s` on the tiles with instruction `op` (the shape's types are `op`'s, the
/// tiles usable); `true`.
///
/// # Safety
/// As [`gemm`]'s.
unsafe fn run(
    s: &GemmShape,
    op: Op,
    (lhs, rhs, out): (*const u8, *const u8, *mut u8),
    threads: usize,
) -> bool {
    let g = Geometry::of(s, op, threads);
    if g.count == 0 || s.m == 0 || s.n == 0 {
        return true;
    }
    let a_len = if g.lhs_direct {
        0
    } else {
        g.count * g.mp * g.steps * TILE_U16 / 2
    };
    let b_len = if g.fused {
        0
    } else {
        g.count * g.np * g.steps * TILE_U16 / 2
    };
    let (mut a_buf, a0) = take_packed(0, a_len);
    let (mut b_buf, b0) = take_packed(1, b_len);
    let job = Job {
        s,
        op,
        g: &g,
        lhs: lhs as usize,
        rhs: rhs as usize,
        out: out as usize,
        a: a_buf[a0..].as_ptr() as usize,
        b: b_buf[b0..].as_ptr() as usize,
    };
    // SAFETY: the caller's contract for the operands; the buffers hold the packed sizes.
    unsafe {
        job.pack(
            &mut a_buf[a0..a0 + a_len],
            &mut b_buf[b0..b0 + b_len],
            threads,
        );
        job.compute(threads);
    }
    PACKED.with(|p| {
        p[0].set(a_buf);
        p[1].set(b_buf);
    });
    true
}

/// Where a block's packed rhs panels lie: panel `q` at `at + (q - first) * panel bytes`
/// (every panel of a batch element, or one column block's, [`Geometry::fused`]).
#[derive(Clone, Copy)]
struct RhsPanels {
    at: *const u8,
    first: usize,
}

impl RhsPanels {
    /// Panel `q` of `panel_bytes` bytes (an address past the panels for the odd `q + 1`
    /// of an edge, never read).
    fn panel(&self, q: usize, panel_bytes: usize) -> *const u8 {
        self.at.wrapping_add((q - self.first) * panel_bytes)
    }
}

/// One call's operands (addresses, so the pool's threads can share them) and buffers.
struct Job<'a> {
    s: &'a GemmShape,
    op: Op,
    g: &'a Geometry,
    lhs: usize,
    rhs: usize,
    out: usize,
    /// The packed lhs (unused when read in place) and rhs: per batch element, its panels.
    a: usize,
    b: usize,
}

impl Job<'_> {
    /// The lhs (`m x k`) and rhs (`k x n`) of batch element `i`.
    fn views(&self, i: usize) -> (View, View) {
        let s = self.s;
        let (lo, ro, _) = self.s.batch_offsets(i);
        let at = |base: usize, off: isize| (base as *const u16).wrapping_offset(off);
        (
            View {
                at: at(self.lhs, lo),
                rows: s.m,
                cols: s.k,
                strides: s.lhs,
            },
            View {
                at: at(self.rhs, ro),
                rows: s.k,
                cols: s.n,
                strides: s.rhs,
            },
        )
    }

    /// The `s8` lhs (`m x k`) and rhs (`k x n`) of batch element `i`.
    fn views_s8(&self, i: usize) -> (View8, View8) {
        let s = self.s;
        let (lo, ro, _) = self.s.batch_offsets(i);
        let at = |base: usize, off: isize| (base as *const i8).wrapping_offset(off);
        (
            View8 {
                at: at(self.lhs, lo),
                rows: s.m,
                cols: s.k,
                strides: s.lhs,
            },
            View8 {
                at: at(self.rhs, ro),
                rows: s.k,
                cols: s.n,
                strides: s.rhs,
            },
        )
    }

    /// Packs every batch element's `s8` lhs (unless read in place) and rhs panels.
    ///
    /// # Safety
    /// As [`Job::pack`]'s.
    unsafe fn pack_s8(&self, a: &mut [u32], b: &mut [u32], threads: usize) {
        let g = self.g;
        let panel = g.steps * TILE_BYTES / 4;
        let lhs = |(j, dst): (usize, &mut [u32])| {
            let (v, _) = self.views_s8(j / g.mp);
            // SAFETY: the caller's contract: the view lies in the lhs's allocation;
            // `dst` is one panel (bytes in a `u32` buffer).
            unsafe {
                let dst = std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<u8>(), 4 * panel);
                pack_s8::lhs_panel(&v, j % g.mp, g.steps, dst);
            }
        };
        let rhs = |(j, dst): (usize, &mut [u32])| {
            let (_, v) = self.views_s8(j / g.np);
            // SAFETY: as above, for the rhs.
            unsafe { pack_s8::rhs_panel(&v, j % g.np, g.steps, dst) };
        };
        // An rhs with contiguous rows is packed a tile step of every panel at a time (its
        // rows read whole, in order), task `t` being batch element `t / steps`'s step.
        let by_steps = self.s.rhs.1 == 1;
        let at = b.as_mut_ptr() as usize;
        let rhs_step = |t: usize| {
            let (i, step) = (t / g.steps, t % g.steps);
            let (_, v) = self.views_s8(i);
            let dst = (at as *mut u32).wrapping_add(i * g.np * panel);
            // SAFETY: the caller's contract: the view lies in the rhs's allocation; `b`
            // holds batch element `i`'s panels, and each task writes its own step's tiles.
            unsafe { pack_s8::rhs_step(&v, step, 0..g.np, dst, panel) };
        };
        let rhs_steps = if g.fused { 0 } else { g.count * g.steps };
        if threads > 1 && a.len() + b.len() >= PACK_PARALLEL_MIN {
            a.par_chunks_mut(panel).enumerate().for_each(lhs);
            if by_steps {
                (0..rhs_steps).into_par_iter().for_each(rhs_step);
            } else {
                b.par_chunks_mut(panel).enumerate().for_each(rhs);
            }
        } else {
            a.chunks_mut(panel).enumerate().for_each(lhs);
            if by_steps {
                (0..rhs_steps).for_each(rhs_step);
            } else {
                b.chunks_mut(panel).enumerate().for_each(rhs);
            }
        }
    }

    /// Packs every batch element's lhs (unless read in place) and rhs panels.
    ///
    /// # Safety
    /// As [`gemm`]'s; `a` and `b` hold the packed sizes.
    unsafe fn pack(&self, a: &mut [u32], b: &mut [u32], threads: usize) {
        if self.op == Op::S8 {
            // SAFETY: the caller's contract.
            return unsafe { self.pack_s8(a, b, threads) };
        }
        let g = self.g;
        let panel = g.steps * TILE_U16 / 2;
        let lhs = |(j, dst): (usize, &mut [u32])| {
            let (v, _) = self.views(j / g.mp);
            // SAFETY: the caller's contract: the view lies in the lhs's allocation;
            // `dst` is one panel (`u16`s in a `u32` buffer, so aligned).
            unsafe {
                let dst = std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<u16>(), 2 * panel);
                gemm_amx_pack::lhs_panel(&v, j % g.mp, g.steps, dst);
            }
        };
        let rhs = |(j, dst): (usize, &mut [u32])| {
            let (_, v) = self.views(j / g.np);
            // SAFETY: as above, for the rhs.
            unsafe { gemm_amx_pack::rhs_panel(&v, j % g.np, g.steps, dst) };
        };
        // An rhs with contiguous rows is packed a tile step of every panel at a time
        // (its rows read whole), task `t` being batch element `t / steps`'s step.
        let by_steps = self.s.rhs.1 == 1;
        let at = b.as_mut_ptr() as usize;
        let rhs_step = |t: usize| {
            let (i, step) = (t / g.steps, t % g.steps);
            let (_, v) = self.views(i);
            let dst = (at as *mut u32).wrapping_add(i * g.np * panel);
            // SAFETY: the caller's contract: the view lies in the rhs's allocation; `b`
            // holds batch element `i`'s panels, and each task writes its own step's tiles.
            unsafe { gemm_amx_pack::rhs_step(&v, step, 0..g.np, dst, panel) };
        };
        let rhs_steps = if g.fused { 0 } else { g.count * g.steps };
        if threads > 1 && a.len() + b.len() >= PACK_PARALLEL_MIN {
            a.par_chunks_mut(panel).enumerate().for_each(lhs);
            if by_steps {
                (0..rhs_steps).into_par_iter().for_each(rhs_step);
            } else {
                b.par_chunks_mut(panel).enumerate().for_each(rhs);
            }
        } else {
            a.chunks_mut(panel).enumerate().for_each(lhs);
            if by_steps {
                (0..rhs_steps).for_each(rhs_step);
            } else {
                b.chunks_mut(panel).enumerate().for_each(rhs);
            }
        }
    }

    /// Computes every block of every batch element into the result.
    ///
    /// # Safety
    /// As [`gemm`]'s; the panels are packed.
    unsafe fn compute(&self, threads: usize) {
        let g = self.g;
        let (bm, bn) = g.block;
        let (rows, cols) = (g.mp.div_ceil(bm), g.np.div_ceil(bn));
        if g.fused {
            // SAFETY: the caller's contract.
            return unsafe { self.compute_fused(threads) };
        }
        let block = |t: usize| {
            let (i, rest) = (t / (rows * cols), t % (rows * cols));
            let (p0, q0) = (rest / cols * bm, rest % cols * bn);
            // SAFETY: `path()` found the tiles usable.
            let tiles = unsafe { Tiles::configure() };
            let rhs = RhsPanels {
                at: (self.b as *const u8).wrapping_add(i * g.np * g.steps * TILE_BYTES),
                first: 0,
            };
            // SAFETY: the caller's contract; blocks write disjoint results.
            unsafe {
                self.block(
                    &tiles,
                    i,
                    (p0, (p0 + bm).min(g.mp)),
                    (q0, (q0 + bn).min(g.np)),
                    rhs,
                )
            };
        };
        let tasks = g.count * rows * cols;
        if g.parallel && threads > 1 {
            (0..tasks).into_par_iter().for_each(block);
        } else {
            (0..tasks).for_each(block);
        }
    }

    /// Lhs panel `p` of batch element `i`.
    fn lhs_panel(&self, i: usize, p: usize) -> Lhs {
        let g = self.g;
        if g.lhs_direct {
            let (lo, _, _) = self.s.batch_offsets(i);
            let rows = self.s.lhs.0;
            let bytes = element_bytes(self.op) as isize;
            let first = (lo + (p * TILE_ROWS) as isize * rows) * bytes;
            return Lhs {
                at: (self.lhs as *const u8).wrapping_offset(first),
                stride: (rows * bytes) as usize,
                step: step_elements(self.op) * bytes as usize,
            };
        }
        let panel = (i * g.mp + p) * g.steps * TILE_BYTES;
        Lhs {
            at: (self.a as *const u8).wrapping_add(panel),
            stride: 2 * TILE_K,
            step: TILE_BYTES,
        }
    }

    /// [`Job::compute`] where the rhs is packed per column block ([`Geometry::fused`]):
    /// task `t` packs batch element `t / cols`'s column block `t % cols` into its thread's
    /// buffer, then computes the block's every row block.
    ///
    /// # Safety
    /// As [`Job::compute`]'s, but for the rhs, which is not packed yet.
    unsafe fn compute_fused(&self, threads: usize) {
        let g = self.g;
        let (bm, bn) = g.block;
        let (rows, cols) = (g.mp.div_ceil(bm), g.np.div_ceil(bn));
        let panel = g.steps * TILE_BYTES / 4;
        let column = |t: usize| {
            let (i, q0) = (t / cols, t % cols * bn);
            let q1 = (q0 + bn).min(g.np);
            let (mut buf, b0) = take_packed(2, (q1 - q0) * panel);
            let dst = buf[b0..].as_mut_ptr();
            // SAFETY: the caller's contract for the rhs; `buf` holds panels `q0..q1`.
            unsafe { self.pack_rhs_panels(i, q0..q1, dst, panel) };
            let rhs = RhsPanels {
                at: dst as *const u8,
                first: q0,
            };
            // SAFETY: `path()` (or `s8_on_tiles()`) found the tiles usable.
            let tiles = unsafe { Tiles::configure() };
            for p0 in (0..rows).map(|r| r * bm) {
                // SAFETY: the caller's contract; tasks write disjoint columns.
                unsafe { self.block(&tiles, i, (p0, (p0 + bm).min(g.mp)), (q0, q1), rhs) };
            }
            PACKED.with(|p| p[2].set(buf));
        };
        let tasks = g.count * cols;
        if g.parallel && threads > 1 {
            (0..tasks).into_par_iter().for_each(column);
        } else {
            (0..tasks).for_each(column);
        }
    }

    /// Packs `s8` rhs panels `panels` of batch element `i` to `dst` (`panel` `u32`s each,
    /// the first panel's first), a tile step of them all at a time (the rows' runs read
    /// in order): [`Geometry::fused`] products only.
    ///
    /// # Safety
    /// The rhs lies where the shape says, its rows contiguous; `dst` holds
    /// `panels.len()` panels.
    unsafe fn pack_rhs_panels(
        &self,
        i: usize,
        panels: std::ops::Range<usize>,
        dst: *mut u32,
        panel: usize,
    ) {
        debug_assert!(self.op == Op::S8 && self.s.rhs.1 == 1);
        let (_, v) = self.views_s8(i);
        for s in 0..self.g.steps {
            // SAFETY: the caller's contract; each step writes its own tiles.
            unsafe { pack_s8::rhs_step(&v, s, panels.clone(), dst, panel) };
        }
    }

    /// Result panels `p0..p1` x `q0..q1` of batch element `i`, two by two.
    ///
    /// # Safety
    /// As [`Job::compute`]'s; nothing else writes these results meanwhile.
    unsafe fn block(
        &self,
        tiles: &Tiles,
        i: usize,
        (p0, p1): (usize, usize),
        (q0, q1): (usize, usize),
        rhs: RhsPanels,
    ) {
        let mut c = Out([0.0; 4 * 256]);
        let step_bytes = self.g.steps * TILE_BYTES;
        for q in (q0..q1).step_by(2) {
            let b = [rhs.panel(q, step_bytes), rhs.panel(q + 1, step_bytes)];
            let bq = (q1 - q).min(2);
            for p in (p0..p1).step_by(2) {
                let a = [self.lhs_panel(i, p), self.lhs_panel(i, p + 1)];
                let ap = (p1 - p).min(2);
                let (r0, c0) = (p * TILE_ROWS, q * TILE_ROWS);
                if let Some(dest) = self.direct(i, (r0, ap), (c0, bq)) {
                    // SAFETY: the panels are packed (or the lhs's rows, whole tiles) for
                    // `steps` tiles each; the result tiles lie in the result.
                    unsafe { tiles.product(self.op, &a[..ap], &b[..bq], self.g.steps, dest) };
                    continue;
                }
                // SAFETY: as above; `c` holds four tiles.
                unsafe { tiles.product(self.op, &a[..ap], &b[..bq], self.g.steps, c.dest()) };
                for (ti, tj) in (0..ap).flat_map(|ti| (0..bq).map(move |tj| (ti, tj))) {
                    let tile = &c.0[(2 * ti + tj) * 256..][..256];
                    // SAFETY: the caller's contract.
                    unsafe { self.store(i, r0 + ti * TILE_ROWS, c0 + tj * TILE_ROWS, tile) };
                }
            }
        }
    }

    /// The result tiles of rows `r0..r0 + 16 * ap` and columns `c0..c0 + 16 * bq` of batch
    /// element `i`, where the tiles store their sums straight into an `f32` (or `s32`)
    /// result: whole tiles of rows with contiguous elements.
    fn direct(&self, i: usize, (r0, ap): (usize, usize), (c0, bq): (usize, usize)) -> Option<Dest> {
        let s = self.s;
        let (rs, cs) = s.out;
        let fits = matches!(s.out_ty, ScalarType::F32 | ScalarType::S32)
            && cs == 1
            && rs >= s.n as isize
            && r0 + ap * TILE_ROWS <= s.m
            && c0 + bq * TILE_ROWS <= s.n;
        if !fits {
            return None;
        }
        let (_, _, oo) = self.s.batch_offsets(i);
        let at = (self.out as *mut f32).wrapping_offset(oo + r0 as isize * rs + c0 as isize);
        let row = 4 * rs as usize;
        Some(Dest {
            at: at.cast(),
            down: TILE_ROWS * row,
            right: 4 * TILE_ROWS,
            stride: row,
        })
    }

    /// Stores result tile `tile` (16 x 16 `f32`, or `s32` bits, row-major) at rows `r0..`
    /// and columns `c0..` of batch element `i`'s result, rounded into its type (`f32` and
    /// `s32` copied bit for bit), as far as the result reaches.
    ///
    /// # Safety
    /// As [`Job::block`]'s.
    unsafe fn store(&self, i: usize, r0: usize, c0: usize, tile: &[f32]) {
        let s = self.s;
        let (_, _, oo) = self.s.batch_offsets(i);
        let rows = (s.m - r0).min(TILE_ROWS);
        let cols = (s.n - c0).min(TILE_ROWS);
        let (rs, cs) = s.out;
        for (r, sums) in tile.chunks_exact(TILE_ROWS).take(rows).enumerate() {
            let at = oo + (r0 + r) as isize * rs + c0 as isize * cs;
            let sums = &sums[..cols];
            // SAFETY: elements `(r0 + r, c0..c0 + cols)` of the result (the caller's
            // contract).
            unsafe { convert::store_row(sums, s.out_ty, self.out as *mut u8, at, cs) };
        }
    }
}

#[cfg(test)]
#[path = "gemm_amx_tests.rs"]
mod tests;
