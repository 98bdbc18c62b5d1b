//! Column reductions (the reduced dimensions major, the kept ones minor) behind reshapes
//! that insert or drop dimensions of size 1 (`reduce -> f32[32]`, then `reshape ->
//! f32[1,1,1,32]`, as a batch norm's statistics are shaped for broadcasting), with
//! elementwise ops before and after the reshape and a second reduction sharing the input,
//! compiled for the CPU and compared with the reference evaluator. The CPU column emitter
//! looks through such reshapes (`codegen/src/emit/column.rs`), so the reshape joins the
//! reduction's kernel. Random shapes and positions of the size-1 dimensions.
//! Deterministic: a failure prints the module.

use crate::gen::{self, list, Rng};

/// `dims` with a 1 inserted at each of `at` (positions in the growing list), never after
/// the last dimension (the minor-most stays the reduction's kept one).
fn with_ones(dims: &[i64], rng: &mut Rng) -> Vec<i64> {
    let mut out = dims.to_vec();
    for _ in 0..rng.range(1, 3) {
        let at = rng.below(out.len());
        out.insert(at, 1);
    }
    out
}

fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f32", "f64"]);
    let rank = rng.range(2, 3) as usize;
    let mut dims: Vec<i64> = (0..rank).map(|_| rng.range(2, 40)).collect();
    // The kept (minor) dimension: long enough for several column tiles sometimes.
    dims[rank - 1] = *rng.pick(&[3, 17, 32, 64, 100, 130]);
    let reduced: Vec<usize> = (0..rank - 1).collect();
    let kept = [dims[rank - 1]];
    let out = with_ones(&kept, &mut rng);
    let s = format!("{ty}[{}]", list(&dims));
    let k = format!("{ty}[{}]", list(&kept));
    let o = format!("{ty}[{}]", list(&out));
    let (op, init) = *rng.pick(&[("add", "0"), ("maximum", "-inf"), ("minimum", "inf")]);
    // After the reshape: nothing, or an elementwise op with a parameter of the new shape.
    let tail = if rng.below(2) == 0 {
        format!("  ROOT f = {o} reshape(m)\n")
    } else {
        format!("  g = {o} reshape(m)\n  ROOT f = {o} multiply(g, p1)\n")
    };
    format!(
        "HloModule reshaped_columns\nred {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = {ty}[] {op}(a, b)\n}}\nENTRY e {{\n  p0 = {s} parameter(0)\n  p1 = {o} parameter(1)\n  \
         x = {s} multiply(p0, p0)\n  i = {ty}[] constant({init})\n  \
         r = {k} reduce(x, i), dimensions={{{}}}, to_apply=red\n  \
         two = {ty}[] constant(2)\n  twos = {k} broadcast(two), dimensions={{}}\n  \
         m = {k} multiply(r, twos)\n{tail}}}\n",
        list(&reduced),
    )
}

#[test]
fn column_reductions_behind_size_one_reshapes_match_the_reference_evaluator() {
    let ran = gen::check_all("hloc-cache-reshaped-columns", gen::seeds(0..14), |seed| {
        Some(module(seed))
    });
    assert!(ran > 0);
}
