//! Differential test of scans (`jnp.cumsum`, `cumprod`, `cummax`, `cummin` and their
//! reverse forms: a reduce-window whose window covers a prefix or a suffix of one
//! dimension): random ranks, extents that leave remainder tiles, the scanned dimension
//! anywhere, layouts of input and result, every reducer kind over its types (`f16` and
//! `bf16` included), initial values that are not the reducer's identity, windows longer
//! than the dimension, a fused elementwise producer, elementwise consumers (one reading
//! the scan backwards), and variadic scans (a running argmax), compiled for the CPU and
//! compared with the reference evaluator. Deterministic: a failure prints the module.

use crate::gen::{self, list, shape, Rng};

/// The variadic reducer of a running argmax: the larger value and its index (the earlier
/// index on ties).
const ARGMAX: &str = "argmax {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  \
    bv = f32[] parameter(2)\n  bi = s32[] parameter(3)\n  \
    gt = pred[] compare(bv, av), direction=GT\n  v = f32[] select(gt, bv, av)\n  \
    i = s32[] select(gt, bi, ai)\n  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n";

/// The `window=` attribute of a scan along `dim` of `dims`, of size `size`.
fn window(dims: &[i64], dim: usize, size: i64, reverse: bool) -> String {
    let sizes: Vec<i64> = (0..dims.len())
        .map(|d| if d == dim { size } else { 1 })
        .collect();
    let pads: Vec<String> = (0..dims.len())
        .map(|d| match (d == dim, reverse) {
            (false, _) => "0_0".to_string(),
            (true, false) => format!("{}_0", size - 1),
            (true, true) => format!("0_{}", size - 1),
        })
        .collect();
    let sizes: Vec<String> = sizes.iter().map(i64::to_string).collect();
    format!("{{size={} pad={}}}", sizes.join("x"), pads.join("x"))
}

/// A random scan module.
pub(crate) fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (ty, op, init) = *rng.pick(&[
        ("f32", "add", "0"),
        ("f32", "add", "1.5"),
        ("f64", "add", "0"),
        ("f32", "multiply", "1"),
        ("f64", "multiply", "-2"),
        ("f32", "maximum", "-inf"),
        ("f32", "maximum", "0.25"),
        ("f64", "minimum", "inf"),
        ("f16", "add", "0"),
        ("bf16", "add", "0"),
        ("f16", "maximum", "-0.5"),
        ("s32", "add", "0"),
        ("s32", "add", "5"),
        ("s32", "multiply", "1"),
        ("s64", "minimum", "3"),
        ("u8", "add", "250"),
        ("s8", "maximum", "-128"),
        ("u32", "xor", "7"),
        ("pred", "or", "false"),
        ("pred", "and", "true"),
        ("argmax", "argmax", "-inf"),
    ]);
    let rank = 1 + rng.below(4);
    let dim = rng.below(rank);
    let dims: Vec<i64> = (0..rank)
        .map(|d| match rng.below(4) {
            0 => rng.range(1, 3),
            1 if d == dim => rng.range(60, 200),
            1 => rng.range(60, 140),
            _ => rng.range(3, 17),
        })
        .collect();
    let mut dims = dims;
    dims[dim] = dims[dim].max(2);
    // At most about 40k elements (the evaluator reduces a whole window per element): the
    // largest other dimension halved until then.
    while dims.iter().product::<i64>() > 40_000 {
        let big = (0..rank)
            .filter(|&d| d != dim)
            .max_by_key(|&d| (dims[d], d))
            .expect("a rank above 1");
        dims[big] = (dims[big] / 2).max(1);
    }
    let n = dims[dim];
    let reverse = rng.below(2) == 0;
    let size = n + rng.range(0, 2);
    let win = window(&dims, dim, size, reverse);
    let x = shape(&mut rng, if ty == "argmax" { "f32" } else { ty }, &dims);
    let r = shape(&mut rng, if ty == "argmax" { "f32" } else { ty }, &dims);
    if ty == "argmax" {
        let ri = shape(&mut rng, "s32", &dims);
        let io = shape(&mut rng, "s32", &dims);
        return format!(
            "HloModule s\n{ARGMAX}ENTRY e {{\n  x = {x} parameter(0)\n  \
             io = {io} iota(), iota_dimension={dim}\n  iv = f32[] constant(-inf)\n  \
             ii = s32[] constant(0)\n  w = ({r}, {ri}) reduce-window(x, io, iv, ii), \
             window={win}, to_apply=argmax\n  v = {r} get-tuple-element(w), index=0\n  \
             i = {ri} get-tuple-element(w), index=1\n  ROOT t = ({r}, {ri}) tuple(v, i)\n}}\n"
        );
    }
    let o = shape(&mut rng, ty, &dims);
    let small_float = matches!(ty, "f16" | "bf16");
    // The input: a sum of signed floats cancels, and summing in another order (a suffix
    // scan walks from the end) then moves it past any relative tolerance: a float sum
    // reads magnitudes, a 16-bit one small integers (exact in any order), and a product
    // magnitudes near one.
    let input = match (ty, op) {
        _ if small_float && op == "add" => format!(
            "  x0 = {x} parameter(0)\n  c4 = {ty}[] constant(4)\n  \
             b4 = {x} broadcast(c4), dimensions={{}}\n  x1 = {x} multiply(x0, b4)\n  \
             x = {x} round-nearest-even(x1)"
        ),
        (_, "add") if ty.starts_with('f') => {
            format!("  x0 = {x} parameter(0)\n  x = {x} abs(x0)")
        }
        (_, "multiply") if ty.starts_with('f') => format!(
            "  x0 = {x} parameter(0)\n  c = {ty}[] constant(0.01)\n  \
             b = {x} broadcast(c), dimensions={{}}\n  x1 = {x} multiply(x0, b)\n  \
             one = {ty}[] constant(1)\n  bo = {x} broadcast(one), dimensions={{}}\n  \
             x = {x} add(x1, bo)"
        ),
        _ => format!("  x = {x} parameter(0)"),
    };
    let (consumer, backwards) = if ty == "pred" {
        ("not(r)", "not(rv)")
    } else {
        ("add(r, r)", "negate(rv)")
    };
    // Sometimes a consumer also reads the scan backwards along the scanned dimension.
    let tail = if rng.below(3) == 0 {
        format!(
            "  rv = {o} reverse(r), dimensions={{{dim}}}\n  v = {o} {consumer}\n  \
             u = {o} {backwards}\n  ROOT t = ({o}, {o}) tuple(v, u)\n"
        )
    } else {
        format!("  ROOT v = {o} {consumer}\n")
    };
    format!(
        "HloModule s\nred {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
         ROOT c = {ty}[] {op}(a, b)\n}}\nENTRY e {{\n{input}\n  i = {ty}[] constant({init})\n  \
         r = {r} reduce-window(x, i), window={win}, to_apply=red\n{tail}}}\n",
    )
}

