//! `fft` against XLA's recorded outputs (corpus `fft`: FFT, RFFT, IRFFT, 2-D FFT, IFFT)
//! and a round-trip property.

use crate::support;

use hlo::literal::ArrayData;
use hlo::Literal;
use support::*;

fn c64s(shape: &str, v: Vec<[f32; 2]>) -> Literal {
    arr(shape, ArrayData::C64(v))
}

fn get_c64(l: &Literal) -> Vec<[f32; 2]> {
    match l.as_array().unwrap().data() {
        ArrayData::C64(v) => v.clone(),
        d => panic!("{d:?}"),
    }
}

/// Largest difference relative to the largest magnitude of `want`.
fn rel_err(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(1e-30f32, |m, x| m.max(x.abs()));
    got.iter()
        .zip(want)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs()))
        / scale
}

fn flat(v: &[[f32; 2]]) -> Vec<f32> {
    v.iter().flat_map(|c| [c[0], c[1]]).collect()
}

fn run(op: &str, in_shape: &str, out_shape: &str, arg: Literal) -> Literal {
    let text = format!("HloModule m\nENTRY e {{\n  x = {in_shape} parameter(0)\n  ROOT f = {out_shape} fft(x), {op}\n}}");
    eval_root(&text, &[arg]).unwrap()
}

const TOL: f32 = 2e-6;

#[test]
fn complex_fft_1d_and_2d_match_xla() {
    let z = corpus_array("fft", "inputs.npz", "in1").c64s();
    let r = run(
        "fft_type=FFT, fft_length={8}",
        "c64[2,8]",
        "c64[2,8]",
        c64s("c64[2,8]", z.clone()),
    );
    let want = corpus_array("fft", "outputs.npz", "out0").c64s();
    assert!(rel_err(&flat(&get_c64(&r)), &flat(&want)) < TOL);
    let r = run(
        "fft_type=FFT, fft_length={2,8}",
        "c64[2,8]",
        "c64[2,8]",
        c64s("c64[2,8]", z),
    );
    let want = corpus_array("fft", "outputs.npz", "out3").c64s();
    assert!(rel_err(&flat(&get_c64(&r)), &flat(&want)) < TOL);
}

#[test]
fn real_transforms_match_xla() {
    let x = corpus_array("fft", "inputs.npz", "in0").f32s();
    let r = run(
        "fft_type=RFFT, fft_length={16}",
        "f32[2,16]",
        "c64[2,9]",
        f32s("f32[2,16]", &x),
    );
    let spectrum = corpus_array("fft", "outputs.npz", "out1").c64s();
    assert!(rel_err(&flat(&get_c64(&r)), &flat(&spectrum)) < TOL);
    let r = run(
        "fft_type=IRFFT, fft_length={16}",
        "c64[2,9]",
        "f32[2,16]",
        c64s("c64[2,9]", spectrum),
    );
    let want = corpus_array("fft", "outputs.npz", "out2").f32s();
    assert!(rel_err(&get_f32(&r), &want) < TOL);
}

#[test]
fn inverse_fft_matches_xla() {
    let x = corpus_array("fft", "inputs.npz", "in0").f32s();
    let z: Vec<[f32; 2]> = x.iter().map(|&v| [v, 0.0]).collect();
    let r = run(
        "fft_type=IFFT, fft_length={16}",
        "c64[2,16]",
        "c64[2,16]",
        c64s("c64[2,16]", z),
    );
    let want = corpus_array("fft", "outputs.npz", "out4").c64s();
    assert!(rel_err(&flat(&get_c64(&r)), &flat(&want)) < TOL);
}

/// IRFFT(RFFT(x)) == x for odd and even lengths, over two transformed dimensions.
fn real_round_trip(vals: Vec<i8>, odd: bool) -> bool {
    let n = if odd { 5 } else { 6 };
    let mut x: Vec<f32> = vals.iter().map(|&v| f32::from(v)).collect();
    x.resize(3 * n, 1.0);
    let spec = run(
        &format!("fft_type=RFFT, fft_length={{3,{n}}}"),
        &format!("f32[3,{n}]"),
        &format!("c64[3,{}]", n / 2 + 1),
        f32s(&format!("f32[3,{n}]"), &x),
    );
    let back = run(
        &format!("fft_type=IRFFT, fft_length={{3,{n}}}"),
        &format!("c64[3,{}]", n / 2 + 1),
        &format!("f32[3,{n}]"),
        spec,
    );
    rel_err(&get_f32(&back), &x) < 1e-5
}

#[test]
fn rfft_irfft_round_trip() {
    quickcheck::QuickCheck::new()
        .tests(50)
        .quickcheck(real_round_trip as fn(Vec<i8>, bool) -> bool);
}

/// A 3-D FFT equals the direct triple sum `X[k] = sum_n x[n] e^{-2 pi i <k, n/N>}`.
fn fft3_matches_direct_sum(vals: Vec<i8>) -> bool {
    let dims = [2usize, 3, 4];
    let total = 24;
    let x: Vec<[f32; 2]> = (0..total)
        .map(|i| {
            let v = |k: usize| vals.get(k).map_or(0.0, |&b| f32::from(b));
            [v(2 * i), v(2 * i + 1)]
        })
        .collect();
    let r = run(
        "fft_type=FFT, fft_length={2,3,4}",
        "c64[2,3,4]",
        "c64[2,3,4]",
        c64s("c64[2,3,4]", x.clone()),
    );
    let got = flat(&get_c64(&r));
    let mut want = Vec::new();
    for k0 in 0..dims[0] {
        for k1 in 0..dims[1] {
            for k2 in 0..dims[2] {
                let (mut re, mut im) = (0f64, 0f64);
                for n0 in 0..dims[0] {
                    for n1 in 0..dims[1] {
                        for n2 in 0..dims[2] {
                            let phase = -2.0
                                * std::f64::consts::PI
                                * ((k0 * n0) as f64 / 2.0
                                    + (k1 * n1) as f64 / 3.0
                                    + (k2 * n2) as f64 / 4.0);
                            let v = x[(n0 * 3 + n1) * 4 + n2];
                            let (c, s) = (phase.cos(), phase.sin());
                            re += f64::from(v[0]) * c - f64::from(v[1]) * s;
                            im += f64::from(v[0]) * s + f64::from(v[1]) * c;
                        }
                    }
                }
                want.push(re as f32);
                want.push(im as f32);
            }
        }
    }
    rel_err(&got, &want) < 1e-5
}

#[test]
fn three_dimensional_fft_matches_direct_sum() {
    quickcheck::QuickCheck::new()
        .tests(30)
        .quickcheck(fft3_matches_direct_sum as fn(Vec<i8>) -> bool);
}
