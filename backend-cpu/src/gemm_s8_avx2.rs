//! The AVX2 `s8 x s8 -> s32` GEMM for CPUs without AMX-INT8 (issue 30): the portable
//! kernel ([`crate::gemm_s8::portable`]) re-reads the whole rhs for every result row, 80x
//! XLA:CPU on `[512,4096] x [4096,4096]`. Here both operands are packed as `s16` pairs
//! along the contraction (`k`, `k + 1`; a zero pair member past an odd `k`), and an
//! [`MR`] x [`NR`] register tile accumulates `vpmaddwd` pair sums with `vpaddd`.
//!
//! Exactness: a pair sum of two `s8` products is at most `2 * 128 * 128 = 2^15`, exact
//! in an `s32` lane; `vpaddd` wraps, and wrapping addition is associative modulo `2^32`,
//! so every result equals the portable kernel's (and XLA's and the evaluator's) bit for
//! bit, whatever order the pairs are summed in.
//!
//! Blocking: the packed rhs (all batch elements, `NR`-column panels, the whole
//! contraction per panel) is shared by the tasks; each task owns a range of rows and of
//! panels of one batch element, walks the contraction in [`KC`]-pair blocks and its rows
//! in [`MC`]-row chunks, so one panel's block (16 KiB) stays in L1 and the chunk's
//! packed lhs (96 KiB) in L2, and sums into its own `s32` tile of the result.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use plan::GemmShape;
use rayon::prelude::*;

use crate::gemm_s8_vnni as vnni;

/// Result rows of the register tile: the VNNI tile's, whose lhs packing is this one.
pub(crate) const MR: usize = vnni::MR;
/// Result columns of the register tile (two 8-lane `s32` vectors).
const NR: usize = 16;
/// Contraction pairs per block: one panel's block is `KC * NR * 4` bytes (16 KiB).
const KC: usize = 256;
/// Rows of a packed lhs chunk: `MC * KC * 4` bytes (96 KiB), a multiple of [`MR`].
const MC: usize = 96;
/// Multiply-adds from which the product splits among the threads (as the portable
/// kernel's).
const PARALLEL_MIN_MACS: usize = 1 << 20;
/// Tasks per thread of a split product.
const TASKS_PER_THREAD: usize = 4;

/// Whether this CPU runs [`gemm`].
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Whether `HLOC_GEMM_S8=avx2` keeps the AVX-512 VNNI tile off (to compare the two;
/// asked once per process).
fn narrow_forced() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FORCED.get_or_init(|| std::env::var("HLOC_GEMM_S8").is_ok_and(|v| v == "avx2"))
}

/// Runs `s8 x s8 -> s32` GEMM `s` (with `k > 0`) on AVX2, its register tiles on
/// AVX-512 VNNI ([`crate::gemm_s8_vnni`]) where the CPU has it.
///
/// # Safety
/// As [`crate::gemm_s8::gemm`]'s, and the CPU has AVX2 ([`available`]).
pub(crate) unsafe fn gemm(s: &GemmShape, ptrs: (*const i8, *const i8, *mut i32), threads: usize) {
    let wide = vnni::available() && !narrow_forced();
    // SAFETY: the caller's contract; `wide` only where the CPU has AVX-512 VNNI.
    unsafe { gemm_on(s, ptrs, threads, wide) }
}

/// [`gemm`] on the AVX-512 VNNI tiles (`wide`) or the AVX2 ones.
///
/// # Safety
/// As [`gemm`]'s; `wide` only where [`vnni::available`].
pub(crate) unsafe fn gemm_on(
    s: &GemmShape,
    (lhs, rhs, out): (*const i8, *const i8, *mut i32),
    threads: usize,
    wide: bool,
) {
    let count: usize = s.batch.iter().map(|b| b.0).product();
    if count == 0 || s.m == 0 || s.n == 0 || s.k == 0 {
        return;
    }
    let kp = s.k.div_ceil(2);
    let panels = s.n.div_ceil(NR);
    let work = count.saturating_mul(s.m * s.n * s.k);
    let parallel = threads > 1 && work >= PARALLEL_MIN_MACS;
    let panel_len = kp * NR * 2;
    let mut packed = vec![0i16; count * panels * panel_len];
    let rhs_addr = rhs as usize;
    let pack = |(t, panel): (usize, &mut [i16])| {
        let (e, p) = (t / panels, t % panels);
        // SAFETY: the caller's contract: the rhs of batch element `e` holds `k x n`
        // elements at the shape's strides.
        unsafe { pack_rhs_panel(s, e, rhs_addr as *const i8, p, panel) };
    };
    if parallel {
        packed.par_chunks_mut(panel_len).enumerate().for_each(pack);
    } else {
        packed.chunks_mut(panel_len).enumerate().for_each(pack);
    }
    let (row_parts, col_parts) = if parallel {
        split(s.m, panels, (TASKS_PER_THREAD * threads).div_ceil(count))
    } else {
        (1, 1)
    };
    let per = row_parts * col_parts;
    let (packed_ref, lhs_addr, out_addr) = (&packed, lhs as usize, out as usize);
    let task = |t: usize| {
        let (e, rest) = (t / per, t % per);
        let (ri, ci) = (rest / col_parts, rest % col_parts);
        let rows = (s.m * ri / row_parts, s.m * (ri + 1) / row_parts);
        let cols = (panels * ci / col_parts, panels * (ci + 1) / col_parts);
        if rows.0 == rows.1 || cols.0 == cols.1 {
            return;
        }
        let b = &packed_ref[e * panels * panel_len..(e + 1) * panels * panel_len];
        // SAFETY: the caller's contract (AVX2 included); tasks write disjoint blocks of
        // the result.
        unsafe {
            run_block(
                s,
                e,
                (lhs_addr as *const i8, b, out_addr as *mut i32),
                rows,
                cols,
                wide,
            )
        };
    };
    if parallel {
        (0..count * per).into_par_iter().for_each(task);
    } else {
        (0..count * per).for_each(task);
    }
}

