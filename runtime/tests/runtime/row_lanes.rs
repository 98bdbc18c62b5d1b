//! Chains of short reductions over many independent rows (softmax, layer norm and
//! GroupNorm-like statistics over small last dimensions, per-head sums, the wide module's
//! transpose → exp → reduce → broadcast groups), compiled for the CPU, where the rows run
//! as vector lanes (`codegen/src/emit/row_lanes.rs`), and compared with the reference
//! evaluator. Modules made only of correctly rounded operations (add, subtract, multiply,
//! divide, max) must match it bit for bit: each row keeps its order of steps. Random
//! shapes (2-16 reduced elements, 4-160 rows), f32, f64 and bf16. Deterministic: a
//! failure prints the module and its C.

use super::select_arms::element_bits;
use crate::gen::{self, Rng};

/// One random module of a reduction chain over the minor dimension of `[a, rows, k]`, and
/// whether its result is exact (no transcendental: bit for bit).
fn module(seed: u64) -> (String, bool) {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f64", "bf16"]);
    let a = rng.range(1, 3);
    let rows = *rng.pick(&[4, 7, 16, 33, 64, 100, 160]);
    let k = rng.range(2, 16);
    let s = format!("[{a},{rows},{k}]");
    let r = format!("[{a},{rows}]");
    let pattern = rng.below(4);
    let exact = pattern != 0 && pattern != 3;
    let body = match pattern {
        // Softmax: the row max, exp of the difference, its sum, the quotient.
        0 => format!(
            "  ninf = {ty}[] constant(-inf)\n  m = {ty}{r} reduce(x, ninf), dimensions={{2}}, to_apply=max\n  \
             mb = {ty}{s} broadcast(m), dimensions={{0,1}}\n  d = {ty}{s} subtract(x, mb)\n  \
             e = {ty}{s} exponential(d)\n  se = {ty}{r} reduce(e, zero), dimensions={{2}}, to_apply=sum\n  \
             sb = {ty}{s} broadcast(se), dimensions={{0,1}}\n  ROOT out = {ty}{s} divide(e, sb)\n"
        ),
        // Layer norm without the root: mean, centred values, their mean square.
        1 => format!(
            "  n = {ty}[] constant({k})\n  nb = {ty}{r} broadcast(n), dimensions={{}}\n  \
             sa = {ty}{r} reduce(x, zero), dimensions={{2}}, to_apply=sum\n  \
             mean = {ty}{r} divide(sa, nb)\n  mb = {ty}{s} broadcast(mean), dimensions={{0,1}}\n  \
             d = {ty}{s} subtract(x, mb)\n  dd = {ty}{s} multiply(d, d)\n  \
             sb = {ty}{r} reduce(dd, zero), dimensions={{2}}, to_apply=sum\n  \
             one = {ty}[] constant(1)\n  oneb = {ty}{r} broadcast(one), dimensions={{}}\n  \
             var = {ty}{r} add(sb, oneb)\n  vb = {ty}{s} broadcast(var), dimensions={{0,1}}\n  \
             ROOT out = {ty}{s} divide(d, vb)\n"
        ),
        // A chain of dependent sums: each row's sum scales the row for the next.
        2 => {
            let steps = rng.range(2, 5);
            let mut t = format!("  c0 = {ty}{s} add(x, x)\n");
            for i in 0..steps {
                let next = i + 1;
                t += &format!(
                    "  r{i} = {ty}{r} reduce(c{i}, zero), dimensions={{2}}, to_apply=sum\n  \
                     b{i} = {ty}{s} broadcast(r{i}), dimensions={{0,1}}\n  \
                     q{i} = {ty}{s} multiply(x, b{i})\n  c{next} = {ty}{s} maximum(q{i}, x)\n"
                );
            }
            t + &format!(
                "  ROOT out = {ty}{r} reduce(c{steps}, zero), dimensions={{2}}, to_apply=sum\n"
            )
        }
        // The wide module's groups: a transposed read, exp, a sum, a broadcast, twice.
        _ => {
            let st = format!("[{a},{k},{rows}]");
            format!(
                "  t0 = {ty}{st} transpose(x), dimensions={{0,2,1}}\n  \
                 t1 = {ty}{s} transpose(t0), dimensions={{0,2,1}}\n  e0 = {ty}{s} exponential(t1)\n  \
                 r0 = {ty}{r} reduce(e0, zero), dimensions={{2}}, to_apply=sum\n  \
                 b0 = {ty}{st} broadcast(r0), dimensions={{0,2}}\n  c0 = {ty}{st} multiply(b0, t0)\n  \
                 t2 = {ty}{s} transpose(c0), dimensions={{0,2,1}}\n  e1 = {ty}{s} exponential(t2)\n  \
                 ROOT r1 = {ty}{r} reduce(e1, zero), dimensions={{2}}, to_apply=sum\n"
            )
        }
    };
    let text = format!(
        "HloModule row_lanes\nsum {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = {ty}[] add(a, b)\n}}\nmax {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = {ty}[] maximum(a, b)\n}}\nENTRY e {{\n  p = f32{s} parameter(0)\n  x = {ty}{s} convert(p)\n  \
         zero = {ty}[] constant(0)\n{body}}}\n"
    );
    (text, exact)
}

