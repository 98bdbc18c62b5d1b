//! `conv-to-gemm` on grouped convolutions (`feature_group_count` or `batch_group_count`
//! above 1) checked against the evaluator: random groups, 1-D to
//! 3-D, strides, padding, both dilations, scrambled `dim_labels`, weight-gradient-like
//! windows; every one becomes one dot batched over the groups, in GEMM form, except with
//! one output feature per group (depthwise), which stays direct.

use hlo::pass::{Pass, PassContext, Pipeline};
use hlo::{Literal, Module, Opcode};
use hlo_eval::{random::random_literal, tolerance};
use hlo_transforms::ConvToGemm;
use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::SplitMix64;

struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn pick<T: Clone>(&mut self, v: &[T]) -> T {
        v[(self.next() % v.len() as u64) as usize].clone()
    }

    fn shuffle(&mut self, s: &str) -> String {
        let mut c: Vec<char> = s.chars().collect();
        for i in (1..c.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            c.swap(i, j);
        }
        c.into_iter().collect()
    }
}

/// A random grouped convolution's module text, `None` when its output would be empty.
fn random_case(rng: &mut Rng) -> Option<String> {
    let n = rng.pick(&[1usize, 2, 2, 3]);
    let groups = rng.pick(&[2i64, 3, 4]);
    let by_batch = rng.next().is_multiple_of(3);
    let (cg, og, b) = (
        rng.pick(&[1i64, 2]),
        rng.pick(&[2i64, 3]),
        rng.pick(&[1i64, 2]),
    );
    let (in_b, in_f, k_i, out_b) = if by_batch {
        (b * groups, cg, cg, b)
    } else {
        (b, cg * groups, cg, b)
    };
    let out_f = og * groups;
    let mut window = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut sizes, mut ks, mut outs) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let size = rng.pick(&[1i64, 3, 5, 7]);
        let k = if rng.next().is_multiple_of(5) {
            size
        } else {
            rng.pick(&[1i64, 2, 3])
        };
        let (s, lo, hi) = (
            rng.pick(&[1i64, 1, 2]),
            rng.pick(&[0i64, 1, 2, -1]),
            rng.pick(&[0i64, 1, -1]),
        );
        let (ld, rd) = (rng.pick(&[1i64, 1, 1, 2]), rng.pick(&[1i64, 1, 2]));
        let padded = (size - 1) * ld + 1 + lo + hi;
        let ext = (k - 1) * rd + 1;
        if padded < ext {
            return None;
        }
        outs.push((padded - ext) / s + 1);
        sizes.push(size);
        ks.push(k);
        window.0.push(k.to_string());
        window.1.push(s.to_string());
        window.2.push(format!("{lo}_{hi}"));
        window.3.push(ld.to_string());
        window.4.push(rd.to_string());
    }
    let d: String = (0..n).map(|j| char::from(b'0' + j as u8)).collect();
    let labels = match rng.next() % 3 {
        0 => [format!("b{d}f"), format!("{d}io"), format!("b{d}f")],
        1 => [format!("bf{d}"), format!("oi{d}"), format!("bf{d}")],
        _ => [
            rng.shuffle(&format!("bf{d}")),
            rng.shuffle(&format!("io{d}")),
            rng.shuffle(&format!("bf{d}")),
        ],
    };
    let ty = rng.pick(&["f32", "f64"]);
    let shape = |l: &str, size: &dyn Fn(char) -> i64| {
        let v: Vec<String> = l.chars().map(|c| size(c).to_string()).collect();
        format!("{ty}[{}]", v.join(","))
    };
    let sp = |c: char, v: &[i64]| v[c.to_digit(10).unwrap() as usize];
    let input = shape(&labels[0], &|c| match c {
        'b' => in_b,
        'f' => in_f,
        c => sp(c, &sizes),
    });
    let kernel = shape(&labels[1], &|c| match c {
        'i' => k_i,
        'o' => out_f,
        c => sp(c, &ks),
    });
    let output = shape(&labels[2], &|c| match c {
        'b' => out_b,
        'f' => out_f,
        c => sp(c, &outs),
    });
    let count = if by_batch {
        format!("batch_group_count={groups}")
    } else {
        format!("feature_group_count={groups}")
    };
    Some(format!(
        "HloModule conv
ENTRY e {{
  x = {input} parameter(0)
  k = {kernel} parameter(1)
  ROOT c = {output} convolution(x, k), window={{size={} stride={} pad={} lhs_dilate={} rhs_dilate={}}}, dim_labels={}_{}->{}, {count}
}}
",
        window.0.join("x"),
        window.1.join("x"),
        window.2.join("x"),
        window.3.join("x"),
        window.4.join("x"),
        labels[0],
        labels[1],
        labels[2]
    ))
}

