//! Register-tiled GEMM for products with a few columns (a transposed convolution to RGB,
//! a classifier's few logits), where a general GEMM library's panels waste most of their
//! lanes. (Small products and large ones with a few rows go to faer, whose sequential mode
//! measured faster than this kernel there: see `gemm::thin`.)
//!
//! `out[m, n] = sum_k lhs[m, k] * rhs[k, n]`, every operand with any element strides. A
//! tile of `MR x NR` results lives in registers; each step of the contraction loads `NR`
//! values of a rhs row and broadcasts `MR` lhs values, so the lhs is read in place
//! whatever its layout. The rhs is copied, `KC` rows of an `NR`-column panel at a time,
//! into a zero-padded buffer that stays in the first-level cache across the row tiles
//! (a rhs read in place with a row stride of a large power of two would map every row of
//! a panel to the same few cache sets). Measured on the 2-core AVX2 machine against faer
//! (CPU time, one thread): `[4096,288] x [288,8]` 0.40 against 0.9 ms.

#![allow(unsafe_code)]

/// An element type of the kernel (`f32`, `f64`).
pub(crate) trait Elem:
    Copy + Default + Send + Sync + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
{
    /// `a * b + c` rounded once: the FMA instruction where the kernel is compiled for it.
    fn fused(a: Self, b: Self, c: Self) -> Self;
}

impl Elem for f32 {
    #[inline(always)]
    fn fused(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

impl Elem for f64 {
    #[inline(always)]
    fn fused(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

/// A thin product's operands: base pointers (at row 0, column 0) and element strides
/// `(rows, columns)` of the lhs `[m, k]`, the rhs `[k, n]` and the result `[m, n]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operands<T> {
    /// The lhs `[m, k]`.
    pub lhs: *const T,
    /// Strides of the lhs.
    pub ls: (isize, isize),
    /// The rhs `[k, n]`.
    pub rhs: *const T,
    /// Strides of the rhs.
    pub rs: (isize, isize),
    /// The result `[m, n]`.
    pub out: *mut T,
    /// Strides of the result.
    pub os: (isize, isize),
}

/// Rows of the rhs panel copied at a time (`KC x NR` elements: 16-32 KB).
const KC: usize = 256;

/// A part of a product: result rows and columns, and the contracted range.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Part {
    /// Result rows `[start, end)`.
    pub rows: (usize, usize),
    /// Result columns `[start, end)`.
    pub cols: (usize, usize),
    /// Contracted indices `[start, end)` (non-empty).
    pub ks: (usize, usize),
}

/// Computes `out[rows, cols] = sum over ks of lhs * rhs` (overwriting the result).
///
/// # Safety
/// Every element of `p`'s operands that `part` covers lies inside its allocation, the
/// result elements are writable and alias neither operand, and no other thread touches
/// them during the call.
pub(crate) unsafe fn product<T: Elem>(p: &Operands<T>, part: Part) {
    let wide = part.cols.1 - part.cols.0 > lanes::<T>();
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA (checked above); the caller's contract.
        unsafe {
            if wide {
                wide_fma(p, part)
            } else {
                narrow_fma(p, part)
            }
        }
        return;
    }
    // SAFETY: the caller's contract.
    unsafe {
        match (wide, lanes::<T>()) {
            (true, 8) => run::<T, 6, 16, false>(p, part),
            (true, _) => run::<T, 6, 8, false>(p, part),
            (false, 8) => run::<T, 12, 8, false>(p, part),
            (false, _) => run::<T, 12, 4, false>(p, part),
        }
    }
}

/// Elements of `T` in a 256-bit vector.
fn lanes<T>() -> usize {
    32 / std::mem::size_of::<T>()
}

/// [`run`] with tiles of 6 rows by two vectors, compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU has AVX2 and FMA; [`product`]'s contract.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn wide_fma<T: Elem>(p: &Operands<T>, part: Part) {
    // SAFETY: the caller's contract.
    unsafe {
        if lanes::<T>() == 8 {
            run::<T, 6, 16, true>(p, part)
        } else {
            run::<T, 6, 8, true>(p, part)
        }
    }
}

/// [`run`] with tiles of 12 rows by one vector, compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU has AVX2 and FMA; [`product`]'s contract.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn narrow_fma<T: Elem>(p: &Operands<T>, part: Part) {
    // SAFETY: the caller's contract.
    unsafe {
        if lanes::<T>() == 8 {
            run::<T, 12, 8, true>(p, part)
        } else {
            run::<T, 12, 4, true>(p, part)
        }
    }
}

