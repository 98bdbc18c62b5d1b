//! Kernels that read a whole row of a dying operand before they write it (softmax,
//! log-softmax, layer normalization, a row minus its max) written over that operand
//! (`plan::memory::in_place_order`, proven from the kernel's statement order), against the
//! evaluator. The row source is a (batched) GEMM, so it dies at the row kernel unless the
//! module also returns it; rows from 1 to 1030 elements (tiled reductions with partial
//! accumulators), reductions over the minor or another dimension, f32 and f64. Not vacuous:
//! many compiled programs have a kernel reading its `inout` operand at more than one offset
//! (a row read, which the identity indexing maps never share). The second test runs such a
//! row kernel in a loop body (`plan::memory::in_place::accept` on nested kernels): the
//! state a matrix multiplied by a weight and normalized by rows each iteration.

use crate::gen::{self, Rng};

/// A random module; `seed` picks everything.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let ty = if rng.below(4) == 0 { "f64" } else { "f32" };
    let batch = rng.below(2) == 0;
    let (b, r, k) = (
        1 + rng.below(3) as i64,
        1 + rng.below(9) as i64,
        1 + rng.below(8) as i64,
    );
    let c = *rng.pick(&[1i64, 3, 8, 33, 64, 100, 300, 1030]);
    let (dims, lhs, rhs, dot) = if batch {
        (
            vec![b, r, c],
            format!("{ty}[{b},{r},{k}]"),
            format!("{ty}[{b},{k},{c}]"),
            "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
        )
    } else {
        (
            vec![r, c],
            format!("{ty}[{r},{k}]"),
            format!("{ty}[{k},{c}]"),
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        )
    };
    let rank = dims.len();
    // Mostly the minor dimension (rows), sometimes another one.
    let red = if rng.below(4) == 0 { 0 } else { rank - 1 };
    let kept: Vec<i64> = (0..rank).filter(|&d| d != red).map(|d| dims[d]).collect();
    let kept_dims: Vec<usize> = (0..rank).filter(|&d| d != red).collect();
    let full = format!("{ty}[{}]", gen::list(&dims));
    let part = format!("{ty}[{}]", gen::list(&kept));
    let bcast = gen::list(&kept_dims);
    let n = dims[red];
    let mut l = vec![
        format!("  a = {lhs} parameter(0)"),
        format!("  w = {rhs} parameter(1)"),
        format!("  s = {full} dot(a, w), {dot}"),
        format!("  zero = {ty}[] constant(0)"),
        format!("  ninf = {ty}[] constant(-inf)"),
        format!("  mx = {part} reduce(s, ninf), dimensions={{{red}}}, to_apply=max"),
        format!("  bmx = {full} broadcast(mx), dimensions={{{bcast}}}"),
        format!("  c = {full} subtract(s, bmx)"),
    ];
    let kind = rng.below(4);
    let out = match kind {
        // softmax
        0 => {
            l.push(format!("  e = {full} exponential(c)"));
            l.push(format!(
                "  se = {part} reduce(e, zero), dimensions={{{red}}}, to_apply=sum"
            ));
            l.push(format!(
                "  bse = {full} broadcast(se), dimensions={{{bcast}}}"
            ));
            l.push(format!("  o = {full} divide(e, bse)"));
            "o"
        }
        // log-softmax
        1 => {
            l.push(format!("  e = {full} exponential(c)"));
            l.push(format!(
                "  se = {part} reduce(e, zero), dimensions={{{red}}}, to_apply=sum"
            ));
            l.push(format!("  lse = {part} log(se)"));
            l.push(format!(
                "  blse = {full} broadcast(lse), dimensions={{{bcast}}}"
            ));
            l.push(format!("  o = {full} subtract(c, blse)"));
            "o"
        }
        // layer normalization (mean and variance of the row)
        2 => {
            l.push(format!("  inv = {ty}[] constant({})", 1.0 / n as f64));
            l.push(format!("  binv = {part} broadcast(inv), dimensions={{}}"));
            l.push(format!(
                "  sm = {part} reduce(s, zero), dimensions={{{red}}}, to_apply=sum"
            ));
            l.push(format!("  mean = {part} multiply(sm, binv)"));
            l.push(format!(
                "  bmean = {full} broadcast(mean), dimensions={{{bcast}}}"
            ));
            l.push(format!("  d = {full} subtract(s, bmean)"));
            l.push(format!("  sq = {full} multiply(d, d)"));
            l.push(format!(
                "  ss = {part} reduce(sq, zero), dimensions={{{red}}}, to_apply=sum"
            ));
            l.push(format!("  var = {part} multiply(ss, binv)"));
            l.push(format!("  eps = {ty}[] constant(1e-5)"));
            l.push(format!("  beps = {part} broadcast(eps), dimensions={{}}"));
            l.push(format!("  ve = {part} add(var, beps)"));
            l.push(format!("  rs = {part} rsqrt(ve)"));
            l.push(format!(
                "  brs = {full} broadcast(rs), dimensions={{{bcast}}}"
            ));
            l.push(format!("  o = {full} multiply(d, brs)"));
            "o"
        }
        // the row minus its max
        _ => "c",
    };
    // Sometimes the GEMM's result is an output too: then it must keep its own bytes.
    let root = if rng.below(5) == 0 {
        format!("  ROOT root = ({full}, {full}) tuple({out}, s)")
    } else {
        format!("  ROOT root = ({full}) tuple({out})")
    };
    format!(
        "HloModule in_place_rows\n\nsum {{\n  x = {ty}[] parameter(0)\n  y = {ty}[] parameter(1)\n  ROOT z = {ty}[] add(x, y)\n}}\n\nmax {{\n  x = {ty}[] parameter(0)\n  y = {ty}[] parameter(1)\n  ROOT z = {ty}[] maximum(x, y)\n}}\n\nENTRY e {{\n{}\n{root}\n}}\n",
        l.join("\n")
    )
}