fn run_pass(m: &Module) -> Module {
    let mut after = m.clone();
    let mut p = Pipeline::new("one");
    p.add(Box::new(ConvToGemm::always()));
    let mut ctx = PassContext::new();
    ctx.set_verifier(hlo::pass::verify::verify_hook());
    let text = hlo::print_module(m);
    assert!(p.run_in(&mut after, &mut ctx).unwrap(), "{text}");
    after
}

fn eval(m: &Module, args: &[Literal]) -> hlo::literal::ArrayLiteral {
    match hlo_eval::evaluate(m, args).unwrap() {
        Literal::Array(a) => a,
        other => panic!("expected an array, got {other:?}"),
    }
}

/// The text of the hand-picked cases: batch groups, and the two weight
/// gradients of a per-example (vmapped) convolution as JAX writes them.
const FIXED: [&str; 3] = [
    "x = f32[4,7,7,2] parameter(0)
  k = f32[3,3,2,4] parameter(1)
  ROOT c = f32[2,5,5,4] convolution(x, k), window={size=3x3}, dim_labels=b01f_01io->b01f, batch_group_count=2",
    "x = f32[4,8,8,1] parameter(0)
  k = f32[1,8,8,12] parameter(1)
  ROOT c = f32[3,3,1,12] convolution(x, k), window={size=8x8 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, feature_group_count=4",
    "x = f32[6,5,5,2] parameter(0)
  k = f32[2,5,5,12] parameter(1)
  ROOT c = f32[3,3,2,12] convolution(x, k), window={size=5x5 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, feature_group_count=3",
];

#[test]
fn grouped_convolutions_are_one_batched_gemm_and_evaluate_alike() {
    let mut rng = Rng(SplitMix64::seed_from_u64(30));
    let mut texts: Vec<String> = FIXED
        .iter()
        .map(|b| format!("HloModule m\nENTRY e {{\n  {b}\n}}\n"))
        .collect();
    while texts.len() < 150 {
        if let Some(t) = random_case(&mut rng) {
            texts.push(t);
        }
    }
    for (seed, text) in texts.iter().enumerate() {
        let m = hlo::parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        hlo::pass::verify::verify(&m).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let after = run_pass(&m);
        let printed = hlo::print_module(&after);
        let e = after.entry();
        assert!(
            !e.instructions()
                .any(|(_, i)| i.opcode() == Opcode::Convolution),
            "{text}\n{printed}"
        );
        // One dot, batched over the groups: [G, M, K] x [G, K, N].
        let dots: Vec<_> = e
            .instructions()
            .filter(|(_, i)| i.opcode() == Opcode::Dot)
            .map(|(_, i)| i)
            .collect();
        assert_eq!(dots.len(), 1, "{text}\n{printed}");
        let dn = dots[0].dot_dimension_numbers();
        assert_eq!(
            (
                dn.lhs_batch_dims,
                dn.rhs_batch_dims,
                dn.lhs_contracting_dims,
                dn.rhs_contracting_dims
            ),
            (vec![0], vec![0], vec![2], vec![1]),
            "{printed}"
        );
        let a: Vec<Literal> = m
            .entry()
            .parameters()
            .iter()
            .enumerate()
            .map(|(n, &id)| {
                random_literal(m.entry().instr(id).shape(), seed as u64, n as u64, 1 << 24).unwrap()
            })
            .collect();
        let (want, got) = (eval(&m, &a), eval(&after, &a));
        let cmp = tolerance::compare(&got, &want);
        assert!(cmp.matches, "{cmp:?}\n{text}\n{printed}");
    }
}

#[test]
fn one_output_feature_per_group_stays_direct() {
    // Depthwise (multiplier 1) and its weight gradient (batch groups, one feature each).
    for body in [
        "x = f32[2,7,7,4] parameter(0)
  k = f32[3,3,1,4] parameter(1)
  ROOT c = f32[2,7,7,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=4",
        "x = f32[16,12,12,8] parameter(0)
  dy = f32[16,12,12,8] parameter(1)
  ROOT c = f32[3,3,1,8] convolution(x, dy), window={size=12x12 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf, batch_group_count=8",
    ] {
        let text = format!("HloModule m\nENTRY e {{\n  {body}\n}}\n");
        let m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        hlo::pass::verify::verify(&m).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut after = m.clone();
        let changed = ConvToGemm::always().run(&mut after).unwrap();
        assert!(!changed, "{text}");
        assert_eq!(hlo::print_module(&after), hlo::print_module(&m));
    }
}
