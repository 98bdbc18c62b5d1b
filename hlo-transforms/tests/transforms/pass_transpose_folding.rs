//! Transpose folding into convolutions, checked against the evaluator: for every
//! permutation of a rank-3 input and of a rank-3 kernel (with a window, padding, stride and
//! dilation), folding the transpose into `dim_labels` must remove it and keep the result.

use hlo::pass::{Pass, PassContext, Pipeline};
use hlo::Literal;
use hlo_eval::{random::random_literal, tolerance};
use hlo_transforms::pass_by_name;

/// All permutations of `0..n`, in lexicographic order.
fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for rest in permutations(n - 1) {
        for at in 0..=rest.len() {
            let mut p = rest.clone();
            p.insert(at, n - 1);
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The shape text of `dims` permuted by `perm` (result dim i is `dims[perm[i]]`).
fn permuted(dims: &[i64], perm: &[usize]) -> String {
    let d: Vec<String> = perm.iter().map(|&p| dims[p].to_string()).collect();
    format!("f32[{}]", d.join(","))
}

fn list(perm: &[usize]) -> String {
    let d: Vec<String> = perm.iter().map(|p| p.to_string()).collect();
    d.join(",")
}

/// A 1-D convolution over a transposed input (`in_perm`) and transposed kernel
/// (`k_perm`): input b0f [2,7,3], kernel 0io [3,3,4], output b0f [2,4,4].
fn module(in_perm: &[usize], k_perm: &[usize]) -> String {
    let (x, k) = ([2, 7, 3], [3, 3, 4]);
    // Labels of the transposed values: the label of operand dim perm[i] sits at i.
    let labels =
        |perm: &[usize], names: [char; 3]| -> String { perm.iter().map(|&p| names[p]).collect() };
    format!(
        "HloModule conv
ENTRY e {{
  x = f32[2,7,3] parameter(0)
  k = f32[3,3,4] parameter(1)
  xt = {} transpose(x), dimensions={{{}}}
  kt = {} transpose(k), dimensions={{{}}}
  ROOT c = f32[2,4,4] convolution(xt, kt), window={{size=3 stride=2 pad=1_1 rhs_dilate=1}}, dim_labels={}_{}->b0f
}}
",
        permuted(&x, in_perm),
        list(in_perm),
        permuted(&k, k_perm),
        list(k_perm),
        labels(in_perm, ['b', '0', 'f']),
        labels(k_perm, ['0', 'i', 'o']),
    )
}

fn eval(m: &hlo::Module, args: &[Literal]) -> hlo::literal::ArrayLiteral {
    match hlo_eval::evaluate(m, args).unwrap() {
        Literal::Array(a) => a,
        other => panic!("expected an array, got {other:?}"),
    }
}

#[test]
fn every_transpose_of_input_and_kernel_folds_and_keeps_the_result() {
    let mut cases = 0;
    for in_perm in permutations(3) {
        for k_perm in permutations(3) {
            let text = module(&in_perm, &k_perm);
            let m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            hlo::pass::verify::verify(&m).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let args: Vec<Literal> = m
                .entry()
                .parameters()
                .iter()
                .enumerate()
                .map(|(n, &id)| {
                    random_literal(m.entry().instr(id).shape(), 7, n as u64, 1 << 20).unwrap()
                })
                .collect();
            let want = eval(&m, &args);
            let mut folded = m.clone();
            let mut pipeline = Pipeline::new("one");
            pipeline.add(pass_by_name("transpose-folding").unwrap());
            let mut ctx = PassContext::new();
            ctx.set_verifier(hlo::pass::verify::verify_hook());
            // Even an identity transpose is folded (and then removed as dead code).
            let changed = pipeline.run_in(&mut folded, &mut ctx).unwrap();
            let printed = hlo::print_module(&folded);
            assert!(changed, "{text}");
            assert!(!printed.contains("transpose("), "{text}\n{printed}");
            let got = eval(&folded, &args);
            assert!(tolerance::compare(&got, &want).matches, "{text}\n{printed}");
            cases += 1;
        }
    }
    assert_eq!(cases, 36);
}