/// Row and panel parts giving about `tasks` tasks: rows first (each part at least one
/// register tile tall), then panels for products too short to feed the threads.
fn split(m: usize, panels: usize, tasks: usize) -> (usize, usize) {
    let rows = m.div_ceil(MR).clamp(1, tasks);
    let cols = tasks.div_ceil(rows).clamp(1, panels);
    (rows, cols)
}

/// Packs columns `p * NR ..` of batch element `e`'s rhs into `panel`: pair `q`, column
/// `j` at `panel[(q * NR + j) * 2 ..][..2]` = rhs `(2q, j)`, `(2q + 1, j)`; zeros past
/// `k` and `n`.
///
/// # Safety
/// `rhs` holds batch element `e`'s `k x n` rhs at the shape's strides.
unsafe fn pack_rhs_panel(s: &GemmShape, e: usize, rhs: *const i8, p: usize, panel: &mut [i16]) {
    let (_, ro, _) = s.batch_offsets(e);
    let cols = (s.n - p * NR).min(NR);
    for kk in 0..s.k {
        let (q, half) = (kk / 2, kk % 2);
        for j in 0..cols {
            let at = ro + kk as isize * s.rhs.0 + (p * NR + j) as isize * s.rhs.1;
            // SAFETY: element `(kk, p * NR + j)` of the rhs (the caller's contract).
            panel[(q * NR + j) * 2 + half] = i16::from(unsafe { *rhs.offset(at) });
        }
    }
}

/// Packs lhs rows `r0..r0 + rows` (of batch element `e`), pairs `q0..q0 + qn`, into
/// `a`: for each [`MR`]-row tile, pair `q`, row `i` at `a[tile][q][i]` as one `u32`
/// holding the `s16` pair (`k` in the low half); zeros past `k` and the rows.
///
/// # Safety
/// `lhs` holds batch element `e`'s `m x k` lhs at the shape's strides.
unsafe fn pack_lhs(
    s: &GemmShape,
    e: usize,
    lhs: *const i8,
    (r0, rows): (usize, usize),
    (q0, qn): (usize, usize),
    a: &mut [u32],
) {
    let (lo, _, _) = s.batch_offsets(e);
    let tiles = rows.div_ceil(MR);
    a[..tiles * qn * MR].fill(0);
    let at = |r: usize, kk: usize| -> u32 {
        if kk >= s.k {
            return 0;
        }
        let off = lo + (r0 + r) as isize * s.lhs.0 + kk as isize * s.lhs.1;
        // SAFETY: element `(r0 + r, kk)` of the lhs (the caller's contract).
        u32::from(i16::from(unsafe { *lhs.offset(off) }) as u16)
    };
    for r in 0..rows {
        let (tile, i) = (r / MR, r % MR);
        let dst = &mut a[tile * qn * MR..(tile + 1) * qn * MR];
        for q in 0..qn {
            let kk = 2 * (q0 + q);
            dst[q * MR + i] = at(r, kk) | (at(r, kk + 1) << 16);
        }
    }
}

