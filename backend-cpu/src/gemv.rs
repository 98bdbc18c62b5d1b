//! `f32` products with a small side: a decode step's `[2..16, 768] x [768, 8192]` logits,
//! a weight applied to a few vectors. Such a product is a stream of
//! the big operand (the weight): each of its elements is used by only a few
//! multiply-adds, so it runs at the speed the weight is read, and a general GEMM's
//! packing of the weight into panels (a read and a write of all of it before the
//! multiply-adds) is wasted. Here the weight is read once, in place, and the small
//! operand (packed, a few KB) stays in the first-level cache; every multiply-add of one
//! weight element happens while it is in a register.
//!
//! The small operand is the lhs `a [s, k]` (`2 <= s <= SMALL_MAX` rows), the weight the
//! rhs `b [k, N]` stored contiguous along `k` (`x @ W^T` with `W [N, k]`: tied
//! embeddings' logits, `[out, in]` weights), which faer packs before its multiply-adds
//! (measured at a third to two thirds of this kernel's speed): `NR` weight rows against
//! `MR` rows of `a`, vector sums along `k`, added across the lanes at the end. A weight
//! contiguous along `N` (`x @ W`) stays on faer, whose vector path reads it in place:
//! an axpy form of this kernel (strips of `W` columns of all rows in registers) measured
//! 0.70-1.02 of faer's time at 1-2 rows on one thread and no faster inside programs, and
//! lost its registers at 8-16 rows (7-20 times slower); it was not kept.
//!
//! The same generic code is compiled for AVX-512, AVX2 with FMA (chosen at run time) and
//! without either (the compiler vectorizes its fixed-size array loops).

#![allow(unsafe_code)]

use crate::thin_gemm::Operands;

/// The largest small side that runs here: beyond it the product reuses each weight
/// element enough for a packing GEMM's register tiles to win.
pub(crate) const SMALL_MAX: usize = 16;

/// The smallest big side that runs here (below it the product is small in every
/// direction and the general kernels' fixed costs are as small as this one's).
pub(crate) const LARGE_MIN: usize = 64;

/// Rows of the small operand from which a product runs here: at one row faer's vector
/// path reads the weight in place as fast (0.77-1.15 of its time).
const DOT_MIN_ROWS: usize = 2;

/// Rows up to which a product runs here on weights of [`DOT_MIN_WEIGHT`]. faer packs a
/// `[n, k]` weight (contiguous along the contraction) before its multiply-adds: this
/// kernel measured (`time_against_faer`, one thread, the 2-core AVX-512 machine under
/// load) 0.30-0.41 of faer's time at 2 rows, 0.44-0.53 at 4 and 0.62-0.75 at 8 on weights
/// of 1.5-9 MB, 0.30-0.60 on 150 MB; 0.65-1.26 on `[192, 192]`; tiles of 4 rows by 4
/// weight rows ran slower than 4 by 2 (0.69-0.80 at 4 rows, 1.0-1.2 at 8), 8 by 2 slower
/// still.
const DOT_MAX_ROWS: usize = 8;

/// Weight elements (of one thread's part) from which a product runs here (512 KB).
const DOT_MIN_WEIGHT: usize = 1 << 17;

/// Weight elements from which a product runs here for up to [`SMALL_MAX`] rows (64 MB):
/// at 16 rows it measured 0.30-0.69 of faer's time on a 150 MB weight, 0.72-1.11 on
/// 3-9 MB ones.
const DOT_HUGE_WEIGHT: usize = 1 << 24;

/// A product with its small operand on the left: `out[s, n] = a[s, k] b[k, n]`,
/// each a base pointer and element strides (rows, columns).
#[derive(Clone, Copy, Debug)]
struct View {
    a: *const f32,
    as_: (isize, isize),
    b: *const f32,
    bs: (isize, isize),
    out: *mut f32,
    os: (isize, isize),
    s: usize,
    n: usize,
    k: usize,
}

/// The product `p` (`m x n x k`) as this kernel sees it.
fn view(p: &Operands<f32>, m: usize, n: usize, k: usize) -> View {
    View {
        a: p.lhs,
        as_: p.ls,
        b: p.rhs,
        bs: p.rs,
        out: p.out,
        os: p.os,
        s: m,
        n,
        k,
    }
}

