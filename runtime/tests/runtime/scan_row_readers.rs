//! A pipelined scan (as JAX's `ppermute` pipelines write): each step reads the row of its
//! stacked outputs it is about to overwrite (a dynamic-slice at the step's clamped row),
//! selects between that old row and the step's new value, and writes the choice back with
//! a dynamic-update-slice of the loop state. The old row's reader is a kernel feeding the
//! update, so it runs before the write: the plan updates the state in place (no copy of
//! all rows per step; held-out `pipeline_scan` copied 1 MB per tick). Against the
//! evaluator; a plan that copies the stack in the body fails the count.

use crate::gen::{self, Rng};

/// The loop module of `seed`: state `(counter, stack, x)`, `steps` iterations; row
/// `clamp(n - lag)` of the stack takes the new value only while `n - lag >= 0`.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (t, r, c) = (
        2 + rng.below(5) as i64,
        1 + rng.below(4) as i64,
        1 + rng.below(9) as i64,
    );
    let lag = rng.below(3) as i64;
    // At least two steps: a loop of one is inlined.
    let steps = 2 + rng.below(t as usize + 2);
    let stack = format!("f32[{t},{r},{c}]");
    let row = format!("f32[1,{r},{c}]");
    let x = format!("f32[{r},{c}]");
    let state = format!("(s32[], {stack}, {x})");
    let body = [
        format!("  st = {state} parameter(0)"),
        "  n = s32[] get-tuple-element(st), index=0".to_string(),
        format!("  s = {stack} get-tuple-element(st), index=1"),
        format!("  x = {x} get-tuple-element(st), index=2"),
        "  one = s32[] constant(1)".to_string(),
        "  n1 = s32[] add(n, one)".to_string(),
        "  z = s32[] constant(0)".to_string(),
        format!("  lag = s32[] constant({lag})"),
        "  i = s32[] subtract(n, lag)".to_string(),
        "  ok = pred[] compare(i, z), direction=GE".to_string(),
        format!("  top = s32[] constant({})", t - 1),
        "  j = s32[] clamp(z, i, top)".to_string(),
        format!("  old = {row} dynamic-slice(s, j, z, z), dynamic_slice_sizes={{1,{r},{c}}}"),
        format!("  o = {x} reshape(old)"),
        format!("  h = {x} tanh(x)"),
        format!("  pb = pred[{r},{c}] broadcast(ok), dimensions={{}}"),
        format!("  v = {x} select(pb, h, o)"),
        format!("  u = {row} reshape(v)"),
        format!("  upd = {stack} dynamic-update-slice(s, u, j, z, z)"),
        format!("  x1 = {x} add(x, h)"),
        format!("  ROOT next = {state} tuple(n1, upd, x1)"),
    ];
    format!(
        "HloModule scan_row_readers\n\ncond {{\n  st = {state} parameter(0)\n  n = s32[] get-tuple-element(st), index=0\n  m = s32[] constant({steps})\n  ROOT lt = pred[] compare(n, m), direction=LT\n}}\n\nbody {{\n{}\n}}\n\nENTRY e {{\n  p = {stack} parameter(0)\n  x = {x} parameter(1)\n  z = s32[] constant(0)\n  t0 = {state} tuple(z, p, x)\n  w = {state} while(t0), condition=cond, body=body\n  ROOT s = {stack} get-tuple-element(w), index=1\n}}\n",
        body.join("\n")
    )
}

#[test]
fn scans_reading_the_row_they_overwrite_update_in_place_and_match_the_evaluator() {
    let options = gen::options("hloc-cache-scan-row-readers");
    let mut failures = Vec::new();
    let mut copied = Vec::new();
    for seed in gen::seeds(0..8) {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        gen::check_inspecting(seed, (&m, &text), &args, &options, &mut failures, |exe| {
            if !gen::loops_keep_element_in_place(&exe.plan().program, 1) {
                copied.push(format!("seed {seed}:\n{text}"));
            }
        });
    }
    gen::assert_none(&failures);
    assert!(
        copied.is_empty(),
        "{} modules copy their stack, the first:\n{}",
        copied.len(),
        copied[0]
    );
}