/// Result rows `r0..r1` and panels `p0..p1` of batch element `e`, from the packed rhs
/// `b` (that element's panels); `wide`: on the AVX-512 VNNI tiles.
///
/// # Safety
/// As [`gemm`]'s; nothing else writes that block of the result meanwhile; `wide` only
/// where [`vnni::available`].
#[target_feature(enable = "avx2")]
unsafe fn run_block(
    s: &GemmShape,
    e: usize,
    (lhs, b, out): (*const i8, &[i16], *mut i32),
    (r0, r1): (usize, usize),
    (p0, p1): (usize, usize),
    wide: bool,
) {
    let kp = s.k.div_ceil(2);
    let panel_len = kp * NR * 2;
    let (rows, width) = (r1 - r0, (p1 - p0) * NR);
    let tall = rows.div_ceil(MR) * MR;
    // The block's sums, row-major, `tall x width`.
    let mut c = vec![0i32; tall * width];
    let mut a = vec![0u32; MC * KC.min(kp)];
    for q0 in (0..kp).step_by(KC) {
        let qn = KC.min(kp - q0);
        for c0 in (0..rows).step_by(MC) {
            let cn = MC.min(rows - c0);
            // SAFETY: the caller's contract.
            unsafe { pack_lhs(s, e, lhs, (r0 + c0, cn), (q0, qn), &mut a) };
            let panel = |p: usize| &b[p * panel_len + q0 * NR * 2..][..qn * NR * 2];
            let mut p = p0;
            while p < p1 {
                // Two panels at once on AVX-512 VNNI, one (the last of an odd count, or
                // every one on AVX2) otherwise.
                let two = wide && p + 1 < p1;
                for t in 0..cn.div_ceil(MR) {
                    let at = &a[t * qn * MR..(t + 1) * qn * MR];
                    let row = c0 + t * MR;
                    let ct = &mut c[row * width + (p - p0) * NR..];
                    // SAFETY: `at` and each panel slice hold `qn` pairs of the tile and
                    // panel, `ct` the `MR x NR` (two panels: `MR x 2 NR`) tile at row
                    // stride `width`; the CPU has AVX2, and AVX-512 VNNI where `wide`.
                    unsafe {
                        if two {
                            vnni::tile::<2>(at, [panel(p), panel(p + 1)], ct, width, qn)
                        } else if wide {
                            vnni::tile::<1>(at, [panel(p)], ct, width, qn)
                        } else {
                            tile(at, panel(p), ct, width, qn)
                        }
                    };
                }
                p += if two { 2 } else { 1 };
            }
        }
    }
    let (_, _, oo) = s.batch_offsets(e);
    let cols0 = p0 * NR;
    let cols = (s.n - cols0).min(width);
    for r in 0..rows {
        let src = &c[r * width..r * width + cols];
        let row = oo + (r0 + r) as isize * s.out.0 + cols0 as isize * s.out.1;
        if s.out.1 == 1 {
            // SAFETY: result row `r0 + r`'s columns `cols0..cols0 + cols` are contiguous
            // (the caller's contract).
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), out.offset(row), cols) };
            continue;
        }
        for (j, &v) in src.iter().enumerate() {
            // SAFETY: element `(r0 + r, cols0 + j)` of the result.
            unsafe { *out.offset(row + j as isize * s.out.1) = v };
        }
    }
}

/// Adds the `MR x NR` product of `qn` packed pairs (`a`: `[qn][MR]` pairs, `b`:
/// `[qn][NR][2]`) into `c` (row stride `ldc`), with wrapping `s32` sums.
///
/// # Safety
/// The CPU has AVX2; `a` holds `qn * MR`, `b` `qn * NR * 2` and `c` at least
/// `(MR - 1) * ldc + NR` elements (checked by the slices' bounds in debug builds).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn tile(a: &[u32], b: &[i16], c: &mut [i32], ldc: usize, qn: usize) {
    debug_assert!(a.len() >= qn * MR && b.len() >= qn * NR * 2);
    debug_assert!(c.len() >= (MR - 1) * ldc + NR);
    let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
    let mut acc = [[_mm256_setzero_si256(); 2]; MR];
    for q in 0..qn {
        // SAFETY: pair `q`'s 16 columns (32 `s16`) lie in `b`, its `MR` rows in `a`.
        unsafe {
            let b0 = _mm256_loadu_si256(bp.add(q * NR * 2).cast());
            let b1 = _mm256_loadu_si256(bp.add(q * NR * 2 + 16).cast());
            for (i, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_set1_epi32(*ap.add(q * MR + i) as i32);
                acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(x, b0));
                acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(x, b1));
            }
        }
    }
    for (i, acc) in acc.iter().enumerate() {
        // SAFETY: row `i`'s 16 sums lie in `c` at `i * ldc`.
        unsafe {
            let p0 = cp.add(i * ldc).cast::<__m256i>();
            let p1 = cp.add(i * ldc + 8).cast::<__m256i>();
            _mm256_storeu_si256(p0, _mm256_add_epi32(_mm256_loadu_si256(p0), acc[0]));
            _mm256_storeu_si256(p1, _mm256_add_epi32(_mm256_loadu_si256(p1), acc[1]));
        }
    }
}
