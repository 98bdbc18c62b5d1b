//! Differential test of the GEMM path's thin products and its splits among threads:
//! products with few rows and many columns (a recurrent step's `h @ W`), few columns
//! (a transposed convolution to RGB), tiny ones, matrix-vector and outer-product-like
//! shapes, long contractions with a small result (weight gradients, whose contraction is
//! split among the threads and summed), a recurrent step's products and weight gradients
//! on one thread, 9-16 columns (past the thin kernel's) and products just past the split
//! among threads, a few rows against a big weight (the small-side kernel), `f32` and
//! `f64`, random layouts of operands and result, optionally
//! batched, compiled and compared with the reference evaluator; each must run as one
//! library GEMM.

use crate::gen::{self, shape, Rng};

/// A random thin dot `[b..., m, k] x [b..., k, n]` in random layouts.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f64"]);
    // (m, n, k): the thin kernel's shapes on either side of its limits, and products
    // large enough to split by rows, columns or the contraction.
    // Then four: an LSTM step's `h @ W` and its weight gradient (one thread each),
    // 9-16 columns (just past the thin kernel's), and products just past the split among
    // threads.
    // The last: a few rows against an `f32` weight stored contiguous along `k`, big
    // enough (each thread's half too) for the small-side kernel.
    let category = rng.below(11);
    let (m, n, k) = match category {
        0 => (rng.range(2, 70), rng.range(16, 300), rng.range(1, 200)),
        1 => (rng.range(100, 1500), rng.range(1, 9), rng.range(1, 130)),
        2 => (rng.range(1, 9), rng.range(1, 12), rng.range(1, 60)),
        3 => (1, rng.range(1, 400), rng.range(1, 200)),
        4 => (rng.range(1, 400), 1, rng.range(1, 200)),
        5 => (rng.range(2, 24), rng.range(2, 24), rng.range(600, 3000)),
        6 => (rng.range(8, 33), rng.range(100, 260), rng.range(100, 260)),
        7 => (rng.range(100, 200), rng.range(100, 200), rng.range(8, 24)),
        8 => (rng.range(64, 600), rng.range(9, 17), rng.range(16, 300)),
        9 => (rng.range(16, 40), rng.range(700, 1200), rng.range(64, 128)),
        _ => (rng.range(2, 9), rng.range(1100, 1400), rng.range(240, 257)),
    };
    // f32 sums of more than a few hundred terms may differ from the evaluator's order by
    // more than f32's tolerance where they cancel: long contractions are f64.
    let small_side = category == 10;
    let ty = if k > 256 {
        "f64"
    } else if small_side {
        "f32"
    } else {
        ty
    };
    let batched = rng.below(4) == 0;
    let b: Vec<i64> = if batched {
        vec![rng.range(1, 4)]
    } else {
        Vec::new()
    };
    let dims = |x: i64, y: i64| -> Vec<i64> { b.iter().copied().chain([x, y]).collect() };
    let nb = b.len();
    let batch_dims = if batched { "0" } else { "" };
    let (lc, rc) = (nb + 1, nb);
    let ls = shape(&mut rng, ty, &dims(m, k));
    let rs = if small_side {
        // `k` minor, then `n`, then the batch dimension.
        let layout = if batched { "1,2,0" } else { "0,1" };
        format!("{ty}[{}]{{{layout}}}", gen::list(&dims(k, n)))
    } else {
        shape(&mut rng, ty, &dims(k, n))
    };
    let os = shape(&mut rng, ty, &dims(m, n));
    format!(
        "HloModule thin\nENTRY e {{\n  a = {ls} parameter(0)\n  b = {rs} parameter(1)\n  \
         ROOT d = {os} dot(a, b), lhs_batch_dims={{{batch_dims}}}, rhs_batch_dims={{{batch_dims}}}, \
         lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}\n}}\n"
    )
}

#[test]
fn thin_dots_match_the_reference_evaluator() {
    gen::check_one_gemm_each("hloc-cache-thin-dots", gen::seeds(0..80), module, |text| {
        text.contains("lhs_batch_dims={}")
    });
}
