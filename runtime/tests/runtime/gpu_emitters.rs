//! The GPU emitters that replaced "one CUDA thread runs a CPU kernel's block" (issue 33):
//! variadic (argmax-style) row and column reductions through the row and column reduction
//! emitters, and scans and other reduce-windows through the loop emitter (a thread per
//! output element, its window folded in order). Random modules of each run on the CUDA
//! host emulation against the reference evaluator, in both thread orders (bit for bit the
//! same outputs); the plan (printed without NVRTC) shows which emitter each kernel got.

use hlo::Literal;
use runtime::CompileOptions;

use crate::gen::{self, list, shape, Rng};

/// JAX's argmax reducer (NaN first, ties to the lower index), over `f32` values and `s32`
/// indices.
const ARGMAX: &str = "argmax {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  \
    bv = f32[] parameter(2)\n  bi = s32[] parameter(3)\n  \
    gt = pred[] compare(av, bv), direction=GT\n  ne = pred[] compare(av, av), direction=NE\n  \
    pick = pred[] or(gt, ne)\n  v = f32[] select(pick, av, bv)\n  \
    eq = pred[] compare(av, bv), direction=EQ\n  lt = pred[] compare(ai, bi), direction=LT\n  \
    tie = pred[] and(eq, lt)\n  pick_i = pred[] or(pick, tie)\n  \
    i = s32[] select(pick_i, ai, bi)\n  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n";

/// JAX's argmin reducer over `f64` values and `s64` indices.
const ARGMIN: &str = "argmin {\n  av = f64[] parameter(0)\n  ai = s64[] parameter(1)\n  \
    bv = f64[] parameter(2)\n  bi = s64[] parameter(3)\n  \
    lt = pred[] compare(av, bv), direction=LT\n  ne = pred[] compare(av, av), direction=NE\n  \
    pick = pred[] or(lt, ne)\n  v = f64[] select(pick, av, bv)\n  \
    eq = pred[] compare(av, bv), direction=EQ\n  lti = pred[] compare(ai, bi), direction=LT\n  \
    tie = pred[] and(eq, lti)\n  pick_i = pred[] or(pick, tie)\n  \
    i = s64[] select(pick_i, ai, bi)\n  ROOT t = (f64[], s64[]) tuple(v, i)\n}\n";

/// Two independent reductions over one index space: a sum of `f32` and a maximum of
/// `s32`.
const SUM_MAX: &str = "summax {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n  \
    c = f32[] parameter(2)\n  d = s32[] parameter(3)\n  s = f32[] add(a, c)\n  \
    m = s32[] maximum(d, b)\n  ROOT t = (f32[], s32[]) tuple(s, m)\n}\n";

