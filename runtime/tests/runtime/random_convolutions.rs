//! Differential test of convolution: random 1-D and 2-D convolutions (dimension orders,
//! strides, padding including negative, lhs and rhs dilation, feature groups, batch groups,
//! f32 and f64, shapes large enough for the im2col and GEMM paths) compiled for the CPU and
//! compared with the reference evaluator. Deterministic: a failure prints the module.

use crate::gen::{self, list, Rng};

/// Dimension labels for a convolution of `n` spatial dims, in a random order: the text of
/// one side of `dim_labels` and, per position, which label it holds.
fn labels(rng: &mut Rng, first: char, second: char, n: usize) -> (String, Vec<char>) {
    let mut v: Vec<char> = vec![first, second];
    v.extend((0..n).map(|i| char::from(b'0' + i as u8)));
    rng.shuffle(&mut v);
    (v.iter().collect(), v)
}

/// A random convolution module, or `None` when the drawn window leaves no output.
fn module(seed: u64) -> Option<String> {
    let mut rng = Rng::new(seed);
    let ty = ["f32", "f64"][rng.below(2)];
    let n = 1 + rng.below(2);
    let (fg, bg) = match rng.below(4) {
        0 => (1 + rng.below(3) as i64, 1),
        1 => (1, 1 + rng.below(2) as i64),
        _ => (1, 1),
    };
    let batch = bg * rng.range(1, 3);
    let in_f = fg * rng.range(1, 6);
    let out_f = fg * bg * rng.range(1, 8);
    let spatial: Vec<i64> = (0..n).map(|_| rng.range(1, 20)).collect();
    let window: Vec<i64> = (0..n).map(|_| rng.range(1, 4)).collect();
    let stride: Vec<i64> = (0..n).map(|_| rng.range(1, 3)).collect();
    let lhs_dil: Vec<i64> = (0..n)
        .map(|_| if rng.below(4) == 0 { 2 } else { 1 })
        .collect();
    let rhs_dil: Vec<i64> = (0..n)
        .map(|_| if rng.below(4) == 0 { 2 } else { 1 })
        .collect();
    let pad: Vec<(i64, i64)> = (0..n)
        .map(|_| (rng.range(-1, 2), rng.range(-1, 2)))
        .collect();
    let mut out_sp = Vec::with_capacity(n);
    for i in 0..n {
        let lhs = (spatial[i] - 1) * lhs_dil[i] + 1 + pad[i].0 + pad[i].1;
        let win = (window[i] - 1) * rhs_dil[i] + 1;
        if lhs < win {
            return None;
        }
        out_sp.push((lhs - win) / stride[i] + 1);
    }
    let (lt, lv) = labels(&mut rng, 'b', 'f', n);
    let (kt, kv) = labels(&mut rng, 'i', 'o', n);
    let (ot, ov) = labels(&mut rng, 'b', 'f', n);
    let shape = |v: &[char], a: (char, i64), b: (char, i64), sp: &[i64]| -> Vec<i64> {
        v.iter()
            .map(|&c| match c {
                c if c == a.0 => a.1,
                c if c == b.0 => b.1,
                d => sp[(d as u8 - b'0') as usize],
            })
            .collect()
    };
    let x = shape(&lv, ('b', batch), ('f', in_f), &spatial);
    let w = shape(&kv, ('i', in_f / fg), ('o', out_f), &window);
    let o = shape(&ov, ('b', batch / bg), ('f', out_f), &out_sp);
    let win: Vec<String> = [
        format!(
            "size={}",
            window
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join("x")
        ),
        format!(
            "stride={}",
            stride
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join("x")
        ),
        format!(
            "pad={}",
            pad.iter()
                .map(|(a, b)| format!("{a}_{b}"))
                .collect::<Vec<_>>()
                .join("x")
        ),
        format!(
            "lhs_dilate={}",
            lhs_dil
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join("x")
        ),
        format!(
            "rhs_dilate={}",
            rhs_dil
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join("x")
        ),
    ]
    .to_vec();
    Some(format!(
        "HloModule c\nENTRY e {{\n  x = {ty}[{}] parameter(0)\n  w = {ty}[{}] parameter(1)\n  \
         ROOT c = {ty}[{}] convolution(x, w), window={{{}}}, dim_labels={lt}_{kt}->{ot}, \
         feature_group_count={fg}, batch_group_count={bg}\n}}\n",
        list(&x),
        list(&w),
        list(&o),
        win.join(" "),
    ))
}

