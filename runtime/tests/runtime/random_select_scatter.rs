//! Differential test of select-and-scatter's compiled kernel (codegen's select-scatter
//! emitter, both forms of `fusion::select_scatter`): random ranks, extents and layouts,
//! windows of sizes, strides and paddings that tile the operand (the tiled form) or
//! overlap and leave gaps (the gather form), select computations of every direction with
//! and without the total order, inputs drawn from a pool with NaN, infinities, signed
//! zeros and repeated values (ties decide which tap wins), a scatter computation that
//! does not commute (the fold order shows), and an init that is a constant or a
//! parameter. Compiled for the CPU and compared with the reference evaluator bit for bit
//! where the tolerance is exact. Deterministic: a failure prints the module.

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};

use crate::gen::{self, shape, Rng};

/// The values inputs are drawn from: ties, NaN, infinities and signed zeros.
const FLOATS: [f64; 10] = [
    f64::NAN,
    -0.0,
    0.0,
    1.0,
    1.0,
    2.0,
    -1.0,
    0.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
];

/// One element type's array of `dims` (row-major) drawn from the pool.
fn draw(rng: &mut Rng, ty: &str, dims: &[i64]) -> Literal {
    let n: i64 = dims.iter().product();
    let n = n as usize;
    let (et, data) = match ty {
        "f32" => (
            ElementType::F32,
            ArrayData::F32((0..n).map(|_| *rng.pick(&FLOATS) as f32).collect()),
        ),
        "f64" => (
            ElementType::F64,
            ArrayData::F64((0..n).map(|_| *rng.pick(&FLOATS)).collect()),
        ),
        _ => (
            ElementType::S32,
            ArrayData::S32((0..n).map(|_| rng.range(-2, 2) as i32).collect()),
        ),
    };
    Literal::Array(ArrayLiteral::new(Shape::array(et, dims.to_vec()), data).expect("literal"))
}

/// A random select-and-scatter module and its inputs; `None` when the window leaves no
/// source element.
pub(crate) fn module(seed: u64) -> Option<(String, Vec<Literal>)> {
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f64", "s32"]);
    let rank = 1 + rng.below(4);
    let dims: Vec<i64> = (0..rank).map(|_| rng.range(1, 7)).collect();
    let tile = rng.below(2) == 0;
    let mut size = Vec::with_capacity(rank);
    let mut stride = Vec::with_capacity(rank);
    let mut pads = Vec::with_capacity(rank);
    let mut src = Vec::with_capacity(rank);
    for &n in &dims {
        let s = rng.range(1, 3);
        let lo = rng.range(0, s - 1);
        let (st, hi) = if tile {
            // Windows that tile the operand exactly (the last one may reach the padding).
            (s, (s - (n + lo) % s) % s)
        } else {
            (rng.range(1, 3), rng.range(0, 2))
        };
        let padded = n + lo + hi;
        if padded < s {
            return None;
        }
        src.push((padded - s) / st + 1);
        size.push(s);
        stride.push(st);
        pads.push(format!("{lo}_{hi}"));
    }
    let dir = *rng.pick(&["GE", "GT", "LE", "LT"]);
    let total = if ty != "s32" && rng.below(3) == 0 {
        ", type=TOTALORDER"
    } else {
        ""
    };
    // acc * s + s: the order in which sources fold into one target shows.
    let scatter = match rng.below(3) {
        0 => "ROOT c = TY[] add(a, b)",
        1 => "ROOT c = TY[] maximum(a, b)",
        _ => "m = TY[] multiply(a, b)\n  ROOT c = TY[] add(m, b)",
    }
    .replace("TY", ty);
    let init_param = rng.below(2) == 0;
    let init = if init_param {
        format!("z = {ty}[] parameter(2)")
    } else {
        let v = match ty {
            "s32" => "1",
            _ => *rng.pick(&["0", "-inf", "0.5"]),
        };
        format!("z = {ty}[] constant({v})")
    };
    let xs = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join("x");
    let x_shape = shape(&mut rng, ty, &dims);
    let s_shape = shape(&mut rng, ty, &src);
    let r_shape = shape(&mut rng, ty, &dims);
    let text = format!(
        "HloModule s\nsel {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = pred[] compare(a, b), direction={dir}{total}\n}}\nsct {{\n  a = {ty}[] parameter(0)\n  \
         b = {ty}[] parameter(1)\n  {scatter}\n}}\nENTRY e {{\n  x = {x_shape} parameter(0)\n  \
         s = {s_shape} parameter(1)\n  {init}\n  ROOT r = {r_shape} select-and-scatter(x, s, z), \
         window={{size={} stride={} pad={}}}, select=sel, scatter=sct\n}}\n",
        xs(&size),
        xs(&stride),
        pads.join("x"),
    );
    let mut args = vec![draw(&mut rng, ty, &dims), draw(&mut rng, ty, &src)];
    if init_param {
        args.push(draw(&mut rng, ty, &[]));
    }
    Some((text, args))
}

#[test]
fn random_select_and_scatter_kernels_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-select-scatter");
    let mut failures = Vec::new();
    let (mut tiled, mut gathered) = (0, 0);
    for seed in gen::seeds(0..80) {
        let Some((text, args)) = module(seed) else {
            continue;
        };
        let m = gen::parse(seed, &text);
        let library = gen::check(seed, (&m, &text), &args, &options, &mut failures);
        // Every drawn window is one the kernel takes: no library call.
        if library != 0 {
            failures.push(format!("seed {seed}: ran as a library call\n{text}"));
        }
        let exe = runtime::compile(&m, &options).expect("compile");
        let source = &exe.plan().source;
        tiled += usize::from(source.contains("(tiled: one iteration per window)"));
        gathered += usize::from(source.contains("(gather: one iteration per operand element"));
    }
    gen::assert_none(&failures);
    assert!(
        tiled >= 10 && gathered >= 10,
        "the generator drew {tiled} tiled and {gathered} gather kernels"
    );
}
