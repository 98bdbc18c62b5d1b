//! Differential test of scatter: random dimension numbers (inserted window dims, index
//! vector dimension in any position or implicit, several scatter dims, window sizes below
//! the operand's), indices that repeat and leave the operand, and update computations
//! that are not commutative, compiled for the CPU (the in-place scatter kernel) and
//! compared with the reference evaluator. Deterministic: a failure prints the module.

use std::path::Path;

use hlo::Literal;
use runtime::CompileOptions;

use crate::gen::{self, list, Rng};

/// A random scatter module and its index values (the other inputs are random).
fn module(seed: u64) -> (String, Vec<i64>, Vec<i32>) {
    let mut rng = Rng::new(seed);
    let ty = ["f32", "s32", "f64"][rng.below(3)];
    let rank = 1 + rng.below(3);
    let operand: Vec<i64> = (0..rank).map(|_| 1 + rng.below(6) as i64).collect();
    // Dimensions the indices address, and which of those the window leaves out.
    let n_idx = 1 + rng.below(rank);
    let to_operand = rng.distinct(rank, n_idx);
    let mut inserted: Vec<usize> = to_operand
        .iter()
        .copied()
        .filter(|_| rng.below(2) == 0)
        .collect();
    inserted.sort_unstable();
    let window: Vec<(usize, i64)> = (0..rank)
        .filter(|d| !inserted.contains(d))
        .map(|d| (d, 1 + rng.below(operand[d] as usize) as i64))
        .collect();
    // Scatter (batch) dims of the indices, and where the index vector sits.
    let (batch, ivd, indices) = gen::index_dims(&mut rng, n_idx);
    // Updates: the scatter dims in order, the window dims at random positions.
    let sizes: Vec<i64> = window.iter().map(|&(_, n)| n).collect();
    let (uwd, updates) = gen::interleave(&mut rng, &batch, &sizes);
    let count: i64 = indices.iter().product();
    let values: Vec<i32> = (0..count)
        .map(|_| rng.below(9) as i32 - 2) // -2..6: repeats, and windows off both edges
        .collect();
    let combiner = match rng.below(4) {
        0 => "ROOT r = TY[] add(a, b)",
        1 => "ROOT r = TY[] maximum(a, b)",
        2 => "m = TY[] multiply(a, b)\n  ROOT r = TY[] subtract(b, m)",
        _ => "ROOT r = TY[] copy(b)",
    }
    .replace("TY", ty);
    let text = format!(
        "HloModule s\ncomb {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  {combiner}\n}}\n\
         ENTRY e {{\n  x = {ty}[{}] parameter(0)\n  i = s32[{}] parameter(1)\n  u = {ty}[{}] parameter(2)\n  \
         ROOT s = {ty}[{}] scatter(x, i, u), update_window_dims={{{}}}, inserted_window_dims={{{}}}, \
         scatter_dims_to_operand_dims={{{}}}, index_vector_dim={ivd}, to_apply=comb\n}}\n",
        list(&operand),
        list(&indices),
        list(&updates),
        list(&operand),
        list(&uwd),
        list(&inserted),
        list(&to_operand),
    );
    (text, indices, values)
}

#[test]
fn random_scatters_match_the_reference_evaluator() {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-scatters")),
        ..CompileOptions::default()
    };
    let seeds = gen::seeds(0..48);
    let cases = seeds.end.saturating_sub(seeds.start) as usize;
    let mut failures = Vec::new();
    let mut kernels = 0;
    for seed in seeds {
        let (text, idims, values) = module(seed);
        let m = gen::parse(seed, &text);
        let entry = m.entry();
        let random = |n: usize| {
            let id = entry.parameter(n).expect("parameter");
            hlo_eval::random::random_literal(entry.instr(id).shape(), seed, n as u64, 1 << 20)
                .expect("random input")
        };
        let index = Literal::Array(
            hlo::literal::ArrayLiteral::new(
                hlo::Shape::array(hlo::ElementType::S32, idims),
                hlo::literal::ArrayData::S32(values),
            )
            .expect("indices"),
        );
        let args = vec![random(0), index, random(2)];
        kernels += usize::from(gen::check(seed, (&m, &text), &args, &options, &mut failures) == 0);
    }
    gen::assert_none(&failures);
    // Every one of these forms is the generated kernel, not the library routine.
    assert_eq!(kernels, cases, "some scatters fell back to the library");
}