/// The part, panel by panel of `NR` columns, `KC` contracted indices at a time, tile by
/// tile of `MR` rows. `FMA` fuses the multiply-adds (only where the caller compiled for
/// it: without the instruction, `mul_add` is a library call).
///
/// # Safety
/// [`product`]'s contract.
#[inline(always)]
unsafe fn run<T: Elem, const MR: usize, const NR: usize, const FMA: bool>(
    p: &Operands<T>,
    part: Part,
) {
    let mut panel = vec![T::default(); KC * NR];
    let mut j0 = part.cols.0;
    while j0 < part.cols.1 {
        let nr = NR.min(part.cols.1 - j0);
        let mut k0 = part.ks.0;
        while k0 < part.ks.1 {
            let kc = KC.min(part.ks.1 - k0);
            for (kk, row) in panel.chunks_exact_mut(NR).take(kc).enumerate() {
                let at = (k0 + kk) as isize * p.rs.0 + j0 as isize * p.rs.1;
                if p.rs.1 == 1 && nr == NR {
                    // SAFETY: rhs elements (k0 + kk, j0..j0 + NR) of the part, contiguous.
                    row.copy_from_slice(unsafe {
                        std::slice::from_raw_parts(p.rhs.offset(at), NR)
                    });
                    continue;
                }
                for (q, x) in row.iter_mut().enumerate() {
                    *x = if q < nr {
                        // SAFETY: rhs element (k0 + kk, j0 + q) of the part.
                        unsafe { *p.rhs.offset(at + q as isize * p.rs.1) }
                    } else {
                        T::default()
                    };
                }
            }
            let mut i0 = part.rows.0;
            while i0 < part.rows.1 {
                let tile = Tile {
                    i0,
                    mr: MR.min(part.rows.1 - i0),
                    j0,
                    nr,
                    k0,
                    kc,
                    accumulate: k0 > part.ks.0,
                };
                // SAFETY: the tile lies inside the part; the panel holds `kc` rows.
                unsafe { tile_product::<T, MR, NR, FMA>(p, &panel, tile) };
                i0 += MR;
            }
            k0 += kc;
        }
        j0 += NR;
    }
}

/// One register tile: result rows `i0..i0 + mr` (`mr <= MR`) and columns `j0..j0 + nr`
/// (`nr <= NR`), contracted indices `k0..k0 + kc`; added to the result or written.
#[derive(Clone, Copy)]
struct Tile {
    i0: usize,
    mr: usize,
    j0: usize,
    nr: usize,
    k0: usize,
    kc: usize,
    accumulate: bool,
}

/// The tile's `MR x NR` sums over the packed panel (row `kk` at `panel[kk * NR..]`).
///
/// # Safety
/// [`product`]'s contract for the tile's elements; `panel` holds `t.kc` rows.
#[inline(always)]
unsafe fn tile_product<T: Elem, const MR: usize, const NR: usize, const FMA: bool>(
    p: &Operands<T>,
    panel: &[T],
    t: Tile,
) {
    let mut acc = [[T::default(); NR]; MR];
    // Rows past the tile's end read row `i0` again (their sums are dropped).
    let mut rows = [p.lhs; MR];
    for (r, row) in rows.iter_mut().enumerate() {
        let i = t.i0 + if r < t.mr { r } else { 0 };
        // SAFETY: row `i` of the lhs at column `k0`, inside the part.
        *row = unsafe { p.lhs.offset(i as isize * p.ls.0 + t.k0 as isize * p.ls.1) };
    }
    for (kk, b) in panel.chunks_exact(NR).take(t.kc).enumerate() {
        if FMA && kk % PREFETCH_EVERY == 0 {
            prefetch_next_tile::<T, MR>(&rows, p.ls, kk);
        }
        for (row, sums) in rows.iter().zip(acc.iter_mut()) {
            // SAFETY: lhs element (this row, k0 + kk), inside the part.
            let a = unsafe { *row.offset(kk as isize * p.ls.1) };
            for (c, &x) in sums.iter_mut().zip(b) {
                *c = if FMA { T::fused(a, x, *c) } else { a * x + *c };
            }
        }
    }
    // The sums leave the registers as one value (indexing them with `mr` and `nr` would
    // keep them in memory throughout the loop above).
    let sums = std::hint::black_box(acc);
    for (r, row) in sums.iter().enumerate().take(t.mr) {
        let at = (t.i0 + r) as isize * p.os.0 + t.j0 as isize * p.os.1;
        for (q, &s) in row.iter().enumerate().take(t.nr) {
            // SAFETY: result element (i0 + r, j0 + q), inside the part, written by this
            // call alone.
            unsafe {
                let o = p.out.offset(at + q as isize * p.os.1);
                *o = if t.accumulate { *o + s } else { s };
            }
        }
    }
}

