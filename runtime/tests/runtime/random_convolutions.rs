//! Differential test of convolution: random 1-D and 2-D convolutions (dimension orders,
//! strides, padding including negative, lhs and rhs dilation, feature groups, batch groups,
//! f32 and f64, shapes large enough for the im2col and GEMM paths) compiled for the CPU and
//! compared with the reference evaluator. Deterministic: a failure prints the module.

use std::path::Path;

use hlo::Literal;
use runtime::CompileOptions;

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as usize) as i64
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in 0..v.len() {
            let j = i + self.below(v.len() - i);
            v.swap(i, j);
        }
    }
}

/// Dimension labels for a convolution of `n` spatial dims, in a random order: the text of
/// one side of `dim_labels` and, per position, which label it holds.
fn labels(rng: &mut Rng, first: char, second: char, n: usize) -> (String, Vec<char>) {
    let mut v: Vec<char> = vec![first, second];
    v.extend((0..n).map(|i| char::from(b'0' + i as u8)));
    rng.shuffle(&mut v);
    (v.iter().collect(), v)
}

fn dims_text(d: &[i64]) -> String {
    d.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// A random convolution module, or `None` when the drawn window leaves no output.
fn module(seed: u64) -> Option<String> {
    let mut rng = Rng(seed);
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
        dims_text(&x),
        dims_text(&w),
        dims_text(&o),
        win.join(" "),
    ))
}

#[test]
fn random_convolutions_match_the_reference_evaluator() {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-convs")),
        ..CompileOptions::default()
    };
    let mut failures = Vec::new();
    let mut ran = 0;
    for seed in crate::seeds(0..40) {
        let Some(text) = module(seed) else { continue };
        let m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        if let Err(errors) = hlo::verifier::verify(&m) {
            panic!("seed {seed}: generated module does not verify: {errors:?}\n{text}");
        }
        let entry = m.entry();
        let args: Vec<Literal> = (0..2)
            .map(|n| {
                let id = entry.parameter(n).expect("parameter");
                hlo_eval::random::random_literal(entry.instr(id).shape(), seed, n as u64, 1 << 24)
                    .expect("random input")
            })
            .collect();
        ran += 1;
        let result = runtime::compile(&m, &options)
            .map_err(|e| e.to_string())
            .and_then(|exe| exe.run(&args).map_err(|e| e.to_string()))
            .and_then(|outs| runtime::check_reference(&m, &args, &outs));
        if let Err(e) = result {
            failures.push(format!("seed {seed}: {e}\n{text}"));
        }
    }
    assert!(ran >= 20, "only {ran} convolutions drawn");
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
