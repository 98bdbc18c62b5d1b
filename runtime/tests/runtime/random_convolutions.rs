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
    // The default seeds draw grouped convolutions conv-to-gemm makes one batched GEMM
    // (more than one output feature per group, at least its default 512 multiply-adds).
    let grouped = gen::seeds(0..40)
        .filter_map(module)
        .filter(|text| {
            let m = hlo::parse_module(text).expect("parse");
            let e = m.entry();
            let c = e.root_instr();
            let groups = c.feature_group_count().max(c.batch_group_count());
            let Some(dn) = c.conv_dimension_numbers() else {
                return false;
            };
            let k = e.instr(c.operands()[1]).shape().dims().to_vec();
            let o = c.shape().dims().to_vec();
            let out_f = o[dn.output_feature_dimension as usize];
            let macs: i64 = o.iter().product::<i64>() * k.iter().product::<i64>()
                / k[dn.kernel_output_feature_dimension as usize];
            groups > 1 && out_f > groups && macs >= 512
        })
        .count();
    assert!(
        grouped >= 3,
        "only {grouped} grouped GEMM convolutions drawn"
    );
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
/// `padding_only_convolutions` checks those. The default seeds draw both shapes that once
/// lost NaNs (counted): an `lhs_dilate` convolution conv-to-gemm splits into phases, and a
/// window tap in padding or a hole for every output (a range the indexing maps narrow).
#[test]
fn taps_in_padding_multiply_the_zero_as_the_evaluator_does() {
    let options = gen::options("hloc-cache-convs");
    let mut failures = Vec::new();
    let (mut ran, mut phases, mut dead_taps) = (0, 0, 0);
    for seed in gen::seeds(0..60) {
        let Some(text) = module(seed) else { continue };
        let m = gen::parse(seed, &text);
        let Some(failure) = padding_nans_differ(&options, seed, &m) else {
            continue;
        };
        failures.extend(failure.map(|f| format!("seed {seed}: {f}\n{text}")));
        let (p, d) = exercises(&m);
        phases += usize::from(p);
        dead_taps += usize::from(d);
        ran += 1;
    }
    gen::assert_none(&failures);
    eprintln!("{ran} convolutions: {phases} phase-split, {dead_taps} with a dead tap");
    assert!(ran >= 20, "only {ran} convolutions drawn");
    assert!(
        phases >= 1 && dead_taps >= 2,
        "the seeds drew {phases} phase-split and {dead_taps} dead-tap convolutions"
    );
}

/// The random campaign's seeds that lost NaNs (`HLOC_RANDOM_SEEDS=1000..1100`, issue 36):
/// 1011, 1040, 1048, 1055, 1072 and 1077 (`lhs_dilate`: conv-to-gemm's phases skipped the
/// holes' `0 · w`) and 1095 (a feature-grouped convolution whose first tap along a
/// dilated window lands in padding for every output: the elemental emitter looped over
/// the taps the indexing map kept).
#[test]
fn the_campaigns_lost_nans_stay_found() {
    let options = gen::options("hloc-cache-convs");
    let mut failures = Vec::new();
    for seed in [1011, 1040, 1048, 1055, 1072, 1077, 1095] {
        let text = module(seed).expect("a convolution");
        let m = gen::parse(seed, &text);
        match padding_nans_differ(&options, seed, &m) {
            Some(None) => {}
            Some(Some(f)) => failures.push(format!("seed {seed}: {f}\n{text}")),
            None => failures.push(format!("seed {seed}: reads no input\n{text}")),
        }
    }
    gen::assert_none(&failures);
}

/// Runs `m` (a random convolution) with its weight 0 infinite and the others 0.5:
/// `None` when no output reads the input (skipped), else the mismatch of NaN positions
/// between compiled and evaluated, if any.
fn padding_nans_differ(
    options: &runtime::CompileOptions,
    seed: u64,
    m: &hlo::Module,
) -> Option<Option<String>> {
    let finite = with_value(gen::random_args(m, seed), 1, 0, 0.5);
    let args = with_value(finite.clone(), 1, 0, f64::INFINITY);
    let args = with_value(args, 1, 1, 0.5);
    let probe = with_value(finite, 0, 0, f64::NAN);
    let reads_input = nans(&hlo_eval::evaluate(m, &probe).expect("evaluate"))
        .into_iter()
        .any(|n| n);
    if !reads_input {
        return None;
    }
    let got = match runtime::compile(m, options).and_then(|exe| exe.run(&args)) {
        Ok(got) => got,
        Err(e) => return Some(Some(format!("{e}"))),
    };
    let want = hlo_eval::evaluate(m, &args).expect("evaluate");
    let (gn, wn) = (nans(&got[0]), nans(&want));
    let count = |v: &[bool]| v.iter().filter(|&&b| b).count();
    Some((gn != wn).then(|| {
        format!(
            "NaN positions differ ({} NaN compiled, {} evaluated)",
            count(&gn),
            count(&wn)
        )
    }))
}

