//! `s8 x s8 -> s32` GEMMs, XLA's integer dot (`preferred_element_type=int32`): exact
//! products summed in wrapping `s32`. They run on the AMX tiles (`tdpbssd`,
//! [`crate::gemm_amx::gemm_s8`]) where the CPU has AMX-INT8; elsewhere, and for
//! contractions too short to fill a 64-element tile step (an outer product), on the
//! packed AVX2 kernel ([`crate::gemm_s8_avx2`]) where the CPU has AVX2, else on the
//! portable kernel here: each result row summed in an `s32` row buffer, a whole rhs row
//! at a time (vectorized where the rhs's rows are contiguous), the batch elements and rows
//! split among the threads. Both are exact, so they agree bit for bit with each other and
//! with the evaluator. Before, these dots ran as `f32` (or `f64`) GEMMs of converted
//! copies, 13-42x XLA:CPU's time.
#![allow(unsafe_code)]

use plan::GemmShape;
use rayon::prelude::*;

#[cfg(target_arch = "x86_64")]
use crate::gemm_amx;

/// Multiply-adds from which the portable kernel splits among the threads (as
/// `gemm::PARALLEL_MIN_FLOPS`).
const PARALLEL_MIN_MACS: usize = 1 << 20;

/// Row parts per thread of a split product.
const PARTS_PER_THREAD: usize = 4;

/// Runs `s8 x s8 -> s32` GEMM `s` (with `k > 0`).
///
/// # Safety
/// As `gemm::gemm`'s: the pointers hold the operands and the result with the layouts the
/// shape's strides were computed from, the result aliases neither operand.
pub(crate) unsafe fn gemm(
    s: &GemmShape,
    (lhs, rhs, out): (*const i8, *const i8, *mut i32),
    threads: usize,
) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract.
    if unsafe { gemm_amx::gemm_s8(s, (lhs.cast(), rhs.cast(), out.cast()), threads) } {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if crate::gemm_s8_avx2::available() {
        // SAFETY: the caller's contract; the CPU has AVX2.
        return unsafe { crate::gemm_s8_avx2::gemm(s, (lhs, rhs, out), threads) };
    }
    // SAFETY: the caller's contract.
    unsafe { portable(s, (lhs, rhs, out), threads) }
}

/// The portable kernel: see the module documentation.
///
/// # Safety
/// As [`gemm`]'s.
pub(crate) unsafe fn portable(
    s: &GemmShape,
    (lhs, rhs, out): (*const i8, *const i8, *mut i32),
    threads: usize,
) {
    let count: usize = s.batch.iter().map(|b| b.0).product();
    if count == 0 || s.m == 0 || s.n == 0 {
        return;
    }
    let work = count.saturating_mul(s.m * s.n * s.k);
    let parallel = threads > 1 && work >= PARALLEL_MIN_MACS;
    // Each batch element's rows in `parts` runs.
    let parts = if parallel {
        s.m.min((PARTS_PER_THREAD * threads).div_ceil(count))
    } else {
        1
    };
    let ptrs = (lhs as usize, rhs as usize, out as usize);
    let task = |t: usize| {
        let (i, j) = (t / parts, t % parts);
        let rows = (s.m * j / parts, s.m * (j + 1) / parts);
        let (l, r, o) = ptrs;
        // SAFETY: the caller's contract; tasks write disjoint rows of the result.
        unsafe { rows_of(s, i, (l as *const i8, r as *const i8, o as *mut i32), rows) };
    };
    if parallel {
        (0..count * parts).into_par_iter().for_each(task);
    } else {
        (0..count * parts).for_each(task);
    }
}