/// Whether an `m x n x k` product whose rhs has strides `rs` runs here: a small side, a
/// weight contiguous along the contraction, and not one of the sizes where faer measured
/// as fast.
fn runs(m: usize, n: usize, k: usize, rs: (isize, isize)) -> bool {
    if k == 0 || !(DOT_MIN_ROWS..=SMALL_MAX).contains(&m) || n < LARGE_MIN || rs.0 != 1 {
        return false;
    }
    let weight = k.saturating_mul(n);
    (m <= DOT_MAX_ROWS && weight >= DOT_MIN_WEIGHT) || weight >= DOT_HUGE_WEIGHT
}

/// Computes `out = lhs x rhs` (`m x n x k`, overwriting the result) if the product has a
/// small side; `false` (nothing written) where it does not run here.
///
/// # Safety
/// Every element of the `m x k` lhs, `k x n` rhs and `m x n` result at `p`'s strides lies
/// inside its allocation, the result elements are writable and alias neither operand,
/// and no other thread touches them during the call.
pub(crate) unsafe fn product(p: &Operands<f32>, m: usize, n: usize, k: usize) -> bool {
    if !runs(m, n, k, p.rs) {
        return false;
    }
    // SAFETY: the caller's contract; `runs` checked the weight's layout.
    unsafe { product_as(&view(p, m, n, k)) };
    true
}

/// The product `v` on the widest vectors the CPU has.
///
/// # Safety
/// [`product`]'s contract; `v.bs.0 == 1`, `v.k > 0`.
unsafe fn product_as(v: &View) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("fma") {
            // SAFETY: the CPU has AVX-512F and FMA; the caller's contract.
            unsafe { run_avx512(v) };
            return;
        }
        if has!("avx2") && has!("fma") {
            // SAFETY: the CPU has AVX2 and FMA; the caller's contract.
            unsafe { run_avx2(v) };
            return;
        }
    }
    // SAFETY: the caller's contract.
    unsafe { run::<8, false>(v) };
}

/// [`run`] with 16-lane vectors, compiled for AVX-512.
///
/// # Safety
/// The CPU has AVX-512F and FMA; [`product`]'s contract.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_avx512(v: &View) {
    // SAFETY: the caller's contract.
    unsafe { run::<16, true>(v) }
}

/// [`run`] with 8-lane vectors, compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU has AVX2 and FMA; [`product`]'s contract.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2(v: &View) {
    // SAFETY: the caller's contract.
    unsafe { run::<8, true>(v) }
}

/// The product with vectors of `L` lanes; register tiles sized for `L` (16: 32 vector
/// registers, else 16), fused multiply-adds where `FMA` (without the instruction,
/// `mul_add` is a library call).
///
/// # Safety
/// [`product`]'s contract.
#[inline(always)]
unsafe fn run<const L: usize, const FMA: bool>(v: &View) {
    // SAFETY: the caller's contract, for every arm.
    unsafe {
        match (L == 16, v.s) {
            (true, ..=2) => dot::<2, 4, 16, FMA>(v),
            (true, _) => dot::<4, 2, 16, FMA>(v),
            (false, _) => dot::<2, 4, 8, FMA>(v),
        }
    }
}

