//! Tests of [`super`]: the AVX512-BF16 products against an `f64` oracle of the exact
//! products (denormal `bf16` inputs read as zero, as `vdpbf16ps` reads them), at every
//! edge of the register tile, the panels, the contraction blocks and the lhs chunks, in
//! every operand and result order, batched, on one to three threads.

use super::*;
use testkit::rng::XorShift;

/// Whether this CPU runs the kernel; the tests say so on stderr and pass where it does not.
fn here() -> bool {
    let ok = kernel::available();
    if !ok {
        eprintln!("no AVX512-BF16 here: the other paths run these products");
    }
    ok
}

/// A `bf16` uniform in `(-1, 1)`, never denormal.
fn bf16(rng: &mut XorShift) -> u16 {
    let x = (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
    let x = if x.abs() < 1e-6 { 0.5 } else { x };
    convert::f32_to_bf16_one(x)
}

/// `bf16` bits as `f64`, denormals read as zero (as the kernel reads them).
fn wide(h: u16) -> f64 {
    if h & 0x7f80 == 0 {
        return 0.0;
    }
    f64::from(f32::from_bits(u32::from(h) << 16))
}

/// Row- or column-major strides of a `rows x cols` matrix inside a batch element.
fn strides(rows: usize, cols: usize, row_major: bool) -> (isize, isize) {
    if row_major {
        (cols as isize, 1)
    } else {
        (1, rows as isize)
    }
}

/// A product's shape: `orders` says whether the lhs, rhs and result are row-major.
fn shape(
    (m, n, k): (usize, usize, usize),
    batch: usize,
    orders: (bool, bool, bool),
    out_ty: ScalarType,
) -> GemmShape {
    GemmShape {
        ty: ScalarType::F32,
        lhs_ty: ScalarType::BF16,
        rhs_ty: ScalarType::BF16,
        out_ty,
        m,
        n,
        k,
        lhs: strides(m, k, orders.0),
        rhs: strides(k, n, orders.1),
        out: strides(m, n, orders.2),
        batch: if batch > 1 {
            vec![(batch, (m * k) as isize, (k * n) as isize, (m * n) as isize)]
        } else {
            Vec::new()
        },
    }
}

/// Runs `s` on the kernel; the result's elements as `f32` bits or `u16` halves.
fn run(s: &GemmShape, a: &[u16], b: &[u16], threads: usize) -> Vec<u32> {
    let count: usize = s.batch.iter().map(|b| b.0).product();
    let mut out = vec![0x7fc0_dead_u32; count * s.m * s.n];
    // SAFETY: the buffers hold the operands and result with the shape's strides (the
    // lhs's one spare element past its end stays readable for a tail test); the CPU has
    // AVX512-BF16 (the callers check `here`).
    unsafe {
        gemm_on(
            s,
            (
                a.as_ptr().cast(),
                b.as_ptr().cast(),
                out.as_mut_ptr().cast(),
            ),
            threads,
        )
    };
    out
}

/// Element `(r, c)` of batch element `e` of a strided buffer.
fn at(st: (isize, isize), per: usize, e: usize, r: usize, c: usize) -> usize {
    e * per + (r as isize * st.0 + c as isize * st.1) as usize
}

/// Checks `out` (from [`run`]) against exact sums of `a` and `b`'s products: within the
/// `f32` sums' rounding (plus half an ulp of a `bf16`/`f16` result); NaN where the exact
/// sum is NaN.
fn check_sums(s: &GemmShape, a: &[u16], b: &[u16], out: &[u32], what: &str) {
    let count: usize = s.batch.iter().map(|b| b.0).product();
    let half: &[u16] = bytemuck::cast_slice(out);
    for e in 0..count {
        for r in 0..s.m {
            for c in 0..s.n {
                let (mut sum, mut abs) = (0f64, 0f64);
                for j in 0..s.k {
                    let p = wide(a[at(s.lhs, s.m * s.k, e, r, j)])
                        * wide(b[at(s.rhs, s.k * s.n, e, j, c)]);
                    sum += p;
                    abs += p.abs();
                }
                let o = at(s.out, s.m * s.n, e, r, c);
                let (got, ulp) = match s.out_ty {
                    ScalarType::F32 => (f64::from(f32::from_bits(out[o])), 0.0),
                    ScalarType::BF16 => (
                        f64::from(f32::from_bits(u32::from(half[o]) << 16)),
                        2f64.powi(-8),
                    ),
                    _ => (f64::from(convert::f16_to_f32_one(half[o])), 2f64.powi(-11)),
                };
                let place = format!("{what} {s:?}: [{e}, {r}, {c}] = {got}, exact {sum}");
                if sum.is_nan() {
                    assert!(got.is_nan(), "{place}");
                    continue;
                }
                let tol = abs * 2f64.powi(-22) * (s.k as f64).sqrt() + sum.abs() * ulp;
                assert!(got == sum || (got - sum).abs() <= tol, "{place}");
            }
        }
    }
}

/// Random operands for `s`.
fn operands(s: &GemmShape, rng: &mut XorShift) -> (Vec<u16>, Vec<u16>) {
    let count: usize = s.batch.iter().map(|b| b.0).product();
    let a = (0..count * s.m * s.k).map(|_| bf16(rng)).collect();
    let b = (0..count * s.k * s.n).map(|_| bf16(rng)).collect();
    (a, b)
}

/// One random product of each result type; the `bf16` and `f16` results must be the
/// `f32` result rounded once to nearest even, bit for bit (the sums are the same).
fn check(
    seed: u64,
    mnk: (usize, usize, usize),
    batch: usize,
    orders: (bool, bool, bool),
    threads: usize,
) {
    let mut rng = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let s = shape(mnk, batch, orders, ScalarType::F32);
    let (a, b) = operands(&s, &mut rng);
    let wide_out = run(&s, &a, &b, threads);
    check_sums(
        &s,
        &a,
        &b,
        &wide_out,
        &format!("seed {seed} threads {threads}"),
    );
    for ty in [ScalarType::BF16, ScalarType::F16] {
        let h = GemmShape {
            out_ty: ty,
            ..s.clone()
        };
        let out = run(&h, &a, &b, threads);
        let half: &[u16] = bytemuck::cast_slice(&out);
        let count = batch.max(1);
        for e in 0..count {
            for r in 0..s.m {
                for c in 0..s.n {
                    let f = f32::from_bits(wide_out[at(s.out, s.m * s.n, e, r, c)]);
                    let want = if ty == ScalarType::BF16 {
                        convert::f32_to_bf16_one(f)
                    } else {
                        convert::f32_to_f16_one(f)
                    };
                    let got = half[at(h.out, s.m * s.n, e, r, c)];
                    assert_eq!(
                        got, want,
                        "seed {seed} {h:?} threads {threads}: [{e}, {r}, {c}] of {f}"
                    );
                }
            }
        }
    }
}

/// Every order of the operands and the result.
fn orders() -> impl Iterator<Item = (bool, bool, bool)> {
    (0..8).map(|o| (o & 1 == 0, o & 2 == 0, o & 4 == 0))
}

/// Extents of 1, around the register tile (8 rows), the panels (16 columns, two at a
/// time), odd contractions (the pair with a zero partner) and the contraction block (256
/// pairs), each in every operand order.
#[test]
fn edge_shapes_match_exact_sums() {
    if !here() {
        return;
    }
    let mut seed = 0;
    for &m in &[1, 7, 8, 9, 17] {
        for &n in &[1, 15, 16, 17, 33, 48] {
            for &k in &[1, 2, 3, 31, 64, 511, 512, 513] {
                for o in orders() {
                    seed += 1;
                    // Every order for a few shapes, one in eight elsewhere.
                    if m * n % 3 == 0 || seed % 8 == 0 || k == 513 {
                        check(seed, (m, n, k), 1, o, 1);
                    }
                }
            }
        }
    }
}

/// Products large enough to split among one to three threads (by rows, by panels, by
/// batch elements), across the lhs chunks (96 rows), batched, in every order.
#[test]
fn split_and_batched_products_match_exact_sums() {
    if !here() {
        return;
    }
    let shapes = [
        ((256, 300, 200), 1),
        ((300, 40, 701), 1),
        ((9, 520, 1025), 1),
        ((100, 50, 97), 3),
        ((16, 33, 64), 16),
    ];
    for (i, &(mnk, batch)) in shapes.iter().enumerate() {
        for (j, o) in orders().enumerate() {
            let threads = 1 + j % 3;
            check(100 + 10 * i as u64 + j as u64, mnk, batch, o, threads);
        }
    }
}

/// `vdpbf16ps` reads a `bf16` denormal as zero and flushes a denormal sum to zero: a
/// denormal times `2^100` (exactly `2^-33` on the convert path) and `2^-70 x 2^-70` (the
/// denormal `2^-140`) both give zero; normal neighbours are unaffected.
#[test]
fn denormal_inputs_and_sums_flush_to_zero() {
    if !here() {
        return;
    }
    let bits = |x: f32| (x.to_bits() >> 16) as u16;
    // The denormal 2^-133 x 2^100 (+ 1 x 0).
    let s = shape((1, 1, 2), 1, (true, true, true), ScalarType::F32);
    let out = run(&s, &[0x0001, bits(1.0)], &[bits(2f32.powi(100)), 0], 1);
    assert_eq!(f32::from_bits(out[0]), 0.0, "denormal input read as zero");
    let s2 = shape((1, 1, 1), 1, (true, true, true), ScalarType::F32);
    let out = run(&s2, &[bits(2f32.powi(-70))], &[bits(2f32.powi(-70))], 1);
    assert_eq!(f32::from_bits(out[0]), 0.0, "denormal sum flushed");
    let out = run(&s2, &[bits(2f32.powi(-60))], &[bits(2f32.powi(-60))], 1);
    assert_eq!(f32::from_bits(out[0]), 2f32.powi(-120), "normal sum kept");
}

/// A NaN or infinite operand reaches exactly the results it is summed into (`inf x 0`
/// is NaN); the zeros padding odd contractions, short panels and short tiles add none,
/// even where the lhs element after a row's last (read in place) is infinite.
#[test]
fn nan_and_inf_reach_only_their_results() {
    if !here() {
        return;
    }
    let mut rng = XorShift(77);
    for &(m, n, k) in &[(9, 17, 3), (20, 40, 33), (8, 16, 1), (3, 5, 511)] {
        for o in orders() {
            let s = shape((m, n, k), 1, o, ScalarType::F32);
            let (mut a, mut b) = operands(&s, &mut rng);
            let inf = convert::f32_to_bf16_one(f32::INFINITY);
            let nan = 0x7fc0u16;
            // Odd rows' first element infinite (row-major, each is the element after
            // the even row's last: an odd `k`'s missing partner), a NaN ending row 2, a
            // zero in the rhs.
            for r in (1..m).step_by(2) {
                a[at(s.lhs, 0, 0, r, 0)] = inf;
            }
            a[at(s.lhs, 0, 0, 2, k - 1)] = nan;
            b[at(s.rhs, 0, 0, 0, n - 1)] = 0;
            let out = run(&s, &a, &b, 1);
            check_sums(&s, &a, &b, &out, &format!("inf/nan {o:?}"));
        }
    }
}

/// Prints GFLOP/s of a few shapes (`cargo test --release ... -- --ignored --nocapture`);
/// asserts nothing: timings are measured, not tested.
#[test]
#[ignore]
fn print_rates() {
    if !here() {
        return;
    }
    let mut rng = XorShift(5);
    for &(mnk, threads, reps) in &[
        ((96, 32, 512), 1, 2000),
        ((1024, 1024, 1024), 1, 5),
        ((1024, 1024, 1024), 2, 10),
        ((2048, 2048, 2048), 2, 3),
    ] {
        let s = shape(mnk, 1, (true, true, true), ScalarType::F32);
        let (a, b) = operands(&s, &mut rng);
        let mut best = f64::MAX;
        let count = 1;
        let mut out = vec![0f32; count * s.m * s.n];
        for _ in 0..reps {
            let t = std::time::Instant::now();
            // SAFETY: the buffers hold the operands and result.
            unsafe {
                gemm_on(
                    &s,
                    (
                        a.as_ptr().cast(),
                        b.as_ptr().cast(),
                        out.as_mut_ptr().cast(),
                    ),
                    threads,
                )
            };
            best = best.min(t.elapsed().as_secs_f64());
        }
        let flops = 2.0 * (mnk.0 * mnk.1 * mnk.2) as f64;
        let panel = mnk.2.div_ceil(TILE_K) * TILE_U16 / 2;
        let mut packed = vec![0u32; mnk.1.div_ceil(NR) * panel];
        let mut pack_best = f64::MAX;
        for _ in 0..reps {
            let t = std::time::Instant::now();
            // SAFETY: `b` holds the rhs, `packed` its panels.
            unsafe { pack_rhs(&s, b.as_ptr().cast(), &mut packed, panel, threads > 1) };
            pack_best = pack_best.min(t.elapsed().as_secs_f64());
        }
        eprintln!("  pack rhs {:.3} ms", pack_best * 1e3);
        eprintln!(
            "{mnk:?} threads {threads}: {:.3} ms, {:.0} GFLOP/s",
            best * 1e3,
            flops / best / 1e9
        );
    }
}