#[test]
fn short_reduction_chains_over_many_rows_match_the_evaluator() {
    let options = gen::options("hloc-cache-row-lanes");
    let seeds = gen::seeds(0..14);
    let n = seeds.end - seeds.start;
    let mut lanes = 0;
    for seed in seeds {
        let (text, exact) = module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        let exe =
            runtime::compile(&m, &options).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let c = &exe.plan().source;
        let outs = exe
            .run(&args)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        if let Err(e) = runtime::check_reference(&m, &args, &outs) {
            panic!("seed {seed}: {e}\n{text}\n{c}");
        }
        if exact {
            let want = hlo_eval::evaluate(&m, &args).expect("evaluate");
            let (got, want) = (
                outs[0].as_array().expect("array"),
                want.as_array().expect("array"),
            );
            let (g, w) = (element_bits(got.data()), element_bits(want.data()));
            let differ = g.iter().zip(&w).filter(|(x, y)| x != y).count();
            assert_eq!(
                differ, 0,
                "seed {seed}: {differ} elements differ from the evaluator's bits\n{text}\n{c}"
            );
        }
        if exe
            .plan()
            .program
            .kernels
            .iter()
            .any(|k| k.runs_rows_as_lanes())
        {
            lanes += 1;
        }
    }
    // Most drawn shapes qualify: a rule that stopped applying would leave the test
    // comparing only the old code.
    assert!(
        2 * lanes > n,
        "only {lanes} of {n} modules ran rows as lanes"
    );
}

