//! Long `f32` row sums compiled for the CPU against their exact sums (in `f64`): the error
//! must stay within twice `f32`'s epsilon of the sum of magnitudes, a bound the emitters'
//! former order (32 partial accumulators, each folding its elements one after another)
//! exceeds by far on a row of a million small positive terms — a softmax denominator's
//! shape, where each lane's large partial sum drops the smallest terms. Rows of 50257 (a
//! GPT-2 vocabulary: blocks with a remainder and a tail of 17 elements) and of 2^20
//! elements (three full levels of blocks), random values from a fixed seed.

use std::path::Path;

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};
use runtime::CompileOptions;

use super::select_arms::Stream;

/// `rows x cols` terms `exp(-10 u)` for uniform `u` in [0, 1) (0.1 on average, down to
/// 4.5e-5), rounded to `f32`.
fn terms(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut s = Stream::new(seed);
    (0..rows * cols)
        .map(|_| (-10.0 * (s.f64_in(1.0) + 1.0) / 2.0).exp() as f32)
        .collect()
}

/// The emitters' former order for one row: lane `k` of 32 folds elements `32 s + k` in
/// order, the lanes combine by halving, then the elements past the last whole chunk
/// follow one after another.
fn per_lane_fold(row: &[f32]) -> f32 {
    const L: usize = 32;
    let chunks = row.len() / L;
    let mut lanes = [0f32; L];
    lanes.copy_from_slice(&row[..L]);
    for s in 1..chunks {
        for (k, lane) in lanes.iter_mut().enumerate() {
            *lane += row[s * L + k];
        }
    }
    let mut half = L / 2;
    while half >= 1 {
        for k in 0..half {
            lanes[k] += lanes[k + half];
        }
        half /= 2;
    }
    row[chunks * L..]
        .iter()
        .fold(0f32 + lanes[0], |a, &x| a + x)
}

/// The largest error of a row's sum relative to its sum of magnitudes (the terms are
/// positive: its exact sum), over the rows of `data`, `sums` one per row.
fn worst_relative_error(data: &[f32], cols: usize, sums: &[f32]) -> f64 {
    data.chunks(cols)
        .zip(sums)
        .map(|(row, &got)| {
            let exact: f64 = row.iter().map(|&x| x as f64).sum();
            (got as f64 - exact).abs() / exact
        })
        .fold(0.0, f64::max)
}

#[test]
fn long_f32_row_sums_stay_within_two_epsilon_of_the_exact_sum() {
    let bound = 2.0 * f32::EPSILON as f64;
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-long-sums")),
        ..CompileOptions::default()
    };
    let mut failures = Vec::new();
    for (rows, cols, seed) in [(8usize, 50257usize, 11u64), (2, 1 << 20, 12)] {
        let text = format!(
            "HloModule m\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
             ROOT r = f32[] add(a, b)\n}}\nENTRY e {{\n  p = f32[{rows},{cols}] parameter(0)\n  \
             z = f32[] constant(0)\n  ROOT s = f32[{rows}] reduce(p, z), dimensions={{1}}, \
             to_apply=add\n}}\n"
        );
        let module = hlo::parse_module(&text).expect("parse");
        let data = terms(rows, cols, seed);
        let arg = Literal::Array(
            ArrayLiteral::new(
                Shape::array(ElementType::F32, vec![rows as i64, cols as i64]),
                ArrayData::F32(data.clone()),
            )
            .expect("literal"),
        );
        let exe = runtime::compile(&module, &options).expect("compile");
        let outs = exe.run(&[arg]).expect("run");
        let Literal::Array(out) = &outs[0] else {
            panic!("the result is not an array");
        };
        let ArrayData::F32(sums) = out.data() else {
            panic!("the result is not f32");
        };
        let err = worst_relative_error(&data, cols, sums);
        if err > bound {
            failures.push(format!(
                "f32[{rows},{cols}] row sums: relative error {err:.3e} > {bound:.3e}"
            ));
        }
        if cols == 1 << 20 {
            // The bound is one the former order violates on these rows.
            let old: Vec<f32> = data.chunks(cols).map(per_lane_fold).collect();
            let old_err = worst_relative_error(&data, cols, &old);
            assert!(
                old_err > 10.0 * bound,
                "the per-lane fold is within {old_err:.3e} here: the test would not catch it"
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
