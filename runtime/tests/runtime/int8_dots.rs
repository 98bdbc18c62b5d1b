//! Differential test of the integer GEMM path: `s8 x s8 -> s32` dots of random forms
//! (batch, one or two contracting and free dimensions in any order, random layouts, so some
//! run as they stand and some with an operand packed in `s8`) at extents around the AMX
//! tile edges (16 rows, 64-element contraction steps, `k` of 1 for outer products) and
//! the threads' split, and dots of float operands (small integers, so every sum is exact)
//! into an `s32` result, compiled for the CPU and compared with the reference evaluator
//! bit for bit. Each must be one library GEMM. The tiles run where the CPU has AMX-INT8;
//! `HLOC_GEMM_INT=portable` (read once per process) runs the same modules on the portable
//! kernel in a child process.

use crate::gen::{self, list, shape, Rng};

/// A random integer or integer-result dot module.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let float = seed % 4 == 3;
    let size = |rng: &mut Rng| *rng.pick(&[1i64, 2, 15, 16, 17, 33, 70]);
    let k = *rng.pick(&[1i64, 3, 31, 32, 63, 64, 65, 130, 300]);
    let nb = rng.below(2);
    let batch: Vec<i64> = (0..nb).map(|_| rng.range(1, 4)).collect();
    // Two contracting dimensions sometimes (`k` split as `[k0, k1]`).
    let contract: Vec<i64> = if k > 3 && rng.below(3) == 0 {
        vec![2, (k + 1) / 2]
    } else {
        vec![k]
    };
    let (m, n) = (size(&mut rng), size(&mut rng));
    let l = gen::dot_operand(&mut rng, &batch, &contract, &[m]);
    let r = gen::dot_operand(&mut rng, &batch, &contract, &[n]);
    let (ld, lb, lc) = (l.dims, l.batch_at, l.contract_at);
    let (rd, rb, rc) = (r.dims, r.batch_at, r.contract_at);
    let out: Vec<i64> = batch.iter().copied().chain([m, n]).collect();
    let (ls, rs, os) = (
        shape(&mut rng, "s8", &ld),
        shape(&mut rng, "s8", &rd),
        shape(&mut rng, "s32", &out),
    );
    let fty = *rng.pick(&["f32", "bf16"]);
    let (operands, names) = if float {
        let conv = |s: &str| s.replacen("s8", fty, 1);
        (
            format!(
                "  fa = {} convert(a)\n  fb = {} convert(b)\n",
                conv(&ls),
                conv(&rs)
            ),
            "fa, fb",
        )
    } else {
        (String::new(), "a, b")
    };
    format!(
        "HloModule d\nENTRY e {{\n  a = {ls} parameter(0)\n  b = {rs} parameter(1)\n{operands}  \
         ROOT d = {os} dot({names}), lhs_batch_dims={{{}}}, rhs_batch_dims={{{}}}, \
         lhs_contracting_dims={{{}}}, rhs_contracting_dims={{{}}}\n}}\n",
        list(&lb),
        list(&rb),
        list(&lc),
        list(&rc),
    )
}

/// Checks the modules of `seeds`; each must make one library GEMM.
fn check(seeds: std::ops::Range<u64>) {
    let options = gen::options("hloc-cache-int8-dots");
    let mut failures = Vec::new();
    for seed in seeds {
        gen::check_one_gemm(seed, &module(seed), &options, "", &mut failures);
    }
    gen::assert_none(&failures);
}

#[test]
fn random_integer_dots_match_the_reference_evaluator() {
    check(gen::seeds(0..40));
}

/// The same modules on the portable kernel (`HLOC_GEMM_INT=portable`, read once per
/// process): the test above run again in a child process of this test binary.
#[test]
fn random_integer_dots_match_on_the_portable_kernel() {
    gen::rerun_with_env(
        "int8_dots::random_integer_dots_match_the_reference_evaluator",
        "HLOC_GEMM_INT",
        "portable",
    );
}
