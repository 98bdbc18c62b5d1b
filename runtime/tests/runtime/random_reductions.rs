//! Differential test of reductions: random ranks up to 4, random reduced dimension sets,
//! layouts of input and result, sizes that exercise row reductions with partial
//! accumulators, column reductions in tiles with remainders and middle dimensions,
//! reducers of every kind (sum, product, max, min, and, or) over their types, and an
//! elementwise consumer, compiled for the CPU and compared with the reference evaluator;
//! and variadic (argmax-style) reduces whose dimensions may be zero-sized, so that some
//! reduce nothing and give their init values (issue 36 item 1).
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

/// A random argmax-style variadic reduce (value and index, ties to the lower index) over
/// dimensions of which some may be zero-sized, its index result consumed elementwise.
fn variadic_module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let rank = 1 + rng.below(3);
    let dims: Vec<i64> = (0..rank)
        .map(|_| match rng.below(4) {
            0 => 0,
            1 => rng.range(30, 70),
            _ => rng.range(1, 9),
        })
        .collect();
    let axis = rng.below(rank);
    let mut reduced: Vec<usize> = (0..rank)
        .filter(|&d| d == axis || rng.below(3) == 0)
        .collect();
    reduced.sort_unstable();
    let kept: Vec<i64> = (0..rank)
        .filter(|d| !reduced.contains(d))
        .map(|d| dims[d])
        .collect();
    let x = shape(&mut rng, "f32", &dims);
    let io = shape(&mut rng, "s32", &dims);
    let v = shape(&mut rng, "f32", &kept);
    let i = shape(&mut rng, "s32", &kept);
    let o = shape(&mut rng, "s32", &kept);
    format!(
        "HloModule v\nargmax {{\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  \
         bv = f32[] parameter(2)\n  bi = s32[] parameter(3)\n  \
         gt = pred[] compare(av, bv), direction=GT\n  eq = pred[] compare(av, bv), direction=EQ\n  \
         lt = pred[] compare(ai, bi), direction=LT\n  tie = pred[] and(eq, lt)\n  \
         keep = pred[] or(gt, tie)\n  v = f32[] select(keep, av, bv)\n  \
         i = s32[] select(keep, ai, bi)\n  ROOT r = (f32[], s32[]) tuple(v, i)\n}}\n\
         ENTRY e {{\n  x = {x} parameter(0)\n  io = {io} iota(), iota_dimension={axis}\n  \
         ninf = f32[] constant(-inf)\n  none = s32[] constant(-1)\n  \
         r = ({v}, {i}) reduce(x, io, ninf, none), dimensions={{{}}}, to_apply=argmax\n  \
         rv = {v} get-tuple-element(r), index=0\n  ri = {i} get-tuple-element(r), index=1\n  \
         o = {o} add(ri, ri)\n  ROOT t = ({v}, {o}) tuple(rv, o)\n}}\n",
        list(&reduced),
    )
}

#[test]
fn random_variadic_reductions_over_zero_sized_dimensions_match_the_reference_evaluator() {
    gen::check_all("hloc-cache-reductions", gen::seeds(0..30), |seed| {
        Some(variadic_module(seed))
    });
}

/// The same random reductions as CUDA C on the host emulation: the GPU emitters' kernels
/// (row reductions by lanes and warp shuffles, with the elementwise consumer as their
/// epilogue; the rest by the loop emitter), against the reference evaluator.
#[test]
fn random_reductions_on_the_cuda_host_match_the_reference_evaluator() {
    let mut options = gen::options("hloc-cache-reductions-cuda-host");
    options.cuda_host = true;
    let mut failures = Vec::new();
    for seed in gen::seeds(0..40) {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        gen::check(seed, (&m, &text), &args, &options, &mut failures);
    }
    gen::assert_none(&failures);
}
