//! Transposing kernels with transcendental math (GELU's `tanh` of a transposed GEMM
//! result, `exp`, `log`, the logistic function), compiled for the CPU and compared with the
//! reference evaluator. The CPU emitter copies each transposed input's 32x32 tile into a
//! local array first and runs the math along the tile's contiguous rows
//! (`codegen/src/emit/transpose_stage.rs`); a second operand read in order (a bias) stays
//! in place. Random extents of whole tiles, rank 2 and 3, both input layouts.
//! Deterministic: a failure prints the module.

use crate::gen::{self, Rng};

/// A transpose of `p0` feeding an elementwise chain with a transcendental, with a second
/// operand added in the output's order.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f32", "f64"]);
    let rows = 32 * rng.range(2, 5);
    let cols = 32 * rng.range(2, 5);
    let batch = rng.range(1, 3);
    let layout = *rng.pick(&["2,1,0", "1,2,0"]);
    let math = *rng.pick(&[
        "x3 = {T} multiply(t, t)\n  x4 = {T} multiply(x3, t)\n  x5 = {T} add(t, x4)\n  \
         x = {T} tanh(x5)",
        "x5 = {T} negate(t)\n  x = {T} exponential(x5)",
        "x5 = {T} abs(t)\n  x6 = {T} add(x5, ones)\n  x = {T} log(x6)",
        "x = {T} logistic(t)",
    ]);
    let shape = format!("{ty}[{batch},{cols},{rows}]{{2,1,0}}");
    let math = math.replace("{T}", &shape);
    format!(
        "HloModule transposed_math\nENTRY e {{\n  p0 = {ty}[{batch},{rows},{cols}]{{{layout}}} parameter(0)\n  \
         p1 = {ty}[{rows}] parameter(1)\n  \
         t = {shape} transpose(p0), dimensions={{0,2,1}}\n  \
         one = {ty}[] constant(1)\n  ones = {shape} broadcast(one), dimensions={{}}\n  \
         {math}\n  b = {shape} broadcast(p1), dimensions={{2}}\n  \
         ROOT r = {shape} add(x, b)\n}}\n"
    )
}

#[test]
fn transposed_transcendentals_match_the_reference_evaluator() {
    let ran = gen::check_all("hloc-cache-transposed-math", gen::seeds(0..10), |seed| {
        Some(module(seed))
    });
    assert!(ran > 0);
}
