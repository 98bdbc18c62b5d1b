//! Convolutions none of whose taps reads the input (issue 36 item 4's corner): every window
//! lies in low padding or in the holes of an lhs dilation along one spatial dimension. HLO's
//! padding is zero-valued elements, so every tap still adds `0 · w`: an output is NaN exactly
//! where its weights hold an infinity or a NaN, and 0 elsewhere, compiled as evaluated.
//! Random geometries (1-D and 2-D, strides, window dilation, feature and batch groups, f32,
//! f64 and f16, small and GEMM-sized features), one weight infinite and one NaN.

use crate::gen::{self, list, Rng};

/// One spatial dimension: (input size, window size, stride, low pad, high pad, lhs
/// dilation, rhs dilation, output size). `empty`: no window position reads the input.
fn dimension(rng: &mut Rng, empty: bool) -> [i64; 8] {
    let w = rng.range(1, 4);
    let rd = rng.range(1, 3);
    let span = (w - 1) * rd + 1;
    if !empty {
        let s = rng.range(1, 5);
        let out = s - span + 1;
        if out >= 1 {
            return [s, w, 1, 0, 0, 1, rd, out];
        }
        return [s, w, 1, span - s, 0, 1, rd, 1];
    }
    if rng.below(2) == 0 {
        // Low padding at least the window's span, a stride past the rest: one output, read
        // from padding only.
        let s = rng.range(1, 4);
        let lo = span + rng.range(0, 2);
        let hi = rng.range(0, 2);
        let stride = lo - span + s + hi + 1 + rng.range(0, 2);
        [s, w, stride, lo, hi, 1, rd, 1]
    } else {
        // Two inputs dilated apart by more than the span, both cut off by the padding:
        // every window lies in the holes between them.
        let ld = span + 1 + rng.range(0, 2);
        let stride = rng.range(1, 3);
        let out = (ld - 1 - span) / stride + 1;
        [2, w, stride, -1, -1, ld, rd, out]
    }
}

/// A random convolution that reads no input element, and its element type.
fn module(seed: u64) -> (String, &'static str) {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f64", "f16"]);
    let n = 1 + rng.below(2);
    let empty_at = rng.below(n);
    let dims: Vec<[i64; 8]> = (0..n).map(|i| dimension(&mut rng, i == empty_at)).collect();
    let (fg, bg) = match rng.below(4) {
        0 => (2, 1),
        1 => (1, 2),
        _ => (1, 1),
    };
    let wide = rng.below(4) == 0;
    let batch = bg * rng.range(1, 3);
    let in_f = fg * if wide { 32 } else { rng.range(1, 4) };
    let out_f = fg * bg * if wide { 32 } else { rng.range(1, 4) };
    let col = |k: usize| dims.iter().map(|d| d[k]).collect::<Vec<_>>();
    let x: Vec<i64> = [vec![batch], col(0), vec![in_f]].concat();
    let w: Vec<i64> = [col(1), vec![in_f / fg, out_f]].concat();
    let o: Vec<i64> = [vec![batch / bg], col(7), vec![out_f]].concat();
    let xs = |v: Vec<i64>| v.iter().map(i64::to_string).collect::<Vec<_>>().join("x");
    let pad = dims
        .iter()
        .map(|d| format!("{}_{}", d[3], d[4]))
        .collect::<Vec<_>>()
        .join("x");
    let sp: String = (0..n).map(|i| char::from(b'0' + i as u8)).collect();
    let text = format!(
        "HloModule c\nENTRY e {{\n  x = {ty}[{}] parameter(0)\n  w = {ty}[{}] parameter(1)\n  \
         ROOT c = {ty}[{}] convolution(x, w), window={{size={} stride={} pad={pad} \
         lhs_dilate={} rhs_dilate={}}}, dim_labels=b{sp}f_{sp}io->b{sp}f, \
         feature_group_count={fg}, batch_group_count={bg}\n}}\n",
        list(&x),
        list(&w),
        list(&o),
        xs(col(1)),
        xs(col(2)),
        xs(col(5)),
        xs(col(6)),
    );
    (text, ty)
}

