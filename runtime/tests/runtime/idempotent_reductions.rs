//! Row maxima and minima (and `and`/`or` of predicates) of every length around the CPU
//! emitter's lane count, compiled for the CPU and compared with the reference evaluator.
//! An idempotent reducer runs in partial accumulators even when the row is shorter than
//! two chunks, its last elements as one more chunk overlapping the one before
//! (`codegen/src/emit/elemental/reduction.rs`): a causal attention mask's rows of 127.
//! NaNs, infinities and signed zeros appear in some rows; the reduction also feeds a
//! softmax-like consumer. Deterministic: a failure prints the module.

use crate::gen::{self, Rng};

/// A reduce along the minor dimension of a `[rows, n]` array with `n` around 32-300, the
/// input made of special values in some positions, and a consumer of the broadcast result.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n = *rng.pick(&[63, 64, 65, 95, 127, 128, 129, 150, 191, 200, 255, 300]);
    let rows = rng.range(1, 5);
    let s = format!("[{rows},{n}]");
    let (ty, op, init) = *rng.pick(&[
        ("f32", "maximum", "-inf"),
        ("f32", "minimum", "inf"),
        ("f64", "maximum", "-inf"),
        ("s32", "maximum", "-2147483648"),
        ("s32", "minimum", "2147483647"),
        ("pred", "and", "true"),
        ("pred", "or", "false"),
    ]);
    let (input, consumer) = match ty {
        "pred" => (
            // A random threshold per module: rows all true, all false or mixed.
            format!(
                "  k = f32[] constant({})\n  kb = f32{s} broadcast(k), dimensions={{}}\n  \
                 v = pred{s} compare(p0, kb), direction=GT\n",
                *rng.pick(&["-0.999", "0.97", "0.5", "1.5"])
            ),
            format!("  ROOT out = pred{s} xor(v, rb)\n"),
        ),
        "s32" => (
            format!(
                "  sc = f32[] constant(1000)\n  scb = f32{s} broadcast(sc), dimensions={{}}\n  \
                 m = f32{s} multiply(p0, scb)\n  v = s32{s} convert(m)\n"
            ),
            format!("  ROOT out = s32{s} subtract(v, rb)\n"),
        ),
        _ => {
            // Special values where p0 is near its ends: NaN, -inf, -0 (rarely, so most
            // rows stay finite).
            let nan = *rng.pick(&["nan", "-inf", "-0", "inf"]);
            (
                format!(
                    "  w = {ty}{s} convert(p0)\n  c = {ty}[] constant(0.985)\n  \
                     cb = {ty}{s} broadcast(c), dimensions={{}}\n  \
                     far = pred{s} compare(w, cb), direction=GT\n  \
                     sp = {ty}[] constant({nan})\n  spb = {ty}{s} broadcast(sp), dimensions={{}}\n  \
                     v = {ty}{s} select(far, spb, w)\n"
                ),
                format!(
                    "  d = {ty}{s} subtract(v, rb)\n  ROOT out = {ty}{s} exponential(d)\n"
                ),
            )
        }
    };
    format!(
        "HloModule idempotent_reductions\nred {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = {ty}[] {op}(a, b)\n}}\nENTRY e {{\n  p0 = f32{s} parameter(0)\n{input}  \
         i = {ty}[] constant({init})\n  r = {ty}[{rows}] reduce(v, i), dimensions={{1}}, to_apply=red\n  \
         rb = {ty}{s} broadcast(r), dimensions={{0}}\n{consumer}}}\n"
    )
}

#[test]
fn idempotent_row_reductions_match_the_reference_evaluator() {
    let ran = gen::check_all(
        "hloc-cache-idempotent-reductions",
        gen::seeds(0..10),
        |seed| Some(module(seed)),
    );
    assert!(ran > 0);
}
