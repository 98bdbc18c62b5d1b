//! Differential test of reductions: random ranks up to 4, random reduced dimension sets,
//! layouts of input and result, sizes that exercise row reductions with partial
//! accumulators, column reductions in tiles with remainders and middle dimensions,
//! reducers of every kind (sum, product, max, min, and, or) over their types, and an
//! elementwise consumer, compiled for the CPU and compared with the reference evaluator.
//! Deterministic: a failure prints the module.

use crate::gen::{self, list, shape, Rng};

/// A random reduce (its result scaled elementwise, so it fuses with a consumer).
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (ty, op, init) = *rng.pick(&[
        ("f32", "add", "0"),
        ("f64", "add", "0"),
        ("f32", "maximum", "-inf"),
        ("f64", "minimum", "inf"),
        ("f32", "multiply", "1"),
        ("s32", "add", "0"),
        ("s32", "minimum", "2147483647"),
        ("u8", "maximum", "0"),
        ("pred", "and", "true"),
        ("pred", "or", "false"),
    ]);
    let rank = 1 + rng.below(4);
    let dims: Vec<i64> = (0..rank)
        .map(|_| match rng.below(4) {
            0 => rng.range(1, 3),
            1 => rng.range(30, 70),
            _ => rng.range(3, 17),
        })
        .collect();
    let mut reduced: Vec<usize> = (0..rank).filter(|_| rng.below(2) == 0).collect();
    if reduced.is_empty() {
        reduced.push(rng.below(rank));
    }
    let kept: Vec<i64> = (0..rank)
        .filter(|d| !reduced.contains(d))
        .map(|d| dims[d])
        .collect();
    let x = shape(&mut rng, ty, &dims);
    let r = shape(&mut rng, ty, &kept);
    let o = shape(&mut rng, ty, &kept);
    let consumer = if ty == "pred" { "not(r)" } else { "add(r, r)" };
    // A float sum reads magnitudes: a sum of signed values cancels, and reassociating it
    // (partial accumulators, as XLA does too) then moves the result past any relative
    // tolerance.
    let input = if ty.starts_with('f') && op == "add" {
        format!("  x0 = {x} parameter(0)\n  x = {x} abs(x0)")
    } else {
        format!("  x = {x} parameter(0)")
    };
    format!(
        "HloModule r\nred {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = {ty}[] {op}(a, b)\n}}\nENTRY e {{\n{input}\n  \
         i = {ty}[] constant({init})\n  r = {r} reduce(x, i), dimensions={{{}}}, to_apply=red\n  \
         ROOT o = {o} {consumer}\n}}\n",
        list(&reduced),
    )
}

#[test]
fn random_reductions_match_the_reference_evaluator() {
    gen::check_all("hloc-cache-reductions", gen::seeds(0..40), |seed| {
        Some(module(seed))
    });
}