/// `a * b + c`, rounded once where `FMA`.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `NR` columns of `b` (contiguous along `k`) against `MR` rows of `a`
/// (packed, zero-padded), sums of `L` lanes along `k`, the last `k % L` indices added
/// one by one.
///
/// # Safety
/// [`product`]'s contract for `v`; `v.bs.0 == 1`, `v.k > 0`.
#[inline(always)]
unsafe fn dot<const MR: usize, const NR: usize, const L: usize, const FMA: bool>(v: &View) {
    let (s, n, k) = (v.s, v.n, v.k);
    let groups = s.div_ceil(MR);
    let mut ap = vec![0f32; groups * MR * k];
    for r in 0..s {
        for kk in 0..k {
            // SAFETY: element (r, kk) of `a`.
            ap[r * k + kk] = unsafe { *v.a.offset(r as isize * v.as_.0 + kk as isize * v.as_.1) };
        }
    }
    let main = k / L * L;
    for j0 in (0..n).step_by(NR) {
        let cols = NR.min(n - j0);
        // Columns past the end read the last one again (their sums are dropped).
        let bc: [*const f32; NR] = std::array::from_fn(|c| {
            // SAFETY: column j0 + c (or the last) of `b`.
            unsafe { v.b.offset((j0 + c.min(cols - 1)) as isize * v.bs.1) }
        });
        for g in 0..groups {
            let r0 = g * MR;
            let ar: [*const f32; MR] = std::array::from_fn(|r| ap[(r0 + r) * k..].as_ptr());
            let mut acc = [[[0f32; L]; NR]; MR];
            let mut kk = 0;
            while kk < main {
                let mut bv = [[0f32; L]; NR];
                for (b, col) in bv.iter_mut().zip(&bc) {
                    // SAFETY: indices kk..kk + L (< k) of the column.
                    *b = unsafe { std::ptr::read_unaligned(col.add(kk).cast::<[f32; L]>()) };
                }
                for (sums, row) in acc.iter_mut().zip(&ar) {
                    // SAFETY: indices kk..kk + L (< k) of the packed row.
                    let av = unsafe { std::ptr::read_unaligned(row.add(kk).cast::<[f32; L]>()) };
                    for (lanes, b) in sums.iter_mut().zip(&bv) {
                        for ((c, &x), &w) in lanes.iter_mut().zip(&av).zip(b) {
                            *c = madd::<FMA>(x, w, *c);
                        }
                    }
                }
                kk += L;
            }
            // The sums leave the registers as one value: indexed below with the group's
            // rows and columns, they were stored to memory at every step of the loop above
            // (the kernel at half speed in some builds).
            let acc = std::hint::black_box(acc);
            for (r, sums) in acc.iter().enumerate().take(MR.min(s - r0)) {
                for (c, lanes) in sums.iter().enumerate().take(cols) {
                    let mut total: f32 = lanes.iter().sum();
                    for t in main..k {
                        // SAFETY: index t < k of the column and the packed row.
                        total =
                            madd::<FMA>(unsafe { *ar[r].add(t) }, unsafe { *bc[c].add(t) }, total);
                    }
                    // SAFETY: result element (r0 + r, j0 + c), written by this call alone.
                    unsafe {
                        *v.out
                            .offset((r0 + r) as isize * v.os.0 + (j0 + c) as isize * v.os.1) = total
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::rng::XorShift;

    /// Random products with a small side (every tile variant, partial column and row
    /// groups, `k` on both sides of whole vectors, any layouts of the small operand and
    /// the result, the weight contiguous along `k` with a padded leading dimension)
    /// against a plain loop in `f64`; elements outside the result untouched. Weights of a
    /// few hundred KB and one row: the size limits of [`runs`] are not applied.
    #[test]
    fn small_side_products_match_a_plain_loop() {
        for seed in 0..400u64 {
            let mut rng = XorShift(seed * 2654435761 + 7);
            let m = 1 + rng.below(SMALL_MAX);
            let n = LARGE_MIN + rng.below(200);
            let k = 1 + [rng.below(20), rng.below(300), rng.below(700)][rng.below(3)];
            let (ls, la) = rng.matrix_strides(m, k);
            let ld = k + rng.below(3);
            let (rs, ra) = ((1, ld as isize), n * ld);
            let (os, oa) = rng.matrix_strides(m, n);
            let lhs: Vec<f32> = (0..la).map(|_| rng.grid_unit() as f32).collect();
            let rhs: Vec<f32> = (0..ra).map(|_| rng.grid_unit() as f32).collect();
            let mut out = vec![7.0f32; oa];
            let ops = Operands {
                lhs: lhs.as_ptr(),
                ls,
                rhs: rhs.as_ptr(),
                rs,
                out: out.as_mut_ptr(),
                os,
            };
            // SAFETY: the layouts' allocations hold every element; `out` is fresh; the
            // rhs is contiguous along `k`.
            unsafe { product_as(&view(&ops, m, n, k)) };
            let at = |s: (isize, isize), i: usize, j: usize| {
                (i as isize * s.0 + j as isize * s.1) as usize
            };
            let mut written = vec![false; oa];
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|t| f64::from(lhs[at(ls, i, t)]) * f64::from(rhs[at(rs, t, j)]))
                        .sum();
                    let got = f64::from(out[at(os, i, j)]);
                    assert!(
                        (got - want).abs() <= 1e-5 * (1.0 + k as f64),
                        "seed {seed}: m={m} n={n} k={k} ls={ls:?} rs={rs:?} ({i}, {j}): {got} != {want}"
                    );
                    written[at(os, i, j)] = true;
                }
            }
            for (x, w) in out.iter().zip(&written) {
                assert!(
                    *w || *x == 7.0,
                    "seed {seed}: an element outside the result was written"
                );
            }
        }
    }

    /// Products without a small side, or whose weight is not contiguous along the
    /// contraction, are left to the other kernels.
    #[test]
    fn other_products_do_not_run_here() {
        assert!(!runs(32, 768, 768, (1, 768)));
        assert!(!runs(4, 32, 768, (1, 768)));
        assert!(!runs(4, 768, 768, (2, 1536)));
        assert!(!runs(768, 4, 768, (4, 1)));
        // faer's good cases: a row-major weight, one row, many rows of a small weight.
        assert!(!runs(2, 3072, 768, (3072, 1)));
        assert!(!runs(1, 3072, 768, (1, 768)));
        assert!(runs(4, 768, 768, (1, 768)));
        assert!(runs(8, 768, 768, (1, 768)));
        assert!(!runs(16, 768, 768, (1, 768)));
        assert!(runs(16, 50257, 768, (1, 768)));
        assert!(!runs(4, 192, 192, (1, 192)));
    }

    /// Times this kernel against faer on one thread (the shapes of issue 30's decode and
    /// recurrent steps, both weight layouts: `-` where it runs on faer); prints the best of several runs of each.
    #[test]
    #[ignore = "a timing harness: cargo test --release -p backend-cpu --lib gemv -- --ignored --nocapture"]
    fn time_against_faer() {
        let ms: Vec<usize> = std::env::var("GEMV_MS")
            .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_else(|_| vec![1, 2, 4, 8, 16, 32]);
        let nks = [
            (768, 768),
            (3072, 768),
            (768, 3072),
            (50257, 768),
            (192, 192),
            (1536, 512),
        ];
        println!("| m | n | k | weight | faer us | here us | here/faer | faer GB/s | here GB/s |");
        println!("|---:|---:|---:|---|---:|---:|---:|---:|---:|");
        let mut rng = XorShift(99);
        for &(n, k) in &nks {
            let w: Vec<f32> = (0..n * k).map(|_| rng.grid_unit() as f32).collect();
            for &m in &ms {
                let x: Vec<f32> = (0..m * k).map(|_| rng.grid_unit() as f32).collect();
                let mut out = vec![0f32; m * n];
                for (name, rs) in [("[k,n]", (n as isize, 1)), ("[n,k]", (1, k as isize))] {
                    let bytes = (n * k * 4) as f64;
                    let reps = ((4e8 / bytes) as usize).clamp(3, 400);
                    let time = |f: &mut dyn FnMut()| {
                        f();
                        let mut best = f64::MAX;
                        for _ in 0..reps {
                            let t = std::time::Instant::now();
                            f();
                            best = best.min(t.elapsed().as_secs_f64());
                        }
                        best
                    };
                    let op = out.as_mut_ptr();
                    let faer_s = time(&mut || {
                        // SAFETY: the vectors hold the matrices at these strides.
                        let (a, b, c) = unsafe {
                            (
                                faer::MatRef::from_raw_parts(x.as_ptr(), m, k, k as isize, 1),
                                faer::MatRef::from_raw_parts(w.as_ptr(), k, n, rs.0, rs.1),
                                faer::MatMut::from_raw_parts_mut(op, m, n, n as isize, 1),
                            )
                        };
                        faer::linalg::matmul::matmul(
                            c,
                            faer::Accum::Replace,
                            a,
                            b,
                            1.0f32,
                            faer::Par::Seq,
                        );
                    });
                    let want = out.clone();
                    let ops = Operands {
                        lhs: x.as_ptr(),
                        ls: (k as isize, 1),
                        rhs: w.as_ptr(),
                        rs,
                        out: op,
                        os: (n as isize, 1),
                    };
                    if !runs(m, n, k, rs) {
                        println!(
                            "| {m} | {n} | {k} | {name} | {:.1} | - | - | {:.1} | - |",
                            faer_s * 1e6,
                            bytes / faer_s / 1e9
                        );
                        continue;
                    }
                    let here_s = time(&mut || {
                        // SAFETY: as above.
                        unsafe { product(&ops, m, n, k) };
                    });
                    let worst = out
                        .iter()
                        .zip(&want)
                        .map(|(a, b)| (a - b).abs())
                        .fold(0f32, f32::max);
                    assert!(worst <= 1e-3, "{m}x{n}x{k}: differs from faer by {worst}");
                    println!(
                        "| {m} | {n} | {k} | {name} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} |",
                        faer_s * 1e6,
                        here_s * 1e6,
                        here_s / faer_s,
                        bytes / faer_s / 1e9,
                        bytes / here_s / 1e9
                    );
                }
            }
        }
    }
}
