//! Tests of [`super::HoistLoopInvariantDots`]: random counted loops, each evaluated by the
//! reference evaluator before and after the pass; loops whose steps do not read every row
//! of the sliced array must stay as they are. The golden cases are in
//! `tests/passes/hoist-loop-invariant-dots/basic.test`.

use hlo::pass::Pass;
use hlo::{print_module, Literal, Module};
use hlo_eval::random::random_literal;
use hlo_eval::tolerance::compare;

use super::HoistLoopInvariantDots;

use testkit::rng::Lcg as Rng;

fn dims_text(d: &[i64]) -> String {
    d.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// A counted loop over `trip` steps (condition `i < trip`) whose body accumulates
/// `tanh(acc + dot(step rows of X, W))`. `X` is rank 3: `rows` along `step`, the
/// contracted `k` and a free `b` along the other two (`k` before `b` when `k_first`).
/// With `dropped` the slice's unit dimension is reshaped away; `w_kn` puts `W`'s
/// contracted dimension first.
#[allow(clippy::too_many_arguments)]
fn loop_module(
    trip: i64,
    rows: i64,
    step: usize,
    k_first: bool,
    dropped: bool,
    w_kn: bool,
    (b, k, n): (i64, i64, i64),
) -> String {
    let others: Vec<usize> = (0..3).filter(|&d| d != step).collect();
    let (kd, bd) = if k_first {
        (others[0], others[1])
    } else {
        (others[1], others[0])
    };
    let mut x = [0i64; 3];
    x[step] = rows;
    x[kd] = k;
    x[bd] = b;
    let mut ds = x;
    ds[step] = 1;
    let lhs: Vec<i64> = if dropped {
        (0..3).filter(|&d| d != step).map(|d| x[d]).collect()
    } else {
        ds.to_vec()
    };
    let lhs_k = if dropped && kd > step { kd - 1 } else { kd };
    // The dot's result: the lhs's free dimensions in order, then `n`.
    let mut acc: Vec<i64> = (0..lhs.len())
        .filter(|&d| d != lhs_k)
        .map(|d| lhs[d])
        .collect();
    acc.push(n);
    let (w, rc) = if w_kn { ([k, n], 0) } else { ([n, k], 1) };
    let (xs, ws, accs) = (dims_text(&x), dims_text(&w), dims_text(&acc));
    let state = format!("(s32[], f32[{accs}], f32[{xs}], f32[{ws}])");
    let starts: Vec<&str> = (0..3)
        .map(|d| if d == step { "i" } else { "zero" })
        .collect();
    let (lhs_name, reshape) = if dropped {
        (
            "lhs",
            format!("  lhs = f32[{}] reshape(ds)\n", dims_text(&lhs)),
        )
    } else {
        ("ds", String::new())
    };
    format!(
        "HloModule loop\n\nbody {{\n  p = {state} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  acc = f32[{accs}] get-tuple-element(p), index=1\n  x = f32[{xs}] get-tuple-element(p), index=2\n  w = f32[{ws}] get-tuple-element(p), index=3\n  zero = s32[] constant(0)\n  one = s32[] constant(1)\n  ds = f32[{dss}] dynamic-slice(x, {st}), dynamic_slice_sizes={{{dss}}}\n{reshape}  d = f32[{accs}] dot({lhs_name}, w), lhs_contracting_dims={{{lhs_k}}}, rhs_contracting_dims={{{rc}}}\n  s = f32[{accs}] add(acc, d)\n  t = f32[{accs}] tanh(s)\n  next = s32[] add(i, one)\n  ROOT r = {state} tuple(next, t, x, w)\n}}\n\ncond {{\n  p = {state} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  n = s32[] constant({trip})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n\nENTRY main {{\n  x = f32[{xs}] parameter(0)\n  w = f32[{ws}] parameter(1)\n  a = f32[{accs}] parameter(2)\n  z = s32[] constant(0)\n  init = {state} tuple(z, a, x, w)\n  loop = {state} while(init), condition=cond, body=body\n  ROOT out = f32[{accs}] get-tuple-element(loop), index=1\n}}\n",
        dss = dims_text(&ds),
        st = starts.join(", "),
    )
}

fn run(text: &str) -> (Module, Module, bool) {
    let before = hlo::parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut after = before.clone();
    let changed = HoistLoopInvariantDots
        .run(&mut after)
        .expect("the pass runs");
    hlo::pass::verify::round_trip(&after).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (before, after, changed)
}

/// The evaluator's results of `before` and `after` on random arguments agree.
fn same_results(before: &Module, after: &Module, seed: u64) {
    let entry = before.entry();
    let args: Vec<Literal> = entry
        .parameters()
        .iter()
        .enumerate()
        .map(|(p, &id)| random_literal(entry.instr(id).shape(), seed, p as u64, 1 << 22).unwrap())
        .collect();
    let want = hlo_eval::evaluate(before, &args).unwrap();
    let got = hlo_eval::evaluate(after, &args).unwrap();
    let c = compare(got.as_array().unwrap(), want.as_array().unwrap());
    assert!(c.matches, "{c:?}\n{}", print_module(after));
}

fn dot_count(m: &Module) -> (usize, usize) {
    let entry = m.entry_id();
    let mut n = (0, 0);
    for (cid, c) in m.computations() {
        let dots = c
            .instructions()
            .filter(|(_, i)| i.opcode == hlo::Opcode::Dot)
            .count();
        if cid == entry {
            n.0 += dots;
        } else {
            n.1 += dots;
        }
    }
    n
}

#[test]
fn random_loops_keep_their_results() {
    let mut rng = Rng(7);
    for case in 0..40 {
        let trip = 1 + rng.pick(5) as i64;
        let dims = (
            1 + rng.pick(3) as i64,
            1 + rng.pick(4) as i64,
            1 + rng.pick(4) as i64,
        );
        let (step, k_first) = (rng.pick(3), rng.pick(2) == 0);
        let (dropped, w_kn) = (rng.pick(2) == 0, rng.pick(2) == 0);
        let text = loop_module(trip, trip, step, k_first, dropped, w_kn, dims);
        let (before, after, changed) = run(&text);
        assert!(changed, "case {case} not rewritten:\n{text}");
        assert_eq!(dot_count(&after), (1, 0), "case {case}");
        same_results(&before, &after, case);
    }
}

#[test]
fn loops_reading_part_of_the_rows_stay() {
    // One row more than steps (the last would be extra work), one fewer (clamped reads).
    for rows in [4, 2] {
        let text = loop_module(3, rows, 1, true, true, false, (2, 3, 2));
        let (_, after, changed) = run(&text);
        assert!(!changed, "{}", print_module(&after));
    }
}

#[test]
fn contracting_the_step_dimension_stays() {
    // X[t, b] with each step's row contracted against W[1, n]: no free step dimension.
    let text = "HloModule c\n\nbody {\n  p = (s32[], f32[2,3], f32[4,2], f32[4,3]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  acc = f32[2,3] get-tuple-element(p), index=1\n  x = f32[4,2] get-tuple-element(p), index=2\n  w = f32[4,3] get-tuple-element(p), index=3\n  zero = s32[] constant(0)\n  one = s32[] constant(1)\n  ds = f32[1,2] dynamic-slice(x, i, zero), dynamic_slice_sizes={1,2}\n  wr = f32[1,3] dynamic-slice(w, i, zero), dynamic_slice_sizes={1,3}\n  d = f32[2,3] dot(ds, wr), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n  s = f32[2,3] add(acc, d)\n  next = s32[] add(i, one)\n  ROOT r = (s32[], f32[2,3], f32[4,2], f32[4,3]) tuple(next, s, x, w)\n}\n\ncond {\n  p = (s32[], f32[2,3], f32[4,2], f32[4,3]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  n = s32[] constant(4)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n\nENTRY main {\n  x = f32[4,2] parameter(0)\n  w = f32[4,3] parameter(1)\n  a = f32[2,3] parameter(2)\n  z = s32[] constant(0)\n  init = (s32[], f32[2,3], f32[4,2], f32[4,3]) tuple(z, a, x, w)\n  loop = (s32[], f32[2,3], f32[4,2], f32[4,3]) while(init), condition=cond, body=body\n  ROOT out = f32[2,3] get-tuple-element(loop), index=1\n}\n";
    let (_, _, changed) = run(text);
    assert!(!changed);
}