/// Which of the two once-failing shapes convolution `m` has: conv-to-gemm's phase split
/// (some dimension `lhs_dilate`d, each such with stride and `rhs_dilate` 1, no groups, at
/// least its default 512 multiply-adds) and a dead tap (a window position whose tap is in
/// padding or a hole for every output along its dimension).
fn exercises(m: &hlo::Module) -> (bool, bool) {
    let e = m.entry();
    let c = e.root_instr();
    let (Some(w), Some(dn)) = (c.window(), c.conv_dimension_numbers()) else {
        return (false, false);
    };
    let x = e.instr(c.operands()[0]).shape().dims().to_vec();
    let k = e.instr(c.operands()[1]).shape().dims().to_vec();
    let o = c.shape().dims().to_vec();
    let dilated = w.dims.iter().any(|d| d.base_dilation > 1);
    let split = w
        .dims
        .iter()
        .all(|d| d.base_dilation == 1 || (d.stride == 1 && d.window_dilation == 1));
    let groups = c.feature_group_count() == 1 && c.batch_group_count() == 1;
    let macs: i64 = o.iter().product::<i64>() * k.iter().product::<i64>()
        / k[dn.kernel_output_feature_dimension as usize];
    let phases = dilated && split && groups && macs >= 512;
    let dead = w.dims.iter().enumerate().any(|(i, d)| {
        let size = x[dn.input_spatial_dimensions[i] as usize];
        let out = o[dn.output_spatial_dimensions[i] as usize];
        (0..d.size).any(|t| {
            (0..out).all(|q| {
                let p = q * d.stride + t * d.window_dilation - d.padding_low;
                p < 0 || p > (size - 1) * d.base_dilation || p % d.base_dilation != 0
            })
        })
    });
    (phases, dead)
}

/// XLA:CPU's results recorded by `tools/xla_conv_holes.py` (jax 0.10.2; an infinite
/// weight, `hlo-eval/tests/xla_conv_holes`): XLA multiplies the padding's zeros but skips
/// the `lhs_dilate` holes (and, with them, the padding). The compiled backend follows the
/// HLO rule as the evaluator does: NaN exactly where the evaluator has NaN, which is
/// wherever XLA has NaN and, with `lhs_dilate`, also where a hole tap meets the infinite
/// weight; every other output equals XLA's within the tolerance.
#[test]
fn holes_and_padding_against_xla_recorded_outputs() {
    use hlo_eval::npy::{adapt_to, read_npz};
    use std::path::Path;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hlo-eval/tests/xla_conv_holes");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("hlo-eval/tests/xla_conv_holes")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 3, "cases missing");
    let options = gen::options("hloc-cache-convs");
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(dir.join("before_optimizations.hlo")).expect("hlo");
        let m = hlo::parse_module(&text).expect("parse");
        let args = crate::corpus::inputs(&m, &dir);
        let got = runtime::compile(&m, &options)
            .and_then(|exe| exe.run(&args))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = hlo_eval::evaluate(&m, &args).expect("evaluate");
        assert_eq!(nans(&got[0]), nans(&want), "{name}: NaN positions");
        let bytes = std::fs::read(dir.join("outputs.npz")).expect("outputs.npz");
        let (_, x) = read_npz(&bytes).expect("npz").remove(0);
        let shape = got[0].as_array().expect("array").shape().clone();
        let xla = hlo::Literal::Array(adapt_to(x, &shape, "xla").expect("shape"));
        let (g, x) = (
            got[0].as_array().expect("array").expanded(),
            xla.as_array().expect("array").expanded(),
        );
        let mut only_ours = 0;
        for i in 0..g.element_count() {
            let (a, b) = (g.get_f64(i).unwrap(), x.get_f64(i).unwrap());
            match (a.is_nan(), b.is_nan()) {
                (true, true) => {}
                (true, false) => only_ours += 1,
                (false, true) => panic!("{name}: element {i}: XLA NaN, compiled {a}"),
                (false, false) => assert!(
                    a == b || (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                    "{name}: element {i}: compiled {a}, XLA {b}"
                ),
            }
        }
        // Only the holes differ: where XLA skips them.
        let dilated = text.contains("lhs_dilate");
        assert_eq!(only_ours > 0, dilated, "{name}: {only_ours} NaN XLA lacks");
    }
}