#[test]
fn random_scans_match_the_reference_evaluator() {
    let seeds = gen::seeds(0..48);
    let count = seeds.end.saturating_sub(seeds.start) as usize;
    let ran = gen::check_all("hloc-cache-scans", seeds, |seed| Some(module(seed)));
    assert_eq!(ran, count);
}

/// The shapes of the programs, small: a row and a column cumsum of a matrix, a
/// vocabulary-sized row, an integer cumsum, and lane tiles with remainders (a column
/// cumsum over a prime extent of lanes, seven rows in tiles of four), each compared with
/// the evaluator.
#[test]
fn cumsums_of_every_orientation_match_the_reference_evaluator() {
    let cases = [
        ("f32", vec![64, 300], vec![1, 0], 1),
        ("f32", vec![300, 64], vec![1, 0], 0),
        ("f32", vec![3, 2000], vec![1, 0], 1),
        ("s32", vec![130, 70], vec![0, 1], 1),
        ("f32", vec![5, 40, 33], vec![1, 2, 0], 1),
        ("f64", vec![40, 521], vec![1, 0], 0),
        ("f32", vec![7, 300], vec![1, 0], 1),
    ];
    let options = gen::options("hloc-cache-scans");
    let mut failures = Vec::new();
    for (k, (ty, dims, layout, dim)) in cases.iter().enumerate() {
        let s = format!("{ty}[{}]{{{}}}", list(dims), list(layout));
        let win = window(dims, *dim, dims[*dim], false);
        let text = format!(
            "HloModule c\nadd {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  \
             ROOT c = {ty}[] add(a, b)\n}}\nENTRY e {{\n  x0 = {s} parameter(0)\n  \
             x = {s} abs(x0)\n  z = {ty}[] constant(0)\n  \
             ROOT r = {s} reduce-window(x, z), window={win}, to_apply=add\n}}\n"
        );
        let m = gen::parse(k as u64, &text);
        let args = gen::random_args(&m, k as u64);
        gen::check(k as u64, (&m, &text), &args, &options, &mut failures);
    }
    gen::assert_none(&failures);
}
