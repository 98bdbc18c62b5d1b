//! The library FFT against the evaluator's reference transform ([`fft_values`] with
//! [`ReferenceDft`], in `f64`): every kind, ranks 1 to 3, lengths of one, odd, prime and
//! power-of-two sizes, IRFFT operands wider than `n/2 + 1`, non-row-major layouts, and
//! arrays large enough for the parallel passes.

use super::*;
use hlo_eval::numeric::{fft_values, FftType, ReferenceDft};
use plan::ArraySpec;

type C64 = Complex<f64>;

fn arr(ty: ScalarType, dims: &[usize], minor_to_major: &[usize]) -> Arr {
    let element_type = match ty {
        ScalarType::F32 => hlo::ElementType::F32,
        ScalarType::F64 => hlo::ElementType::F64,
        ScalarType::C64 => hlo::ElementType::C64,
        _ => hlo::ElementType::C128,
    };
    Arr::new(&ArraySpec {
        buffer: 0,
        ty,
        element_type,
        dims: dims.iter().map(|&d| d as i64).collect(),
        minor_to_major: minor_to_major.iter().map(|&d| d as i64).collect(),
    })
}

fn default_layout(rank: usize) -> Vec<usize> {
    (0..rank).rev().collect()
}

/// Every logical index of `dims`, row-major.
fn indices(dims: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    super::super::arrays::for_each_index(dims, |i| {
        out.push(i.to_vec());
        Ok(())
    })
    .expect("indices");
    out
}

/// Fills `a` with pseudo-random values in `[-1, 1)`; returns them row-major, as stored
/// (rounded to `a`'s type).
fn fill(a: &mut Arr, seed: u64) -> Vec<C64> {
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    };
    let mut values = Vec::new();
    for idx in indices(&a.dims) {
        let o = a.offset(&idx) * a.width;
        let (re, im) = (next(), next());
        let ty = a.ty;
        let b = a.bytes_mut();
        let v = match ty {
            ScalarType::F32 => {
                b[o..o + 4].copy_from_slice(&(re as f32).to_ne_bytes());
                C64::new(f64::from(re as f32), 0.0)
            }
            ScalarType::F64 => {
                b[o..o + 8].copy_from_slice(&re.to_ne_bytes());
                C64::new(re, 0.0)
            }
            ScalarType::C64 => {
                b[o..o + 4].copy_from_slice(&(re as f32).to_ne_bytes());
                b[o + 4..o + 8].copy_from_slice(&(im as f32).to_ne_bytes());
                C64::new(f64::from(re as f32), f64::from(im as f32))
            }
            _ => {
                b[o..o + 8].copy_from_slice(&re.to_ne_bytes());
                b[o + 8..o + 16].copy_from_slice(&im.to_ne_bytes());
                C64::new(re, im)
            }
        };
        values.push(v);
    }
    values
}

/// `a`'s values row-major, widened.
fn values(a: &Arr) -> Vec<C64> {
    let b = a.bytes();
    let f32_at = |o: usize| f64::from(f32::from_ne_bytes(b[o..o + 4].try_into().expect("4")));
    let f64_at = |o: usize| f64::from_ne_bytes(b[o..o + 8].try_into().expect("8"));
    indices(&a.dims)
        .iter()
        .map(|idx| {
            let o = a.offset(idx) * a.width;
            match a.ty {
                ScalarType::F32 => C64::new(f32_at(o), 0.0),
                ScalarType::F64 => C64::new(f64_at(o), 0.0),
                ScalarType::C64 => C64::new(f32_at(o), f32_at(o + 4)),
                _ => C64::new(f64_at(o), f64_at(o + 8)),
            }
        })
        .collect()
}

struct Case<'a> {
    kind: FftKind,
    lengths: &'a [usize],
    x: (ScalarType, &'a [usize]),
    y: (ScalarType, &'a [usize]),
}

/// Runs `case` with the given layouts and compares with the reference: the largest error
/// relative to the largest reference magnitude stays within a few rounding errors of the
/// precision times the transform's depth.
fn check_layouts(case: &Case<'_>, x_layout: &[usize], y_layout: &[usize]) {
    let mut x = arr(case.x.0, case.x.1, x_layout);
    let xv = fill(&mut x, case.lengths.iter().sum::<usize>() as u64);
    let mut outs = [arr(case.y.0, case.y.1, y_layout)];
    run(case.kind, case.lengths, std::slice::from_ref(&x), &mut outs).expect("fft runs");
    let kind = match case.kind {
        FftKind::Fft => FftType::Fft,
        FftKind::Ifft => FftType::Ifft,
        FftKind::Rfft => FftType::Rfft,
        FftKind::Irfft => FftType::Irfft,
    };
    let mut want = fft_values(
        kind,
        case.lengths,
        case.x.1,
        case.y.1,
        xv,
        &mut ReferenceDft::default(),
    )
    .expect("reference");
    if case.kind == FftKind::Irfft {
        want.iter_mut().for_each(|v| v.im = 0.0);
    }
    let got = values(&outs[0]);
    assert_eq!(got.len(), want.len());
    let scale = want.iter().map(|v| v.norm()).fold(1e-30, f64::max);
    let err = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).norm())
        .fold(0.0, f64::max);
    let eps = if matches!(case.y.0, ScalarType::F32 | ScalarType::C64) {
        f64::from(f32::EPSILON)
    } else {
        f64::EPSILON
    };
    let total: usize = case.lengths.iter().product();
    let bound = 8.0 * eps * (total.max(2) as f64).log2();
    assert!(
        err <= bound * scale,
        "{:?} {:?} {:?} -> {:?}: error {err:e} over {scale:e} (bound {bound:e})",
        case.kind,
        case.lengths,
        case.x,
        case.y
    );
}

