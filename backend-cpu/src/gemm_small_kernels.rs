//! The register tiles of [`crate::gemm_small`]: `MR` rows of the packed lhs against `NV`
//! vectors of one row-major weight row per contracted index, the sums in vector
//! registers for the whole contraction. Each step loads the `NV` weight vectors once and
//! broadcasts each of the `MR` lhs values from the packed buffer (`[k][MR]`, so every
//! broadcast is one load at a fixed offset from one pointer); the weight is read in place,
//! one row of the strip after another (`bs0` elements apart).
//!
//! Columns past the strip's end are masked off in the weight's loads and the result's
//! stores (a masked load reads nothing and faults on nothing outside its mask), so a
//! tile of any width runs the same code; rows past the lhs's end are zeros in the packed
//! buffer, their sums never stored.

#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// One register tile's operands.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tile {
    /// The packed lhs rows of the tile: index `kk` at `ap[kk * MR..][..MR]`.
    pub ap: *const f32,
    /// The weight at (row 0, the strip's first column); rows `bs0` elements apart,
    /// columns contiguous.
    pub b: *const f32,
    /// The weight's row stride.
    pub bs0: isize,
    /// Contracted indices (`> 0`).
    pub k: usize,
    /// The result at (the tile's first row, the strip's first column).
    pub out: *mut f32,
    /// The result's strides (rows, columns).
    pub os: (isize, isize),
    /// Result rows the tile writes (`<= MR`).
    pub rows: usize,
    /// Result columns the tile writes (`<= NV` vectors' lanes).
    pub cols: usize,
}

/// The tile on 16-lane AVX-512 vectors: `out[rows, cols] = ap^T b` over `k`.
///
/// # Safety
/// The CPU has AVX-512F and FMA; `t.ap` holds `t.k * MR` packed elements; the weight's
/// elements `(kk, c)` for `kk < t.k`, `c < t.cols` and the result's `(r, c)` for
/// `r < t.rows`, `c < t.cols` lie inside their allocations; the result elements are
/// written by this call alone and alias nothing it reads.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
pub(crate) unsafe fn tile_avx512<const MR: usize, const NV: usize, const PF: isize>(t: &Tile) {
    let masks: [__mmask16; NV] = std::array::from_fn(|v| lane_mask16(t.cols, v));
    let mut acc = [[_mm512_setzero_ps(); NV]; MR];
    let (mut a, mut b) = (t.ap, t.b);
    for _ in 0..t.k {
        if PF > 0 {
            prefetch_row::<NV, 16>(b.wrapping_offset(PF * t.bs0));
        }
        let mut bv = [_mm512_setzero_ps(); NV];
        for (v, x) in bv.iter_mut().enumerate() {
            // SAFETY: the weight row's columns `16 v..16 v + 16` under the mask (those
            // below `t.cols`, inside the allocation).
            *x = unsafe { _mm512_maskz_loadu_ps(masks[v], b.add(16 * v)) };
        }
        for (r, sums) in acc.iter_mut().enumerate() {
            // SAFETY: packed element (kk, r).
            let x = _mm512_set1_ps(unsafe { *a.add(r) });
            for (s, w) in sums.iter_mut().zip(&bv) {
                *s = _mm512_fmadd_ps(x, *w, *s);
            }
        }
        // SAFETY: the next packed index and weight row (one past the last on the final
        // step, never read).
        unsafe {
            a = a.add(MR);
            b = b.wrapping_offset(t.bs0);
        }
    }
    for (r, sums) in acc.iter().enumerate() {
        if r >= t.rows {
            break;
        }
        // SAFETY: row `r < t.rows` of the tile's result.
        let row = unsafe { t.out.offset(r as isize * t.os.0) };
        for (v, s) in sums.iter().enumerate() {
            if t.os.1 == 1 {
                // SAFETY: the row's columns `16 v..` under the mask, below `t.cols`.
                unsafe { _mm512_mask_storeu_ps(row.add(16 * v), masks[v], *s) };
            } else {
                let mut lanes = [0f32; 16];
                // SAFETY: `lanes` holds 16 elements.
                unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), *s) };
                // SAFETY: the result's columns below `t.cols`.
                unsafe { scatter(row, t.os.1, 16 * v, t.cols, &lanes) };
            }
        }
    }
}

/// Asks the cache for the `NV` vectors of `L` lanes at `at` (a weight row some steps
/// ahead: its rows are `bs0` elements apart, often 4 KB or more, one page each, where the
/// hardware prefetchers do not follow).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_row<const NV: usize, const L: usize>(at: *const f32) {
    for v in 0..=NV {
        let p = at.wrapping_add((L * v).min(L * NV - 1));
        // SAFETY: a prefetch is a hint: it reads nothing the program sees and does not
        // fault on any address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
    }
}

