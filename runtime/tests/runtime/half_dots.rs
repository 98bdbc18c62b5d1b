//! Differential test of the GEMM path's `bf16`/`f16` products: dots whose operands or
//! result are half types (alone or mixed with `f32`), in random layouts, optionally
//! batched, at sizes that split among the threads by batch elements, rows, columns and
//! the contraction, and half convolutions (rewritten to a GEMM), compiled and compared
//! with the reference evaluator (`f32` sums rounded once). Each must run as one library
//! GEMM that widens its operands itself: no generated kernel converts them.

use crate::gen::{self, shape, Rng};

/// A random half dot `[b..., m, k] x [b..., k, n]` in random layouts.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (lt, rt, ot) = *rng.pick(&[
        ("bf16", "bf16", "bf16"),
        ("bf16", "bf16", "f32"),
        ("f16", "f16", "f16"),
        ("f16", "f16", "f32"),
        ("bf16", "f32", "f32"),
        ("f32", "f16", "bf16"),
        ("f32", "f32", "bf16"),
    ]);
    let (m, n, k) = match rng.below(5) {
        // Large enough to split by rows or columns.
        0 => (rng.range(200, 600), rng.range(20, 90), rng.range(16, 128)),
        1 => (rng.range(20, 90), rng.range(200, 600), rng.range(16, 128)),
        // A long contraction with a small result (split into summed parts).
        2 => (rng.range(2, 16), rng.range(2, 16), rng.range(1200, 2500)),
        // Thin and tiny products.
        3 => (rng.range(2, 40), rng.range(16, 200), rng.range(2, 64)),
        _ => (rng.range(1, 9), rng.range(1, 9), rng.range(2, 40)),
    };
    let batched = rng.below(3) == 0;
    let b: Vec<i64> = if batched {
        vec![rng.range(2, 6)]
    } else {
        Vec::new()
    };
    let dims = |x: i64, y: i64| -> Vec<i64> { b.iter().copied().chain([x, y]).collect() };
    let batch_dims = if batched { "0" } else { "" };
    let (lc, rc) = (b.len() + 1, b.len());
    let ls = shape(&mut rng, lt, &dims(m, k));
    let rs = shape(&mut rng, rt, &dims(k, n));
    let os = shape(&mut rng, ot, &dims(m, n));
    format!(
        "HloModule half\nENTRY e {{\n  a = {ls} parameter(0)\n  b = {rs} parameter(1)\n  \
         ROOT d = {os} dot(a, b), lhs_batch_dims={{{batch_dims}}}, rhs_batch_dims={{{batch_dims}}}, \
         lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}\n}}\n"
    )
}

/// Compiles and checks `text` against the evaluator; a failure unless it runs as one
/// library GEMM and no kernel (`kernels_allowed` for the convolutions' patch copies).
fn check_one(seed: u64, text: &str, kernels_allowed: bool, failures: &mut Vec<String>) {
    let options = gen::options("hloc-cache-half-dots");
    let m = gen::check_one_gemm(seed, text, &options, "", failures);
    if !kernels_allowed {
        match runtime::compile(&m, &options) {
            Ok(exe) if exe.stats().kernels > 0 => failures.push(format!(
                "seed {seed}: {} kernels beside the GEMM (a separate convert?)\n{text}",
                exe.stats().kernels
            )),
            Ok(_) => {}
            Err(e) => failures.push(format!("seed {seed}: {e}\n{text}")),
        }
    }
}

#[test]
fn half_dots_match_the_reference_evaluator() {
    let mut failures = Vec::new();
    for seed in gen::seeds(0..40) {
        let text = module(seed);
        // Every layout of these operands and results merges into matrices (one free
        // dimension a side): nothing but the GEMM runs.
        check_one(seed, &text, false, &mut failures);
    }
    gen::assert_none(&failures);
}

