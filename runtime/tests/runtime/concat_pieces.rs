//! Concatenates whose pieces are single points or short runs (`concat(m, logits)` in an
//! InfoNCE loss: one positive logit before 65536 negatives), fused into row reductions and
//! elementwise consumers, compiled for the CPU and compared with the reference evaluator.
//! The CPU emitter peels such a piece out of the innermost loop
//! (`codegen::kir::peel_guarded_points`): the point runs in its own one-iteration loop,
//! the rest of the row branch-free. Rows long enough that the sum runs in blocks of
//! chunks (the piece's condition then names the block and chunk variables), and short
//! ones; pieces first, last and in the middle. Deterministic: a failure prints the module.

use crate::gen::{self, list, Rng};

/// A random concatenate along the rows' dimension of 1-3-element pieces and long ones,
/// reduced along it (a sum of magnitudes or a max) and also consumed elementwise.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f32", "f64"]);
    let rows = rng.range(1, 4);
    let n = 2 + rng.below(3);
    let mut widths: Vec<i64> = (0..n)
        .map(|_| match rng.below(4) {
            0 | 1 => rng.range(1, 3),
            2 => rng.range(30, 200),
            _ => rng.range(1000, 2200),
        })
        .collect();
    // At least one point piece.
    let at = rng.below(n);
    widths[at] = 1;
    let total: i64 = widths.iter().sum();
    let params: String = widths
        .iter()
        .enumerate()
        .map(|(i, w)| format!("  p{i} = {ty}[{rows},{w}] parameter({i})\n"))
        .collect();
    let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    let (op, init, value) = *rng.pick(&[
        ("add", "0", "exponential(c)"),
        ("add", "0", "abs(c)"),
        ("maximum", "-inf", "multiply(c, c)"),
    ]);
    format!(
        "HloModule concat_pieces\nred {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = {ty}[] {op}(a, b)\n}}\nENTRY e {{\n{params}  \
         c = {ty}[{rows},{total}] concatenate({}), dimensions={{1}}\n  \
         v = {ty}[{rows},{total}] {value}\n  i = {ty}[] constant({init})\n  \
         r = {ty}[{rows}] reduce(v, i), dimensions={{1}}, to_apply=red\n  \
         b = {ty}[{rows},{total}] broadcast(r), dimensions={{0}}\n  \
         s = {ty}[{rows},{total}] subtract(v, b)\n  \
         ROOT t = ({ty}[{rows}], {ty}[{rows},{total}]) tuple(r, s)\n}}\n",
        list(&names),
    )
}

#[test]
fn concatenates_of_point_and_short_pieces_match_the_reference_evaluator() {
    let ran = gen::check_all("hloc-cache-concat-pieces", gen::seeds(0..12), |seed| {
        Some(module(seed))
    });
    assert!(ran > 0);
}