/// The mask of vector `v`'s lanes (16 each) below `cols`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn lane_mask16(cols: usize, v: usize) -> __mmask16 {
    let valid = cols.saturating_sub(16 * v).min(16);
    ((1u32 << valid) - 1) as __mmask16
}

/// The tile on 8-lane AVX2 vectors, as [`tile_avx512`].
///
/// # Safety
/// The CPU has AVX2 and FMA; as [`tile_avx512`]'s otherwise.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn tile_avx2<const MR: usize, const NV: usize, const PF: isize>(t: &Tile) {
    let masks: [__m256i; NV] = std::array::from_fn(|v| {
        let valid = t.cols.saturating_sub(8 * v).min(8) as i32;
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(valid),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
    });
    let mut acc = [[_mm256_setzero_ps(); NV]; MR];
    let (mut a, mut b) = (t.ap, t.b);
    for _ in 0..t.k {
        if PF > 0 {
            prefetch_row::<NV, 8>(b.wrapping_offset(PF * t.bs0));
        }
        let mut bv = [_mm256_setzero_ps(); NV];
        for (v, x) in bv.iter_mut().enumerate() {
            // SAFETY: the weight row's columns `8 v..8 v + 8` under the mask (those below
            // `t.cols`, inside the allocation).
            *x = unsafe { _mm256_maskload_ps(b.add(8 * v), masks[v]) };
        }
        for (r, sums) in acc.iter_mut().enumerate() {
            // SAFETY: packed element (kk, r).
            let x = _mm256_set1_ps(unsafe { *a.add(r) });
            for (s, w) in sums.iter_mut().zip(&bv) {
                *s = _mm256_fmadd_ps(x, *w, *s);
            }
        }
        // SAFETY: as in `tile_avx512`.
        unsafe {
            a = a.add(MR);
            b = b.wrapping_offset(t.bs0);
        }
    }
    for (r, sums) in acc.iter().enumerate() {
        if r >= t.rows {
            break;
        }
        // SAFETY: row `r < t.rows` of the tile's result.
        let row = unsafe { t.out.offset(r as isize * t.os.0) };
        for (v, s) in sums.iter().enumerate() {
            if t.os.1 == 1 {
                // SAFETY: the row's columns `8 v..` under the mask, below `t.cols`.
                unsafe { _mm256_maskstore_ps(row.add(8 * v), masks[v], *s) };
            } else {
                let mut lanes = [0f32; 8];
                // SAFETY: `lanes` holds 8 elements.
                unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), *s) };
                // SAFETY: the result's columns below `t.cols`.
                unsafe { scatter(row, t.os.1, 8 * v, t.cols, &lanes) };
            }
        }
    }
}

/// Writes `lanes` to the result row's columns `c0..` below `cols`, `cs` elements apart.
///
/// # Safety
/// The row's columns below `cols` lie inside the allocation, written by the caller alone.
#[inline(always)]
unsafe fn scatter(row: *mut f32, cs: isize, c0: usize, cols: usize, lanes: &[f32]) {
    for (q, &x) in lanes.iter().enumerate().take(cols.saturating_sub(c0)) {
        // SAFETY: column `c0 + q < cols` of the row.
        unsafe { *row.offset((c0 + q) as isize * cs) = x };
    }
}

/// The tile without vector instructions (the compiler vectorizes what it can).
///
/// # Safety
/// As [`tile_avx512`]'s, without the CPU's features.
pub(crate) unsafe fn tile_plain<const MR: usize>(t: &Tile) {
    let mut sums = vec![0f32; MR * t.cols];
    for kk in 0..t.k {
        // SAFETY: weight row `kk`'s columns below `t.cols`, contiguous.
        let w = unsafe { std::slice::from_raw_parts(t.b.offset(kk as isize * t.bs0), t.cols) };
        for (r, row) in sums.chunks_exact_mut(t.cols).enumerate() {
            // SAFETY: packed element (kk, r).
            let x = unsafe { *t.ap.add(kk * MR + r) };
            for (s, &y) in row.iter_mut().zip(w) {
                *s += x * y;
            }
        }
    }
    for (r, row) in sums.chunks_exact(t.cols).take(t.rows).enumerate() {
        // SAFETY: row `r < t.rows` of the tile's result and its columns below `t.cols`.
        unsafe { scatter(t.out.offset(r as isize * t.os.0), t.os.1, 0, t.cols, row) };
    }
}