/// Result rows `r0..r1` of batch element `i`.
///
/// # Safety
/// As [`gemm`]'s; nothing else writes those rows meanwhile.
unsafe fn rows_of(
    s: &GemmShape,
    i: usize,
    ptrs: (*const i8, *const i8, *mut i32),
    rows: (usize, usize),
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2; the caller's contract.
        return unsafe { rows_avx2(s, i, ptrs, rows) };
    }
    // SAFETY: the caller's contract.
    unsafe { rows_plain(s, i, ptrs, rows) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rows_avx2(
    s: &GemmShape,
    i: usize,
    ptrs: (*const i8, *const i8, *mut i32),
    rows: (usize, usize),
) {
    // SAFETY: the caller's contract.
    unsafe { rows_plain(s, i, ptrs, rows) }
}

#[inline(always)]
unsafe fn rows_plain(
    s: &GemmShape,
    i: usize,
    (lhs, rhs, out): (*const i8, *const i8, *mut i32),
    (r0, r1): (usize, usize),
) {
    let (lo, ro, oo) = s.batch_offsets(i);
    let mut acc = vec![0i32; s.n];
    for r in r0..r1 {
        acc.fill(0);
        for kk in 0..s.k {
            // SAFETY: element `(r, kk)` of batch element `i`'s lhs (the caller's contract).
            let a = i32::from(unsafe {
                *lhs.offset(lo + r as isize * s.lhs.0 + kk as isize * s.lhs.1)
            });
            if a == 0 {
                continue;
            }
            // SAFETY: row `kk` of batch element `i`'s rhs.
            let b = unsafe { rhs.offset(ro + kk as isize * s.rhs.0) };
            if s.rhs.1 == 1 {
                // SAFETY: the row's `n` elements are contiguous.
                let row = unsafe { std::slice::from_raw_parts(b, s.n) };
                for (c, &x) in acc.iter_mut().zip(row) {
                    *c = c.wrapping_add(a.wrapping_mul(i32::from(x)));
                }
            } else {
                for (j, c) in acc.iter_mut().enumerate() {
                    // SAFETY: element `(kk, j)` of the rhs.
                    let x = i32::from(unsafe { *b.offset(j as isize * s.rhs.1) });
                    *c = c.wrapping_add(a.wrapping_mul(x));
                }
            }
        }
        // SAFETY: result row `r` of batch element `i` (the caller's contract).
        let o = unsafe { out.offset(oo + r as isize * s.out.0) };
        if s.out.1 == 1 {
            // SAFETY: the row's `n` elements are contiguous.
            unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr(), o, s.n) };
            continue;
        }
        for (j, &c) in acc.iter().enumerate() {
            // SAFETY: element `(r, j)` of the result.
            unsafe { *o.offset(j as isize * s.out.1) = c };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codegen::kir::ScalarType;
    use testkit::rng::XorShift;

    /// Runs `s` on the tiles ([`gemm_amx::gemm_s8`]); `false` where they do not run it.
    ///
    /// # Safety
    /// As [`gemm`]'s.
    unsafe fn on_tiles(s: &GemmShape, p: (*const i8, *const i8, *mut i32), threads: usize) -> bool {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract.
        return unsafe { gemm_amx::gemm_s8(s, (p.0.cast(), p.1.cast(), p.2.cast()), threads) };
        #[cfg(not(target_arch = "x86_64"))]
        return false;
    }

    /// Runs `s` on the packed AVX2 kernel, its tiles on AVX-512 VNNI if `wide` and the CPU
    /// has it (else on AVX2: such tests then check the AVX2 tiles twice), or on the
    /// portable kernel where the CPU has no AVX2 (said on stderr).
    ///
    /// # Safety
    /// As [`gemm`]'s.
    unsafe fn on_avx2(
        s: &GemmShape,
        p: (*const i8, *const i8, *mut i32),
        threads: usize,
        wide: bool,
    ) {
        #[cfg(target_arch = "x86_64")]
        if crate::gemm_s8_avx2::available() {
            let wide = wide && crate::gemm_s8_vnni::available();
            // SAFETY: the caller's contract; the CPU has AVX2, and AVX-512 VNNI if `wide`.
            return unsafe { crate::gemm_s8_avx2::gemm_on(s, p, threads, wide) };
        }
        eprintln!("no AVX2 here: the portable kernel runs these products");
        // SAFETY: the caller's contract.
        unsafe { portable(s, p, threads) }
    }

    /// Row- or column-major strides of a `rows x cols` matrix inside a batch element.
    fn strides(rows: usize, cols: usize, row_major: bool) -> (isize, isize) {
        if row_major {
            (cols as isize, 1)
        } else {
            (1, rows as isize)
        }
    }

    /// The kernel a test runs.
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Kernel {
        Portable,
        Tiles,
        Avx2,
        Vnni,
    }

    /// Runs one random product (full `s8` range, random orders and batch) on `kernel` and
    /// compares it with wrapping `s32` sums, bit for bit.
    fn check(seed: u64, (m, n, k): (usize, usize, usize), threads: usize, kernel: Kernel) {
        let mut rng = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let batch = [1, 1, 3][rng.below(3)];
        let (lm, rm, om) = (rng.below(2) == 0, rng.below(2) == 0, rng.below(2) == 0);
        let s = GemmShape {
            ty: ScalarType::S32,
            lhs_ty: ScalarType::S8,
            rhs_ty: ScalarType::S8,
            out_ty: ScalarType::S32,
            m,
            n,
            k,
            lhs: strides(m, k, lm),
            rhs: strides(k, n, rm),
            out: strides(m, n, om),
            batch: if batch > 1 {
                vec![(batch, (m * k) as isize, (k * n) as isize, (m * n) as isize)]
            } else {
                Vec::new()
            },
        };
        let a: Vec<i8> = (0..batch * m * k).map(|_| rng.next_u64() as i8).collect();
        let b: Vec<i8> = (0..batch * k * n).map(|_| rng.next_u64() as i8).collect();
        let mut out = vec![i32::MIN; batch * m * n];
        let ptrs = (a.as_ptr(), b.as_ptr(), out.as_mut_ptr());
        // SAFETY: the buffers hold the operands and result with the shape's strides.
        unsafe {
            match kernel {
                Kernel::Tiles => {
                    assert!(on_tiles(&s, ptrs, threads), "{s:?} not run on the tiles")
                }
                Kernel::Portable => portable(&s, ptrs, threads),
                Kernel::Avx2 => on_avx2(&s, ptrs, threads, false),
                Kernel::Vnni => on_avx2(&s, ptrs, threads, true),
            }
        }
        let at = |st: (isize, isize), r: usize, c: usize| {
            (r as isize * st.0 + c as isize * st.1) as usize
        };
        for e in 0..batch {
            for r in 0..m {
                for c in 0..n {
                    let want = (0..k).fold(0i32, |acc, j| {
                        let x = i32::from(a[e * m * k + at(s.lhs, r, j)]);
                        let y = i32::from(b[e * k * n + at(s.rhs, j, c)]);
                        acc.wrapping_add(x * y)
                    });
                    let got = out[e * m * n + at(s.out, r, c)];
                    assert_eq!(
                        got, want,
                        "seed {seed} {s:?} threads {threads} {kernel:?}: [{e}, {r}, {c}]"
                    );
                }
            }
        }
    }

    /// Edges of both paths: extents of 1 to 3 tiles and off by one, contractions around
    /// the 64-element tile step (the AVX2 kernel's pairs: odd, 1), both orders of each operand and the result, batches, one
    /// thread and split.
    fn edges(kernel: Kernel) {
        let tiles = kernel == Kernel::Tiles;
        let mut seed = 0;
        let ks: &[usize] = if tiles {
            &[32, 63, 64, 65, 130]
        } else {
            &[1, 2, 31, 64, 65]
        };
        for &m in &[1, 15, 16, 17, 33] {
            for &n in &[1, 16, 31, 48] {
                for &k in ks {
                    seed += 1;
                    check(seed, (m, n, k), 1, kernel);
                }
            }
        }
        for (i, &shape) in [
            (256, 300, 200),
            (300, 40, 700),
            (130, 520, 96),
            (64, 64, 2048),
        ]
        .iter()
        .enumerate()
        {
            check(1000 + i as u64, shape, 4, kernel);
        }
    }

    #[test]
    fn portable_products_match_wrapping_sums() {
        edges(Kernel::Portable);
    }

    #[test]
    fn avx2_products_match_wrapping_sums() {
        edges(Kernel::Avx2);
    }

    #[test]
    fn vnni_products_match_wrapping_sums() {
        edges(Kernel::Vnni);
    }

    /// The AVX2 kernel's blocks and splits (on both tiles; AVX-512 VNNI's two-panel tiles
    /// with a single panel left over at 300, 1000, 33, 47 and 130 columns): contractions across its 512-element block
    /// (odd, one past, one short), more rows than a packed lhs chunk (96) with a partial
    /// register tile, several column panels with a partial one, products split by rows
    /// and, for one or few rows, by column panels, batches of those.
    #[test]
    fn avx2_blocks_and_splits_match_wrapping_sums() {
        let shapes = [
            (1, 300, 1025),
            (2, 1000, 513),
            (97, 33, 1024),
            (200, 47, 1537),
            (7, 17, 511),
            (250, 130, 3),
        ];
        for (i, &shape) in shapes.iter().enumerate() {
            for threads in [1, 2, 3] {
                for kernel in [Kernel::Avx2, Kernel::Vnni] {
                    check(
                        2000 + 10 * i as u64 + threads as u64,
                        shape,
                        threads,
                        kernel,
                    );
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn products_on_the_tiles_match_wrapping_sums() {
        if !crate::gemm_path::s8_on_tiles() {
            eprintln!("no AMX-INT8 tiles here: the portable kernel runs these products");
            return;
        }
        edges(Kernel::Tiles);
    }

    /// Sums that overflow `s32` wrap as XLA's do: 2^17 products of `-128 x -128` sum to
    /// 2^31, which wraps to `i32::MIN`, on both paths.
    #[test]
    fn overflowing_sums_wrap() {
        let k = 1 << 17;
        let s = GemmShape {
            ty: ScalarType::S32,
            lhs_ty: ScalarType::S8,
            rhs_ty: ScalarType::S8,
            out_ty: ScalarType::S32,
            m: 1,
            n: 1,
            k,
            lhs: (k as isize, 1),
            rhs: (1, 1),
            out: (1, 1),
            batch: Vec::new(),
        };
        let a = vec![-128i8; k];
        for kernel in [Kernel::Portable, Kernel::Tiles, Kernel::Avx2, Kernel::Vnni] {
            let mut out = [0i32];
            let ptrs = (a.as_ptr(), a.as_ptr(), out.as_mut_ptr());
            // SAFETY: both operands hold `k` elements, the result one.
            unsafe {
                match kernel {
                    Kernel::Tiles => {
                        if !on_tiles(&s, ptrs, 1) {
                            continue;
                        }
                    }
                    Kernel::Portable => portable(&s, ptrs, 1),
                    Kernel::Avx2 => on_avx2(&s, ptrs, 1, false),
                    Kernel::Vnni => on_avx2(&s, ptrs, 1, true),
                }
            }
            assert_eq!(out[0], i32::MIN, "{kernel:?}");
        }
    }
}
