//! Differential test of the small-row kernel (`backend-cpu/src/gemm_small.rs`): `f32`
//! dots of 1-40 rows against a weight whose columns are contiguous (`x @ W` with `W`
//! row-major `[k, n]`), columns of odd counts either side of the kernel's 128 and past
//! whole vectors and tile strips, contractions of 1-256, the lhs and the result in
//! random layouts, batched or not, some large enough to split by columns among the
//! threads; compiled and compared with the reference evaluator, each one library GEMM.

use crate::gen::{self, shape, Rng};

/// A random dot `[b..., m, k] x [b..., k, n]` whose rhs keeps `n` minor.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let m = rng.range(1, 41);
    // Either side of the kernel's 128 columns, then parts of a split by columns.
    let ns = [
        rng.range(100, 160),
        rng.range(160, 400),
        rng.range(600, 1100),
    ];
    let n = *rng.pick(&ns);
    let ks = [rng.range(1, 20), rng.range(20, 257)];
    let k = *rng.pick(&ks);
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
    let ls = shape(&mut rng, "f32", &dims(m, k));
    // `n` minor, then `k`, then the batch dimension.
    let layout = if batched { "2,1,0" } else { "1,0" };
    let rs = format!("f32[{}]{{{layout}}}", gen::list(&dims(k, n)));
    let os = shape(&mut rng, "f32", &dims(m, n));
    format!(
        "HloModule small_rows\nENTRY e {{\n  a = {ls} parameter(0)\n  b = {rs} parameter(1)\n  \
         ROOT d = {os} dot(a, b), lhs_batch_dims={{{batch_dims}}}, rhs_batch_dims={{{batch_dims}}}, \
         lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}\n}}\n"
    )
}

#[test]
fn small_row_dots_match_the_reference_evaluator() {
    gen::check_one_gemm_each(
        "hloc-cache-small-row-dots",
        gen::seeds(0..40),
        module,
        |text| !text.contains("lhs_batch_dims={0}"),
    );
}