fn check(case: Case<'_>) {
    let rank = case.x.1.len();
    check_layouts(&case, &default_layout(rank), &default_layout(rank));
}

use FftKind::{Fft, Ifft, Irfft, Rfft};
use ScalarType::{C128, C64 as Z64, F32, F64};

#[test]
fn complex_transforms_match_the_reference() {
    let cases: &[(FftKind, &[usize], ScalarType, &[usize])] = &[
        (Fft, &[8], Z64, &[3, 8]),
        (Ifft, &[12], Z64, &[5, 12]),
        (Fft, &[1], Z64, &[4, 1]),
        (Fft, &[3, 5], C128, &[2, 3, 5]),
        (Ifft, &[2, 6], Z64, &[2, 6]),
        (Ifft, &[6, 10, 7], Z64, &[4, 6, 10, 7]),
        (Fft, &[1, 8], Z64, &[4, 1, 8]),
        (Ifft, &[13, 1], C128, &[3, 13, 1]),
        (Fft, &[97], C128, &[2, 97]),
        (Fft, &[64, 100], Z64, &[8, 64, 100]),
        (Ifft, &[4096], Z64, &[16, 4096]),
        (Ifft, &[16, 24, 20], C128, &[3, 16, 24, 20]),
    ];
    for &(kind, lengths, ty, dims) in cases {
        check(Case {
            kind,
            lengths,
            x: (ty, dims),
            y: (ty, dims),
        });
    }
}

#[test]
fn real_transforms_match_the_reference() {
    type R<'a> = (
        FftKind,
        &'a [usize],
        (ScalarType, &'a [usize]),
        (ScalarType, &'a [usize]),
    );
    let cases: &[R<'_>] = &[
        (Rfft, &[10], (F32, &[3, 10]), (Z64, &[3, 6])),
        (Rfft, &[9, 7], (F32, &[2, 9, 7]), (Z64, &[2, 9, 4])),
        (Rfft, &[1], (F64, &[3, 1]), (C128, &[3, 1])),
        (Rfft, &[6, 16], (F64, &[4, 6, 16]), (C128, &[4, 6, 9])),
        (
            Rfft,
            &[17, 33, 40],
            (F32, &[2, 17, 33, 40]),
            (Z64, &[2, 17, 33, 21]),
        ),
        (
            Rfft,
            &[256, 256],
            (F32, &[2, 256, 256]),
            (Z64, &[2, 256, 129]),
        ),
        (Irfft, &[8], (Z64, &[4, 5]), (F32, &[4, 8])),
        (Irfft, &[9], (Z64, &[4, 6]), (F32, &[4, 9])),
        (Irfft, &[8], (Z64, &[3, 7]), (F32, &[3, 8])),
        (Irfft, &[1], (Z64, &[3, 1]), (F32, &[3, 1])),
        (Irfft, &[2], (C128, &[3, 2]), (F64, &[3, 2])),
        (Irfft, &[6, 8], (C128, &[2, 6, 5]), (F64, &[2, 6, 8])),
        (
            Irfft,
            &[10, 12, 16],
            (Z64, &[3, 10, 12, 9]),
            (F32, &[3, 10, 12, 16]),
        ),
        (
            Irfft,
            &[256, 256],
            (Z64, &[2, 256, 129]),
            (F32, &[2, 256, 256]),
        ),
        (Irfft, &[5, 1], (C128, &[2, 5, 1]), (F64, &[2, 5, 1])),
    ];
    for &(kind, lengths, x, y) in cases {
        check(Case {
            kind,
            lengths,
            x,
            y,
        });
    }
}

#[test]
fn any_layout_of_operand_and_result() {
    let cases: &[(Case<'_>, &[usize], &[usize])] = &[
        (
            Case {
                kind: Fft,
                lengths: &[6, 10],
                x: (Z64, &[3, 6, 10]),
                y: (Z64, &[3, 6, 10]),
            },
            &[0, 1, 2],
            &[1, 2, 0],
        ),
        (
            Case {
                kind: Rfft,
                lengths: &[12],
                x: (F32, &[5, 12]),
                y: (Z64, &[5, 7]),
            },
            &[0, 1],
            &[0, 1],
        ),
        (
            Case {
                kind: Irfft,
                lengths: &[4, 10],
                x: (C128, &[3, 4, 6]),
                y: (F64, &[3, 4, 10]),
            },
            &[2, 0, 1],
            &[0, 2, 1],
        ),
    ];
    for (case, xl, yl) in cases {
        check_layouts(case, xl, yl);
    }
}

#[test]
fn mismatched_shapes_and_types_are_errors() {
    let x = arr(Z64, &[3, 8], &[1, 0]);
    let mut y = [arr(Z64, &[3, 8], &[1, 0])];
    assert!(run(Fft, &[4], std::slice::from_ref(&x), &mut y).is_err());
    assert!(run(Fft, &[8, 3, 1, 1], std::slice::from_ref(&x), &mut y).is_err());
    assert!(run(Rfft, &[8], std::slice::from_ref(&x), &mut y).is_err());
    let mut r = [arr(F32, &[3, 8], &[1, 0])];
    assert!(run(Irfft, &[8], std::slice::from_ref(&x), &mut r).is_ok());
    let mut short = [arr(F32, &[3, 16], &[1, 0])];
    assert!(run(Irfft, &[16], std::slice::from_ref(&x), &mut short).is_err());
}

#[test]
fn empty_arrays_give_empty_or_zero_results() {
    let x = arr(Z64, &[0, 8], &[1, 0]);
    let mut y = [arr(Z64, &[0, 8], &[1, 0])];
    run(Fft, &[8], std::slice::from_ref(&x), &mut y).expect("empty fft");
}
