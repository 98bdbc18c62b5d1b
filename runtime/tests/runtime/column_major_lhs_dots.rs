//! Differential test of dots whose lhs is column-major (`tn`: the contracting dimension
//! first, a `{0,1}` layout of `[m, k]`, or two contracting dimensions ahead of the free
//! one, as a weight gradient's), large enough that backend-cpu copies the lhs row-major
//! before faer's product (`gemm_lhs_pack`): one product split by rows among the threads
//! copies each part's rows in that part; batched ones and ones split by columns copy
//! first. `f32` and `f64`, 1-3 threads, random rhs and result layouts (the copy needs a
//! row-major result; other layouts take faer's strided path), compiled and compared
//! with the reference evaluator; each must run as one library GEMM.

use runtime::CompileOptions;

use crate::gen::{self, list, shape, Rng};

/// A random dot with a column-major lhs, and the threads to run it on.
fn module(seed: u64) -> (String, usize) {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f64"]);
    let threads = 1 + rng.below(3);
    // Tall (split by rows), wide (by columns) or square; `k <= max(m, n)` for the copy.
    let (m, n) = match rng.below(3) {
        0 => (rng.range(130, 260), rng.range(64, 100)),
        1 => (rng.range(64, 100), rng.range(130, 260)),
        _ => (rng.range(64, 140), rng.range(64, 140)),
    };
    let k = rng.range(64, m.max(n).min(150) + 1);
    let batch: Vec<i64> = if rng.below(4) == 0 {
        vec![rng.range(2, 4)]
    } else {
        Vec::new()
    };
    let nb = batch.len() as i64;
    let b = |dims: &[i64]| -> Vec<i64> { batch.iter().chain(dims).copied().collect() };
    let row_major = |n: usize| -> String { list(&(0..n).rev().collect::<Vec<_>>()) };
    // The lhs: `[k, m]` row-major contracting its first dimension, `[m, k]` stored
    // column-major, or `[k1, k2, m]` contracting the first two (k = k1 * k2).
    // The rhs's contracting dimensions are the lhs's, in the same order.
    let (ls, lc, kd) = match rng.below(3) {
        0 => {
            let dims = b(&[k, m]);
            let ls = format!("{ty}[{}]{{{}}}", list(&dims), row_major(dims.len()));
            (ls, vec![nb], vec![k])
        }
        1 => {
            let dims = b(&[m, k]);
            // `m` minor, then `k`, then the batch dimension.
            let layout = if nb > 0 { "1,2,0" } else { "0,1" };
            (
                format!("{ty}[{}]{{{layout}}}", list(&dims)),
                vec![nb + 1],
                vec![k],
            )
        }
        _ => {
            let k1 = *rng.pick(&[2, 4, 8]);
            let k2 = (k / k1).max(8);
            let dims = b(&[k1, k2, m]);
            let ls = format!("{ty}[{}]{{{}}}", list(&dims), row_major(dims.len()));
            (ls, vec![nb, nb + 1], vec![k1, k2])
        }
    };
    let rdims: Vec<i64> = b(&kd.iter().copied().chain([n]).collect::<Vec<_>>());
    let rc: Vec<i64> = (nb..rdims.len() as i64 - 1).collect();
    let rs = shape(&mut rng, ty, &rdims);
    let odims = b(&[m, n]);
    let os = if rng.below(4) == 0 {
        shape(&mut rng, ty, &odims)
    } else {
        format!("{ty}[{}]{{{}}}", list(&odims), row_major(odims.len()))
    };
    let bd = if nb > 0 { "0" } else { "" };
    let text = format!(
        "HloModule tn\nENTRY e {{\n  a = {ls} parameter(0)\n  b = {rs} parameter(1)\n  \
         ROOT d = {os} dot(a, b), lhs_batch_dims={{{bd}}}, rhs_batch_dims={{{bd}}}, \
         lhs_contracting_dims={{{}}}, rhs_contracting_dims={{{}}}\n}}\n",
        list(&lc),
        list(&rc),
    );
    (text, threads)
}

#[test]
fn column_major_lhs_dots_match_the_reference_evaluator() {
    let mut failures = Vec::new();
    for seed in gen::seeds(0..32) {
        let (text, threads) = module(seed);
        let options = CompileOptions {
            threads: Some(threads),
            ..gen::options("hloc-cache-column-major-lhs")
        };
        let label = format!(" ({threads} threads)");
        gen::check_one_gemm(seed, &text, &options, &label, &mut failures);
    }
    gen::assert_none(&failures);
}