/// A random variadic reduce: an argmax, an argmin or a sum and max pair over random
/// dimensions (rows of a few elements to several thousand, so rows take lanes, a warp or
/// a block of warps, and columns take tiles with remainders), layouts and reduced sets,
/// its second result consumed elementwise in the same fusion.
fn variadic_module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let kind = rng.below(3);
    let (reducer, name, vt, it, vinit, iinit) = match kind {
        0 => (ARGMAX, "argmax", "f32", "s32", "-inf", "0"),
        1 => (ARGMIN, "argmin", "f64", "s64", "inf", "0"),
        _ => (SUM_MAX, "summax", "f32", "s32", "0", "-2147483648"),
    };
    let rank = 1 + rng.below(3);
    let long = rng.below(5) == 0;
    let mut dims: Vec<i64> = (0..rank)
        .map(|_| match rng.below(4) {
            0 => rng.range(1, 3),
            1 => rng.range(30, 70),
            2 => rng.range(200, 300),
            _ => rng.range(3, 17),
        })
        .collect();
    if long {
        // A few long rows (a block of warps each) or a long column.
        let d = rng.below(rank);
        dims[d] = rng.range(4100, 4400);
        for (i, x) in dims.iter_mut().enumerate() {
            if i != d {
                *x = (*x).min(5);
            }
        }
    }
    let mut reduced: Vec<usize> = (0..rank).filter(|_| rng.below(2) == 0).collect();
    if reduced.is_empty() {
        reduced.push(rng.below(rank));
    }
    let kept: Vec<i64> = (0..rank)
        .filter(|d| !reduced.contains(d))
        .map(|d| dims[d])
        .collect();
    let axis = *rng.pick(&reduced);
    let x = shape(&mut rng, vt, &dims);
    let io = shape(&mut rng, it, &dims);
    let v = shape(&mut rng, vt, &kept);
    let i = shape(&mut rng, it, &kept);
    let o = shape(&mut rng, it, &kept);
    // The sum reads magnitudes (a sum of signed values cancels past any relative
    // tolerance when reassociated); the index is an iota, or a parameter for the sum.
    let (values, index) = if kind == 2 {
        (
            format!("  x0 = {x} parameter(0)\n  x = {x} abs(x0)"),
            format!("  io = {io} parameter(1)"),
        )
    } else {
        (
            format!("  x = {x} parameter(0)"),
            format!("  io = {io} iota(), iota_dimension={axis}"),
        )
    };
    format!(
        "HloModule v\n{reducer}\nENTRY e {{\n{values}\n{index}\n  \
         vi = {vt}[] constant({vinit})\n  ii = {it}[] constant({iinit})\n  \
         r = ({v}, {i}) reduce(x, io, vi, ii), dimensions={{{}}}, to_apply={name}\n  \
         rv = {v} get-tuple-element(r), index=0\n  ri = {i} get-tuple-element(r), index=1\n  \
         o = {o} add(ri, ri)\n  ROOT t = ({v}, {o}) tuple(rv, o)\n}}\n",
        list(&reduced),
    )
}

/// Options for the CUDA host emulation, objects cached under `cache`.
fn cuda_host(cache: &str) -> CompileOptions {
    CompileOptions {
        cuda_host: true,
        ..gen::options(cache)
    }
}

/// Compiles `m` for the CUDA host emulation, runs it in both thread orders and checks the
/// forward run against the evaluator and the reverse run bit for bit against the forward
/// one; a failure is pushed onto `failures` with the module.
fn check_both_orders(
    seed: u64,
    (m, text): (&hlo::Module, &str),
    args: &[Literal],
    options: &CompileOptions,
    failures: &mut Vec<String>,
) {
    let result = runtime::compile(m, options)
        .map_err(|e| e.to_string())
        .and_then(|exe| {
            std::env::set_var("HLOC_CUDA_HOST_ORDER", "forward");
            let forward = exe.run(args).map_err(|e| e.to_string())?;
            runtime::check_reference(m, args, &forward)?;
            std::env::set_var("HLOC_CUDA_HOST_ORDER", "reverse");
            let reverse = exe.run(args).map_err(|e| format!("reverse run: {e}"));
            std::env::remove_var("HLOC_CUDA_HOST_ORDER");
            if format!("{:?}", reverse?) != format!("{forward:?}") {
                return Err("the threads' order changes the outputs".into());
            }
            Ok(())
        });
    if let Err(e) = result {
        failures.push(format!("seed {seed}: {e}\n{text}"));
    }
}

/// Runs `module(seed)` for every seed on the CUDA host in both orders.
fn check_all_both_orders(
    cache: &str,
    seeds: std::ops::Range<u64>,
    module: impl Fn(u64) -> Option<String>,
) -> usize {
    let options = cuda_host(cache);
    let mut failures = Vec::new();
    let mut ran = 0;
    for seed in seeds {
        let Some(text) = module(seed) else { continue };
        let m = gen::parse(seed, &text);
        ran += 1;
        let args = gen::random_args(&m, seed);
        check_both_orders(seed, (&m, &text), &args, &options, &mut failures);
    }
    gen::assert_none(&failures);
    ran
}

