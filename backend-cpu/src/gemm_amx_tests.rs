//! Tests of [`super`]: products on the AMX tiles against exact sums (where the CPU has
//! them), and the products the tiles refuse.

use super::*;
use testkit::rng::XorShift;

/// A `bf16` uniform in `(-1, 1)`, never denormal (the tiles read those as zero).
fn bf16(rng: &mut XorShift) -> u16 {
    let x = (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0;
    let x = if x.abs() < 1e-6 { 0.5 } else { x };
    convert::f32_to_bf16_one(x)
}

/// Row- or column-major strides of a `rows x cols` matrix inside a batch element.
fn strides(rows: usize, cols: usize, row_major: bool) -> (isize, isize) {
    if row_major {
        (cols as isize, 1)
    } else {
        (1, rows as isize)
    }
}

/// Runs one random product on the tiles and compares it with exact sums.
fn check(seed: u64, (m, n, k): (usize, usize, usize), threads: usize) {
    let mut rng = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let out_ty = [ScalarType::F32, ScalarType::BF16, ScalarType::F16][rng.below(3)];
    let batch = [1, 1, 3][rng.below(3)];
    let (lm, rm, om) = (rng.below(2) == 0, rng.below(2) == 0, rng.below(2) == 0);
    let s = GemmShape {
        ty: ScalarType::F32,
        lhs_ty: ScalarType::BF16,
        rhs_ty: ScalarType::BF16,
        out_ty,
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
    let a: Vec<u16> = (0..batch * m * k).map(|_| bf16(&mut rng)).collect();
    let b: Vec<u16> = (0..batch * k * n).map(|_| bf16(&mut rng)).collect();
    let mut out = vec![0u32; batch * m * n];
    // SAFETY: the buffers hold the operands and result with the shape's strides.
    let ran = unsafe {
        gemm(
            &s,
            (
                a.as_ptr().cast(),
                b.as_ptr().cast(),
                out.as_mut_ptr().cast(),
            ),
            threads,
        )
    };
    assert!(ran, "{s:?} not run on the tiles");
    let wide = |h: u16| f64::from(f32::from_bits(u32::from(h) << 16));
    let at =
        |st: (isize, isize), r: usize, c: usize| (r as isize * st.0 + c as isize * st.1) as usize;
    for e in 0..batch {
        for r in 0..m {
            for c in 0..n {
                let (mut sum, mut abs) = (0f64, 0f64);
                for j in 0..k {
                    let p =
                        wide(a[e * m * k + at(s.lhs, r, j)]) * wide(b[e * k * n + at(s.rhs, j, c)]);
                    sum += p;
                    abs += p.abs();
                }
                let o = e * m * n + at(s.out, r, c);
                let half: &[u16] = bytemuck::cast_slice(&out);
                let (got, ulp) = match out_ty {
                    ScalarType::F32 => (f64::from(f32::from_bits(out[o])), 0.0),
                    ScalarType::BF16 => (wide(half[o]), 2f64.powi(-8)),
                    _ => (f64::from(convert::f16_to_f32_one(half[o])), 2f64.powi(-11)),
                };
                let tol = abs * 1e-6 + sum.abs() * ulp;
                assert!(
                    (got - sum).abs() <= tol,
                    "seed {seed} {s:?} threads {threads}: [{e}, {r}, {c}] = {got}, exact {sum}"
                );
            }
        }
    }
}

/// Every edge (extents of 1 to 3 tiles and off by one), both orders of each operand
/// and the result, batches, each result type, on one thread and split.
#[test]
fn products_on_the_tiles_match_exact_sums() {
    if path() != Path::Amx {
        eprintln!("no AMX-BF16 tiles here: the convert path runs these products");
        return;
    }
    let mut seed = 0;
    for &m in &[1, 15, 16, 17, 33, 64] {
        for &n in &[1, 16, 31, 48] {
            for &k in &[16, 31, 32, 33, 96, 130] {
                seed += 1;
                check(seed, (m, n, k), 1);
            }
        }
    }
    // Large enough to split among the threads (and to take several blocks).
    for (i, &shape) in [
        (256, 300, 200),
        (300, 40, 700),
        (130, 520, 96),
        (64, 64, 2048),
    ]
    .iter()
    .enumerate()
    {
        check(1000 + i as u64, shape, 4);
    }
}

#[test]
fn short_contractions_and_other_types_stay_on_the_convert_path() {
    let mut s = GemmShape {
        ty: ScalarType::F32,
        lhs_ty: ScalarType::BF16,
        rhs_ty: ScalarType::BF16,
        out_ty: ScalarType::F32,
        m: 4,
        n: 4,
        k: MIN_K - 1,
        lhs: (15, 1),
        rhs: (4, 1),
        out: (4, 1),
        batch: Vec::new(),
    };
    let none = (std::ptr::null(), std::ptr::null(), std::ptr::null_mut());
    // SAFETY: refused before any pointer is read.
    assert!(!unsafe { gemm(&s, none, 1) });
    s.k = 64;
    s.rhs_ty = ScalarType::F16;
    // SAFETY: as above.
    assert!(!unsafe { gemm(&s, none, 1) });
    s.rhs_ty = ScalarType::F32;
    // SAFETY: as above.
    assert!(!unsafe { gemm(&s, none, 1) });
}
