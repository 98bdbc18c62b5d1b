//! Differential test of dot: random batch, contracting (up to three) and free dimensions
//! in any order, random layouts of operands and result, element types (f32, f64, bf16 and
//! f16 into themselves or f32, s8 into s32 or s8 (wrapping), u8 into u32, and s32, which
//! stays a loop nest), sizes on both sides of the library GEMM's threshold, compiled for
//! the CPU and compared with the reference evaluator. Every dot but the s32 one and those
//! the simplifier turns into other ops must run as a library GEMM. Deterministic: a
//! failure prints the module.

use crate::gen::{self, list, shape, Rng};

/// A random dot module, and whether it must run as a library GEMM.
pub(crate) fn module(seed: u64) -> (String, bool) {
    let mut rng = Rng::new(seed);
    let (ty, out_ty) = *rng.pick(&[
        ("f32", "f32"),
        ("f64", "f64"),
        ("s32", "s32"),
        ("bf16", "f32"),
        ("bf16", "bf16"),
        ("f16", "f16"),
        ("f16", "f32"),
        ("s8", "s32"),
        ("s8", "s8"),
        ("u8", "u32"),
    ]);
    let big = rng.below(3) == 0;
    // Large only for the first contracting and first free dimension of each side (a few
    // hundred thousand elements at most).
    let size = |rng: &mut Rng, first: bool| {
        if big && first {
            rng.range(16, 90)
        } else {
            rng.range(1, 7)
        }
    };
    let nb = rng.below(3);
    let nc = 1 + rng.below(3);
    let (nl, nr) = (rng.below(3), rng.below(3));
    let batch: Vec<i64> = (0..nb).map(|_| rng.range(1, 3)).collect();
    // At most 256 products per sum: summed in another order than the evaluator's, f32
    // sums of more terms may differ by more than f32's tolerance where they cancel.
    let contract: Vec<i64> = (0..nc)
        .map(|i| match (big, i) {
            (true, 0) => rng.range(16, 64),
            (true, _) => rng.range(1, 2),
            _ => rng.range(1, 6),
        })
        .collect();
    let lfree: Vec<i64> = (0..nl).map(|i| size(&mut rng, i == 0)).collect();
    let rfree: Vec<i64> = (0..nr).map(|i| size(&mut rng, i == 0)).collect();
    // Each operand's dims: batch, contracting and free in a random order.
    let l = gen::dot_operand(&mut rng, &batch, &contract, &lfree);
    let r = gen::dot_operand(&mut rng, &batch, &contract, &rfree);
    let (ld, lb, lc, lf) = (l.dims, l.batch_at, l.contract_at, l.free);
    let (rd, rb, rc, rf) = (r.dims, r.batch_at, r.contract_at, r.free);
    let out: Vec<i64> = batch.iter().chain(&lf).chain(&rf).copied().collect();
    let ls = shape(&mut rng, ty, &ld);
    let rs = shape(&mut rng, ty, &rd);
    let os = shape(&mut rng, out_ty, &out);
    // The simplifier makes a dot over contracting dimensions of size 1 alone (without
    // batch dimensions, of one type) an outer product of broadcasts.
    let outer = nb == 0 && contract.iter().all(|&c| c == 1) && ty == out_ty;
    let gemm = ty != "s32" && !outer;
    let text = format!(
        "HloModule d\nENTRY e {{\n  a = {ls} parameter(0)\n  b = {rs} parameter(1)\n  \
         ROOT d = {os} dot(a, b), lhs_batch_dims={{{}}}, rhs_batch_dims={{{}}}, \
         lhs_contracting_dims={{{}}}, rhs_contracting_dims={{{}}}\n}}\n",
        list(&lb),
        list(&rb),
        list(&lc),
        list(&rc),
    );
    (text, gemm)
}

#[test]
fn random_dots_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-dots");
    let mut failures = Vec::new();
    for seed in gen::seeds(0..60) {
        let (text, gemm) = module(seed);
        let m = gen::parse(seed, &text);
        let calls = gen::check(
            seed,
            (&m, &text),
            &gen::random_args(&m, seed),
            &options,
            &mut failures,
        );
        if gemm && calls == 0 {
            failures.push(format!("seed {seed}: the dot is no library GEMM\n{text}"));
        }
    }
    gen::assert_none(&failures);
}