#[test]
fn random_convolutions_match_the_reference_evaluator() {
    let ran = gen::check_all("hloc-cache-convs", gen::seeds(0..40), module);
    assert!(ran >= 20, "only {ran} convolutions drawn");
}

/// `args` with argument `k`'s elements from `first` on set to `value`.
fn with_value(
    mut args: Vec<hlo::Literal>,
    k: usize,
    first: usize,
    value: f64,
) -> Vec<hlo::Literal> {
    use hlo::literal::{ArrayData, ArrayLiteral};
    let a = args[k].as_array().expect("array").expanded();
    let data = match a.data().clone() {
        ArrayData::F32(mut v) => {
            v.iter_mut().skip(first).for_each(|x| *x = value as f32);
            ArrayData::F32(v)
        }
        ArrayData::F64(mut v) => {
            v.iter_mut().skip(first).for_each(|x| *x = value);
            ArrayData::F64(v)
        }
        other => other,
    };
    args[k] = hlo::Literal::Array(ArrayLiteral::new(a.shape().clone(), data).expect("literal"));
    args
}

/// The positions of `a`'s NaN elements.
fn nans(a: &hlo::Literal) -> Vec<bool> {
    let a = a.as_array().expect("array").expanded();
    (0..a.element_count())
        .map(|i| a.get_f64(i).is_some_and(f64::is_nan))
        .collect()
}

/// HLO's padding and dilation holes are zero-valued elements: a tap there adds `0 · w`,
/// NaN for an infinite weight. The same random convolutions with one infinite weight give
/// NaN exactly where the evaluator gives NaN (the tolerance check alone counts infinity
/// against NaN as a note), on the elemental and the GEMM paths alike. A convolution none of
/// whose taps reads the input (an all-NaN input leaves every output finite) is skipped here;
/// `padding_only_convolutions` checks those.
#[test]
fn taps_in_padding_multiply_the_zero_as_the_evaluator_does() {
    let options = gen::options("hloc-cache-convs");
    let mut failures = Vec::new();
    let mut ran = 0;
    for seed in gen::seeds(0..40) {
        let Some(text) = module(seed) else { continue };
        let m = gen::parse(seed, &text);
        let finite = with_value(gen::random_args(&m, seed), 1, 0, 0.5);
        let args = with_value(finite.clone(), 1, 0, f64::INFINITY);
        let args = with_value(args, 1, 1, 0.5);
        let probe = with_value(finite, 0, 0, f64::NAN);
        let reads_input = nans(&hlo_eval::evaluate(&m, &probe).expect("evaluate"))
            .into_iter()
            .any(|n| n);
        if !reads_input {
            continue;
        }
        let got = runtime::compile(&m, &options)
            .and_then(|exe| exe.run(&args))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let want = hlo_eval::evaluate(&m, &args).expect("evaluate");
        let (gn, wn) = (nans(&got[0]), nans(&want));
        if gn != wn {
            let count = |v: &[bool]| v.iter().filter(|&&b| b).count();
            failures.push(format!(
                "seed {seed}: NaN positions differ ({} NaN compiled, {} evaluated)\n{text}",
                count(&gn),
                count(&wn)
            ));
        }
        ran += 1;
    }
    gen::assert_none(&failures);
    assert!(ran >= 20, "only {ran} convolutions drawn");
}
