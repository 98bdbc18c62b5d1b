//! Differential test of gather: random dimension numbers (collapsed slice dims, index
//! vector dimension in any position or implicit, several batch dims, slice sizes up to the
//! operand's), start indices that leave the operand (clamped), compiled for the CPU and
//! compared with the reference evaluator. Deterministic: a failure prints the module.

use std::path::Path;

use hlo::Literal;
use runtime::CompileOptions;

use crate::gen::{self, list, Rng};

/// A random gather module and its index values (the operand is random).
fn module(seed: u64) -> (String, Vec<i64>, Vec<i32>) {
    let mut rng = Rng::new(seed);
    let ty = ["f32", "s32", "f64", "u8"][rng.below(4)];
    let rank = 1 + rng.below(3);
    let operand: Vec<i64> = (0..rank).map(|_| 1 + rng.below(7) as i64).collect();
    let n_idx = 1 + rng.below(rank);
    let start_map = rng.distinct(rank, n_idx);
    let slice: Vec<i64> = operand
        .iter()
        .map(|&n| 1 + rng.below(n as usize) as i64)
        .collect();
    let mut collapsed: Vec<usize> = start_map
        .iter()
        .copied()
        .filter(|&d| slice[d] == 1 && rng.below(2) == 0)
        .collect();
    collapsed.sort_unstable();
    let (batch, ivd, indices) = gen::index_dims(&mut rng, n_idx);
    // Output: the batch dims in order, the kept slice dims at random positions.
    let kept: Vec<i64> = (0..rank)
        .filter(|d| !collapsed.contains(d))
        .map(|d| slice[d])
        .collect();
    let (offset, out) = gen::interleave(&mut rng, &batch, &kept);
    let count: i64 = indices.iter().product();
    let values: Vec<i32> = (0..count).map(|_| rng.below(12) as i32 - 3).collect();
    let module = format!(
        "HloModule g\nENTRY e {{\n  x = {ty}[{}] parameter(0)\n  i = s32[{}] parameter(1)\n  \
         ROOT g = {ty}[{}] gather(x, i), offset_dims={{{}}}, collapsed_slice_dims={{{}}}, \
         start_index_map={{{}}}, index_vector_dim={ivd}, slice_sizes={{{}}}\n}}\n",
        list(&operand),
        list(&indices),
        list(&out),
        list(&offset),
        list(&collapsed),
        list(&start_map),
        list(&slice),
    );
    (module, indices, values)
}

#[test]
fn random_gathers_match_the_reference_evaluator() {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-gathers")),
        ..CompileOptions::default()
    };
    let mut failures = Vec::new();
    for seed in gen::seeds(0..40) {
        let (text, idims, values) = module(seed);
        let m = gen::parse(seed, &text);
        let entry = m.entry();
        let id = entry.parameter(0).expect("parameter");
        let x = hlo_eval::random::random_literal(entry.instr(id).shape(), seed, 0, 1 << 24)
            .expect("random input");
        let index = Literal::Array(
            hlo::literal::ArrayLiteral::new(
                hlo::Shape::array(hlo::ElementType::S32, idims),
                hlo::literal::ArrayData::S32(values),
            )
            .expect("indices"),
        );
        gen::check(seed, (&m, &text), &[x, index], &options, &mut failures);
    }
    gen::assert_none(&failures);
}