/// The leading comment lines of every kernel of `text`'s GPU plan (h200), which name the
/// emitter and its launch (no NVRTC needed).
fn kernel_titles(text: &str) -> Vec<String> {
    let module = hlo::parse_module(text).unwrap();
    let options = CompileOptions {
        gpu: Some("h200".into()),
        ..CompileOptions::default()
    };
    let plan = runtime::plan(&module, &options).unwrap();
    plan.program
        .kernels
        .iter()
        .map(|k| {
            k.body
                .iter()
                .map_while(|s| match s {
                    codegen::kir::Stmt::Comment(c) => Some(c.clone()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

#[test]
fn random_variadic_reductions_on_the_cuda_host_match_the_reference_in_both_orders() {
    let ran = check_all_both_orders("hloc-cache-gpu-variadic", gen::seeds(0..48), |seed| {
        Some(variadic_module(seed))
    });
    assert_eq!(ran, gen::seeds(0..48).count());
}

#[test]
fn variadic_rows_and_columns_take_the_reduction_emitters() {
    let row = format!(
        "HloModule a\n{ARGMAX}\nENTRY e {{\n  x = f32[64,1000] parameter(0)\n  \
         io = s32[64,1000] iota(), iota_dimension=1\n  vi = f32[] constant(-inf)\n  \
         ii = s32[] constant(0)\n  \
         ROOT r = (f32[64], s32[64]) reduce(x, io, vi, ii), dimensions={{1}}, to_apply=argmax\n}}\n"
    );
    let titles = kernel_titles(&row);
    assert_eq!(titles.len(), 1, "{titles:?}");
    assert!(
        titles[0].contains("row-reduction (32 lanes/row) emitter: blocks=16 threads=128"),
        "{}",
        titles[0]
    );
    let column = row
        .replace("dimensions={1}", "dimensions={0}")
        .replace("(f32[64], s32[64])", "(f32[1000], s32[1000])");
    let titles = kernel_titles(&column);
    assert_eq!(titles.len(), 1, "{titles:?}");
    assert!(
        titles[0]
            .contains("column-reduction (32 columns x 8 rows/tile) emitter: blocks=32 threads=256"),
        "{}",
        titles[0]
    );
    // A reducer computing a value that is no pick nor associative op (a difference) keeps
    // the loop emitter's in-order fold.
    let mixed = row.replace(
        "v = f32[] select(pick, av, bv)",
        "v = f32[] subtract(av, bv)",
    );
    let titles = kernel_titles(&mixed);
    assert!(titles[0].contains("loop emitter"), "{}", titles[0]);
}

#[test]
fn scans_and_windows_take_the_loop_emitter() {
    let text = "HloModule s\nadd {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  \
        ROOT c = s32[] add(a, b)\n}\nENTRY e {\n  x = s32[8,300] parameter(0)\n  \
        z = s32[] constant(0)\n  ROOT w = s32[8,300] reduce-window(x, z), \
        window={size=1x300 pad=0_0x299_0}, to_apply=add\n}\n";
    // The scan (or the blocked scan a pass may make of it) runs on the loop emitter: no
    // kernel is left without a thread map.
    let titles = kernel_titles(text);
    assert!(!titles.is_empty());
    for t in &titles {
        assert!(t.contains("thread map:"), "{titles:?}");
        assert!(!t.contains("no thread map"), "{titles:?}");
    }
}

#[test]
fn random_scans_on_the_cuda_host_match_the_reference_in_both_orders() {
    check_all_both_orders("hloc-cache-gpu-scans", gen::seeds(0..40), |seed| {
        Some(crate::random_scans::module(seed))
    });
}

#[test]
fn random_windows_on_the_cuda_host_match_the_reference_in_both_orders() {
    let ran = check_all_both_orders(
        "hloc-cache-gpu-windows",
        gen::seeds(0..40),
        crate::random_windows::module,
    );
    assert!(ran >= 20, "only {ran} windows drawn");
}