/// Contracted indices between two prefetches of the next tile's lhs rows (a cache line
/// of `f32`).
const PREFETCH_EVERY: usize = 16;

/// Asks the cache for the lhs elements the next row tile reads at contracted index `kk`
/// (rows `MR` further on): a row-major lhs with a short contraction is read in many short
/// runs (12 rows of 128 elements for a transposed convolution to RGB), too short for the
/// hardware prefetcher to learn; measured 4.5 against 6.4 ms on `[32768,128] x [128,3]`.
#[inline(always)]
fn prefetch_next_tile<T, const MR: usize>(rows: &[*const T; MR], ls: (isize, isize), kk: usize) {
    #[cfg(target_arch = "x86_64")]
    for row in rows {
        let at = row.wrapping_offset(kk as isize * ls.1 + MR as isize * ls.0);
        // SAFETY: a prefetch is a hint: it reads nothing the program sees and does not
        // fault on any address (the pointer is formed without dereferencing it).
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast::<i8>())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (rows, ls, kk);
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::rng::XorShift;

    /// Random products (thin, tiny, both tile shapes, partial tiles and panels, several
    /// `KC` blocks, any layouts, parts of the result) against a plain triple loop in `f64`.
    fn check<T: Elem + Into<f64> + From<f32>>(seeds: std::ops::Range<u64>, tolerance: f64) {
        for seed in seeds {
            let mut rng = XorShift(seed * 2654435761 + 1);
            let m = 1 + rng.below(40);
            let n = 1 + [rng.below(9), rng.below(40), rng.below(70)][rng.below(3)];
            let k = 1 + [rng.below(8), rng.below(300), rng.below(700)][rng.below(3)];
            let (ls, la) = rng.matrix_strides(m, k);
            let (rs, ra) = rng.matrix_strides(k, n);
            let (os, oa) = rng.matrix_strides(m, n);
            let lhs: Vec<T> = (0..la).map(|_| T::from(rng.grid_unit() as f32)).collect();
            let rhs: Vec<T> = (0..ra).map(|_| T::from(rng.grid_unit() as f32)).collect();
            let sentinel = T::from(7.0);
            let mut out = vec![sentinel; oa];
            let rows = (rng.below(m), m);
            let cols = (rng.below(n), n);
            let k0 = rng.below(k);
            let part = Part {
                rows,
                cols,
                ks: (k0, k),
            };
            let ops = Operands {
                lhs: lhs.as_ptr(),
                ls,
                rhs: rhs.as_ptr(),
                rs,
                out: out.as_mut_ptr(),
                os,
            };
            // SAFETY: the layouts' allocations hold every element; `out` is fresh.
            unsafe { product(&ops, part) };
            let at = |s: (isize, isize), i: usize, j: usize| {
                (i as isize * s.0 + j as isize * s.1) as usize
            };
            let mut written = vec![false; oa];
            for i in rows.0..rows.1 {
                for j in cols.0..cols.1 {
                    let want: f64 = (k0..k)
                        .map(|t| lhs[at(ls, i, t)].into() * rhs[at(rs, t, j)].into())
                        .sum();
                    let got: f64 = out[at(os, i, j)].into();
                    let bound = tolerance * (1.0 + (k - k0) as f64);
                    assert!(
                        (got - want).abs() <= bound,
                        "seed {seed}: m={m} n={n} k={k} part {part:?} ({i}, {j}): {got} != {want}"
                    );
                    written[at(os, i, j)] = true;
                }
            }
            for (x, w) in out.iter().zip(&written) {
                if !w {
                    assert!(
                        (*x).into() == 7.0,
                        "seed {seed}: an element outside the part was written"
                    );
                }
            }
        }
    }

    #[test]
    fn f32_products_match_a_plain_loop() {
        check::<f32>(0..300, 1e-5);
    }

    #[test]
    fn f64_products_match_a_plain_loop() {
        check::<f64>(300..500, 1e-12);
    }
}