/// `lit` (an f32, f64 or f16 array) with element 0 infinite and the last element NaN.
fn non_finite_weights(lit: &hlo::Literal) -> hlo::Literal {
    use hlo::literal::{ArrayData, ArrayLiteral};
    let a = lit.as_array().expect("array").expanded();
    let data = match a.data().clone() {
        ArrayData::F32(mut v) => {
            v[0] = f32::INFINITY;
            *v.last_mut().expect("element") = f32::NAN;
            ArrayData::F32(v)
        }
        ArrayData::F64(mut v) => {
            v[0] = f64::INFINITY;
            *v.last_mut().expect("element") = f64::NAN;
            ArrayData::F64(v)
        }
        ArrayData::Bits16(mut v) => {
            v[0] = 0x7c00;
            *v.last_mut().expect("element") = 0x7e00;
            ArrayData::Bits16(v)
        }
        other => panic!("unexpected weights {other:?}"),
    };
    hlo::Literal::Array(ArrayLiteral::new(a.shape().clone(), data).expect("literal"))
}

/// `lit` (an f32, f64 or f16 array) with every element NaN.
fn all_nan(lit: &hlo::Literal) -> hlo::Literal {
    use hlo::literal::{ArrayData, ArrayLiteral};
    let a = lit.as_array().expect("array").expanded();
    let data = match a.data().clone() {
        ArrayData::F32(v) => ArrayData::F32(vec![f32::NAN; v.len()]),
        ArrayData::F64(v) => ArrayData::F64(vec![f64::NAN; v.len()]),
        ArrayData::Bits16(v) => ArrayData::Bits16(vec![0x7e00; v.len()]),
        other => panic!("unexpected input {other:?}"),
    };
    hlo::Literal::Array(ArrayLiteral::new(a.shape().clone(), data).expect("literal"))
}

/// Each element of `a` as f64 (NaN kept).
fn values(a: &hlo::Literal) -> Vec<f64> {
    let a = a.as_array().expect("array").expanded();
    (0..a.element_count())
        .map(|i| a.get_f64(i).expect("float"))
        .collect()
}

#[test]
fn convolutions_reading_no_input_add_zero_times_each_weight() {
    let options = gen::options("hloc-cache-padding-convs");
    let mut failures = Vec::new();
    let mut with_nan = 0;
    let seeds = gen::seeds(0..40);
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let (text, ty) = module(seed);
        let m = gen::parse(seed, &text);
        let mut args = gen::random_args(&m, seed);
        args[1] = non_finite_weights(&args[1]);
        let want = values(&hlo_eval::evaluate(&m, &args).expect("evaluate"));
        // The premise: no output reads the input (an all-NaN input changes nothing).
        let mut probe = args.clone();
        probe[0] = all_nan(&args[0]);
        let again = values(&hlo_eval::evaluate(&m, &probe).expect("evaluate"));
        assert!(
            want.iter()
                .zip(&again)
                .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())),
            "seed {seed}: the generated convolution reads its input\n{text}"
        );
        let got = match runtime::compile(&m, &options).and_then(|exe| exe.run(&args)) {
            Ok(outs) => values(&outs[0]),
            Err(e) => {
                failures.push(format!("seed {seed} ({ty}): {e}\n{text}"));
                continue;
            }
        };
        with_nan += usize::from(want.iter().any(|v| v.is_nan()));
        let differ: Vec<usize> = (0..want.len())
            .filter(|&i| !(got[i] == want[i] || (got[i].is_nan() && want[i].is_nan())))
            .collect();
        if let Some(&i) = differ.first() {
            failures.push(format!(
                "seed {seed} ({ty}): {} of {} elements differ; first at {i}: compiled {}, \
                 evaluated {}\n{text}",
                differ.len(),
                want.len(),
                got[i],
                want[i]
            ));
        }
    }
    gen::assert_none(&failures);
    assert!(
        with_nan as u64 * 2 >= count,
        "only {with_nan} of {count} convolutions had a NaN output"
    );
}