/// Whether a kernel reads one of its `inout` parameters at more than one offset: a row
/// read written over, which only the statement order proves.
fn row_in_place(k: &codegen::kir::Kernel) -> bool {
    k.buffers.iter().enumerate().any(|(p, b)| {
        let mut offsets = Vec::new();
        codegen::kir::for_each_load(&k.body, &mut |buf, e| {
            if buf == p && !offsets.contains(&e) {
                offsets.push(e);
            }
        });
        b.access == codegen::kir::Access::InOut && offsets.len() > 1
    })
}

#[test]
fn row_kernels_over_their_dying_operand_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-in-place-rows");
    let mut failures = Vec::new();
    let mut rows_in_place = 0;
    let seeds = gen::seeds(0..60);
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        gen::check_inspecting(seed, (&m, &text), &args, &options, &mut failures, |exe| {
            let p = &exe.plan().program;
            rows_in_place += usize::from(p.kernels.iter().any(row_in_place));
        });
    }
    gen::assert_none(&failures);
    assert!(
        count < 30 || rows_in_place * 4 >= count as usize,
        "only {rows_in_place} of {count} programs wrote a row kernel over its operand"
    );
}

/// A loop of `t` iterations whose body multiplies the state `x: [r, c]` by `w: [c, c]` and
/// normalizes the rows of the product (softmax or layer normalization: bounded values over
/// the iterations); `seed` picks everything.
fn loop_module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let ty = if rng.below(4) == 0 { "f64" } else { "f32" };
    let r = 1 + rng.below(9) as i64;
    let c = *rng.pick(&[3i64, 8, 33, 64, 100]);
    let t = 1 + rng.below(3);
    let (full, part) = (format!("{ty}[{r},{c}]"), format!("{ty}[{r}]"));
    let state = format!("(s32[], {full}, {ty}[{c},{c}])");
    let mut body = vec![
        format!("  p = {state} parameter(0)"),
        "  i = s32[] get-tuple-element(p), index=0".to_string(),
        format!("  x = {full} get-tuple-element(p), index=1"),
        format!("  w = {ty}[{c},{c}] get-tuple-element(p), index=2"),
        "  one = s32[] constant(1)".to_string(),
        "  i1 = s32[] add(i, one)".to_string(),
        format!("  s = {full} dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"),
        format!("  zero = {ty}[] constant(0)"),
    ];
    if rng.below(2) == 0 {
        body.extend([
            format!("  ninf = {ty}[] constant(-inf)"),
            format!("  mx = {part} reduce(s, ninf), dimensions={{1}}, to_apply=max"),
            format!("  bmx = {full} broadcast(mx), dimensions={{0}}"),
            format!("  c = {full} subtract(s, bmx)"),
            format!("  e = {full} exponential(c)"),
            format!("  se = {part} reduce(e, zero), dimensions={{1}}, to_apply=sum"),
            format!("  bse = {full} broadcast(se), dimensions={{0}}"),
            format!("  o = {full} divide(e, bse)"),
        ]);
    } else {
        body.extend([
            format!("  inv = {ty}[] constant({})", 1.0 / c as f64),
            format!("  binv = {part} broadcast(inv), dimensions={{}}"),
            format!("  sm = {part} reduce(s, zero), dimensions={{1}}, to_apply=sum"),
            format!("  mean = {part} multiply(sm, binv)"),
            format!("  bmean = {full} broadcast(mean), dimensions={{0}}"),
            format!("  d = {full} subtract(s, bmean)"),
            format!("  sq = {full} multiply(d, d)"),
            format!("  ss = {part} reduce(sq, zero), dimensions={{1}}, to_apply=sum"),
            format!("  var = {part} multiply(ss, binv)"),
            format!("  eps = {ty}[] constant(1e-3)"),
            format!("  beps = {part} broadcast(eps), dimensions={{}}"),
            format!("  ve = {part} add(var, beps)"),
            format!("  rs = {part} rsqrt(ve)"),
            format!("  brs = {full} broadcast(rs), dimensions={{0}}"),
            format!("  o = {full} multiply(d, brs)"),
        ]);
    }
    body.push(format!("  ROOT next = {state} tuple(i1, o, w)"));
    format!(
        "HloModule in_place_rows_loop\n\nsum {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT z = {ty}[] add(a, b)\n}}\n\nmax {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT z = {ty}[] maximum(a, b)\n}}\n\ncond {{\n  p = {state} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  n = s32[] constant({t})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n\nbody {{\n{}\n}}\n\nENTRY e {{\n  x = {full} parameter(0)\n  w = {ty}[{c},{c}] parameter(1)\n  z = s32[] constant(0)\n  t = {state} tuple(z, x, w)\n  l = {state} while(t), condition=cond, body=body\n  ROOT r = {full} get-tuple-element(l), index=1\n}}\n",
        body.join("\n")
    )
}

/// Whether a kernel run inside a loop (a condition, body or branch) has an `inout`
/// parameter.
fn nested_in_place(p: &plan::Program) -> bool {
    plan::memory::steps::nested_leaves(&p.thunks)
        .iter()
        .any(|(_, t)| match t {
            plan::Thunk::Kernel { kernel, .. } => p.kernels[*kernel]
                .buffers
                .iter()
                .any(|b| b.access == codegen::kir::Access::InOut),
            _ => false,
        })
}

#[test]
fn row_kernels_in_place_in_loop_bodies_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-in-place-rows");
    let mut failures = Vec::new();
    let mut in_body = 0;
    let seeds = gen::seeds(0..30);
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let text = loop_module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        gen::check_inspecting(seed, (&m, &text), &args, &options, &mut failures, |exe| {
            in_body += usize::from(nested_in_place(&exe.plan().program));
        });
    }
    gen::assert_none(&failures);
    assert!(
        count < 15 || in_body * 2 >= count as usize,
        "only {in_body} of {count} loop bodies wrote a kernel over its operand"
    );
}