/// A gather inside each row's short reduction, as an oblivious tree ensemble scores rows:
/// `out[r, t] = sum_l (x[r, feat[t, l]] > thr[t, l]) << l` (pattern 0, integers) or
/// `sum_l x[r, feat[t, l]] * thr[t, l]` (pattern 1, f32, exact in the row's order). The
/// index is bound per row inside the reduced loop, so the rows still run as lanes
/// (`row_lanes::bindings_cross`). Pattern 2 adds `-x[r, feat[t, 0]] * thr[t, l]`, a gather
/// whose index does not depend on the level. Random shapes: 2-16 levels, 4-160 trees,
/// 1-3 rows.
fn gather_module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let rows = rng.range(1, 3);
    let trees = *rng.pick(&[4, 7, 16, 33, 64, 100, 160]);
    let levels = rng.range(2, 16);
    let feats = *rng.pick(&[5, 40, 128]);
    let (t, g) = (
        format!("[{trees},{levels}]"),
        format!("[{rows},{trees},{levels}]"),
    );
    let pattern = rng.below(3);
    let (ty, op, body) = if pattern == 0 {
        (
            "s32",
            "add",
            format!(
                "  tb = f32{g} broadcast(thr), dimensions={{1,2}}\n  \
                 gt = pred{g} compare(gx, tb), direction=GT\n  c = s32{g} convert(gt)\n  \
                 io = s32{g} iota(), iota_dimension=2\n  v = s32{g} shift-left(c, io)\n  \
                 zero = s32[] constant(0)\n"
            ),
        )
    } else if pattern == 1 {
        (
            "f32",
            "add",
            format!(
                "  tb = f32{g} broadcast(thr), dimensions={{1,2}}\n  v = f32{g} multiply(gx, tb)\n  \
                 zero = f32[] constant(0)\n"
            ),
        )
    } else {
        // One gathered value per tree, the same at every level: its index does not depend
        // on the reduced loop, so it may be bound outside it.
        (
            "f32",
            "add",
            format!(
                "  f1 = s32[{trees},1] slice(feat), slice={{[0:{trees}], [0:1]}}\n  \
                 g1 = f32[{rows},{trees}] gather(x, f1), offset_dims={{0}}, collapsed_slice_dims={{1}}, \
                 start_index_map={{1}}, index_vector_dim=1, slice_sizes={{{rows},1}}\n  \
                 e1 = f32[{rows},{trees}] negate(g1)\n  \
                 eb = f32{g} broadcast(e1), dimensions={{0,1}}\n  \
                 tb = f32{g} broadcast(thr), dimensions={{1,2}}\n  m = f32{g} multiply(eb, tb)\n  \
                 v = f32{g} add(m, gx)\n  zero = f32[] constant(0)\n"
            ),
        )
    };
    format!(
        "HloModule gather_lanes\nsum {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = {ty}[] {op}(a, b)\n}}\nENTRY e {{\n  x = f32[{rows},{feats}] parameter(0)\n  \
         p = s32{t} parameter(1)\n  thr = f32{t} parameter(2)\n  a = s32{t} abs(p)\n  \
         n = s32[] constant({feats})\n  nb = s32{t} broadcast(n), dimensions={{}}\n  \
         feat = s32{t} remainder(a, nb)\n  \
         gx = f32{g} gather(x, feat), offset_dims={{0}}, collapsed_slice_dims={{1}}, \
         start_index_map={{1}}, index_vector_dim=2, slice_sizes={{{rows},1}}\n{body}  \
         ROOT out = {ty}[{rows},{trees}] reduce(v, zero), dimensions={{2}}, to_apply=sum\n}}\n"
    )
}

#[test]
fn gathers_inside_short_reductions_run_as_lanes_and_match_the_evaluator() {
    let options = gen::options("hloc-cache-row-lanes-gather");
    let seeds = gen::seeds(0..10);
    let n = seeds.end - seeds.start;
    let mut lanes = 0;
    for seed in seeds {
        let text = gather_module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        let exe =
            runtime::compile(&m, &options).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let c = &exe.plan().source;
        let outs = exe
            .run(&args)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let want = hlo_eval::evaluate(&m, &args).expect("evaluate");
        let (got, want) = (
            outs[0].as_array().expect("array"),
            want.as_array().expect("array"),
        );
        let (g, w) = (element_bits(got.data()), element_bits(want.data()));
        let differ = g.iter().zip(&w).filter(|(x, y)| x != y).count();
        assert_eq!(
            differ, 0,
            "seed {seed}: {differ} elements differ from the evaluator's bits\n{text}\n{c}"
        );
        if exe
            .plan()
            .program
            .kernels
            .iter()
            .any(|k| k.runs_rows_as_lanes())
        {
            lanes += 1;
        }
    }
    assert!(
        2 * lanes > n,
        "only {lanes} of {n} gather modules ran rows as lanes"
    );
}