/// A random half convolution (NHWC input, HWIO kernel), large enough to be rewritten.
fn conv_module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["bf16", "f16"]);
    let (n, h, w) = (rng.range(1, 3), rng.range(12, 24), rng.range(12, 24));
    let (ci, co) = (rng.range(8, 32), rng.range(8, 48));
    let kk = *rng.pick(&[1i64, 3, 5]);
    let s = *rng.pick(&[1i64, 2]);
    let p = kk / 2;
    let oh = (h + 2 * p - kk) / s + 1;
    let ow = (w + 2 * p - kk) / s + 1;
    format!(
        "HloModule halfconv\nENTRY e {{\n  x = {ty}[{n},{h},{w},{ci}] parameter(0)\n  \
         k = {ty}[{kk},{kk},{ci},{co}] parameter(1)\n  \
         ROOT c = {ty}[{n},{oh},{ow},{co}] convolution(x, k), \
         window={{size={kk}x{kk} stride={s}x{s} pad={p}_{p}x{p}_{p}}}, dim_labels=b01f_01io->b01f\n}}\n"
    )
}

#[test]
fn half_convolutions_run_as_gemms_and_match_the_reference_evaluator() {
    let mut failures = Vec::new();
    for seed in gen::seeds(100..112) {
        let text = conv_module(seed);
        check_one(seed, &text, true, &mut failures);
    }
    gen::assert_none(&failures);
}

/// A `bf16 x bf16` dot of random extents, 1 to 300 a side (most not multiples of the AMX
/// tiles' 16 rows and 32 contracted elements), the product kept under 2M multiply-adds so
/// the evaluator stays quick; each operand's contracted dimension first or last, random
/// layouts, optionally batched, a `bf16` or `f32` result.
fn bf16_module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut ext = [rng.range(1, 301), rng.range(1, 301), rng.range(1, 301)];
    while ext.iter().product::<i64>() > 2_000_000 {
        let big = (0..3).max_by_key(|&i| ext[i]).expect("three extents");
        ext[big] = ext[big] * 2 / 3;
    }
    let [m, n, k] = ext;
    let ot = *rng.pick(&["bf16", "f32"]);
    let b: Vec<i64> = if rng.below(3) == 0 {
        vec![rng.range(2, 4)]
    } else {
        Vec::new()
    };
    let nb = b.len();
    let dims = |x: i64, y: i64| -> Vec<i64> { b.iter().copied().chain([x, y]).collect() };
    let batch_dims = if nb > 0 { "0" } else { "" };
    // The lhs `[m, k]` or `[k, m]`, the rhs `[k, n]` or `[n, k]`.
    let (lhs_t, rhs_t) = (rng.below(2) == 0, rng.below(2) == 0);
    let (ld, lc) = if lhs_t {
        (dims(k, m), nb)
    } else {
        (dims(m, k), nb + 1)
    };
    let (rd, rc) = if rhs_t {
        (dims(n, k), nb + 1)
    } else {
        (dims(k, n), nb)
    };
    let ls = shape(&mut rng, "bf16", &ld);
    let rs = shape(&mut rng, "bf16", &rd);
    let os = shape(&mut rng, ot, &dims(m, n));
    format!(
        "HloModule bf16dot\nENTRY e {{\n  a = {ls} parameter(0)\n  b = {rs} parameter(1)\n  \
         ROOT d = {os} dot(a, b), lhs_batch_dims={{{batch_dims}}}, rhs_batch_dims={{{batch_dims}}}, \
         lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}\n}}\n"
    )
}

/// On a CPU with AMX-BF16 these run on the tiles (contractions of 16 or more; shorter
/// ones and other CPUs widen to `f32`): only the order of the `f32` sums differs from the
/// evaluator's (the inputs, uniform in `[-1, 1)`, are never `bf16` denormals, which the
/// tiles read as zero).
#[test]
fn bf16_dots_of_random_sizes_match_the_reference_evaluator() {
    let mut failures = Vec::new();
    for seed in gen::seeds(200..216) {
        check_one(seed, &bf16_module(seed), false, &mut failures);
    }
    gen::assert_none(&failures);
}

/// The same dots on the convert path (`HLOC_GEMM_HALF=convert`, read once per process):
/// the test above run again in a child process of this test binary.
#[test]
fn bf16_dots_of_random_sizes_match_on_the_convert_path() {
    gen::rerun_with_env(
        "half_dots::bf16_dots_of_random_sizes_match_the_reference_evaluator",
        "HLOC_GEMM_HALF",
        "convert",
    );
}
