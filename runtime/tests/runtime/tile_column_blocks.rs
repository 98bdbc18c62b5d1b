//! Differential test of the AMX GEMMs' column blocks (`backend-cpu` `gemm_amx`): an
//! `s8 x s8 -> s32` product whose rhs rows are contiguous packs each block of result
//! columns' rhs panels (a tile step of them at a time) in the task that then computes the
//! block's every row block; `bf16` products and strided `s8` rhs pack every panel first
//! (by tile steps or panel by panel). `s8` and `bf16 x bf16 -> f32`/`bf16` dots at odd
//! extents (ragged tiles, panels and blocks), some large enough to split their blocks among
//! 2 or 3 threads and some left on one, batched or not, the rhs row-major or in a random
//! layout, compiled and compared with the reference evaluator (the `s8` sums bit for bit).
//! Each must be one library GEMM. Where the CPU has no AMX tiles the same modules run on
//! the portable and convert paths.

use runtime::CompileOptions;

use crate::gen::{self, list, shape, Rng};

/// A random tile-sized dot `[b..., m, k] x [b..., k, n]`, and the threads to run it on.
fn module(seed: u64) -> (String, usize) {
    let mut rng = Rng::new(seed);
    let (lt, ot) = *rng.pick(&[("s8", "s32"), ("bf16", "f32"), ("bf16", "bf16")]);
    let threads = 1 + rng.below(3);
    // Odd extents; about 2^23 multiply-adds or more (a split among the threads) in half
    // of them.
    let (m, n, k) = if rng.below(2) == 0 {
        (rng.range(90, 170), rng.range(150, 330), rng.range(300, 420))
    } else {
        (rng.range(17, 90), rng.range(33, 200), rng.range(64, 300))
    };
    let batch: Vec<i64> = if rng.below(4) == 0 {
        vec![2]
    } else {
        Vec::new()
    };
    let dims = |x: i64, y: i64| -> Vec<i64> { batch.iter().copied().chain([x, y]).collect() };
    let nb = batch.len();
    let ls = shape(&mut rng, lt, &dims(m, k));
    // Row-major (packed by tile steps) three times in four.
    let rs = if rng.below(4) == 0 {
        shape(&mut rng, lt, &dims(k, n))
    } else {
        let d = dims(k, n);
        let layout: Vec<i64> = (0..d.len() as i64).rev().collect();
        format!("{lt}[{}]{{{}}}", list(&d), list(&layout))
    };
    let os = shape(&mut rng, ot, &dims(m, n));
    let bd = if nb > 0 { "0" } else { "" };
    let text = format!(
        "HloModule blocks\nENTRY e {{\n  a = {ls} parameter(0)\n  b = {rs} parameter(1)\n  \
         ROOT d = {os} dot(a, b), lhs_batch_dims={{{bd}}}, rhs_batch_dims={{{bd}}}, \
         lhs_contracting_dims={{{}}}, rhs_contracting_dims={{{nb}}}\n}}\n",
        nb + 1
    );
    (text, threads)
}

#[test]
fn tile_column_blocks_match_the_reference_evaluator() {
    let mut failures = Vec::new();
    for seed in gen::seeds(0..12) {
        let (text, threads) = module(seed);
        let options = CompileOptions {
            threads: Some(threads),
            ..gen::options("hloc-cache-tile-column-blocks")
        };
        let label = format!(" ({threads} threads)");
        gen::check_one_gemm(seed, &text, &options, &label, &mut failures);
    }
    gen::assert_none(&failures);
}
