//! Compiled code (`runtime::compile`): each emitter on a representative shape, GEMM from
//! 64^3 to 1024^3, FFTs (RFFT 2-D, FFT of long rows, IRFFT, 3-D FFT) at user sizes, and
//! the compile time of the largest corpus module, cold (a new, empty object cache every
//! iteration, so the C compiler runs) and cached.
//!
//! Every module is compiled once, outside the timing, and checked against the reference
//! evaluator; the timed work is `Executable::run_prepared` on arguments prepared once (as
//! `hloc run --repeat` times it: output allocation included, argument conversion not).
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::SplitMix64;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{
    black_box, criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{Literal, Module};
use runtime::{CompileOptions, Executable};

/// The object cache of the run benches (kept between bench runs: compiling is not timed).
fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("compiled-bench-cache")
}

fn options() -> CompileOptions {
    CompileOptions {
        cache_dir: Some(cache_dir()),
        ..CompileOptions::default()
    }
}

/// The fixed-seed stream of every argument here (rand_xoshiro's SplitMix64).
struct SplitMix(SplitMix64);

impl SplitMix {
    fn new(seed: u64) -> SplitMix {
        SplitMix(SplitMix64::seed_from_u64(seed))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// A row-major f32 literal of `shape` (e.g. `f32[1024,1024]`), uniform in `[lo, lo + 1)`
/// for `lo = -0.5`, or in `[0, 1)` when `positive` (sums without cancellation, which the
/// reference comparison's relative tolerance cannot judge).
fn f32_literal(shape: &str, seed: u64, positive: bool) -> Literal {
    let shape = hlo::parse_shape(shape).expect("shape");
    let n = shape.element_count().expect("count") as usize;
    let mut rng = SplitMix::new(seed);
    let lo = if positive { 0.0 } else { -0.5 };
    let data = (0..n).map(|_| lo + rng.unit()).collect();
    Literal::Array(ArrayLiteral::new(shape, ArrayData::F32(data)).expect("fits"))
}

/// `n` s32 indices uniform in `[0, bound)`.
fn s32_indices(n: usize, bound: u64, seed: u64) -> Literal {
    let shape = hlo::parse_shape(&format!("s32[{n}]")).expect("shape");
    let mut rng = SplitMix::new(seed);
    let data = (0..n).map(|_| (rng.next() % bound) as i32).collect();
    Literal::Array(ArrayLiteral::new(shape, ArrayData::S32(data)).expect("fits"))
}

/// Parses, verifies and compiles `text`; runs it once on `args` and checks the outputs
/// against the reference evaluator.
fn compile_checked(text: &str, args: &[Literal]) -> (Module, Executable) {
    let module = hlo::parse_module(text).expect("bench module parses");
    hlo::verifier::verify(&module).expect("bench module verifies");
    let exe = runtime::compile(&module, &options()).expect("bench module compiles");
    let outs = exe.run(args).expect("bench module runs");
    if let Err(e) = runtime::check_reference(&module, args, &outs) {
        panic!("{}: {e}", module.name());
    }
    (module, exe)
}

/// Times `exe.run_prepared` on `args`, as `group/name` with `bytes` moved per run.
fn bench_run(c: &mut Criterion, name: &str, exe: &Executable, args: &[Literal], bytes: u64) {
    let prepared = exe.prepare(args).expect("arguments fit the parameters");
    let mut g = c.benchmark_group("emitters");
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function(name, |b| {
        b.iter(|| black_box(exe.run_prepared(black_box(&prepared)).expect("runs")))
    });
    g.finish();
}

const ADD: &str = "add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
";

const MAX: &str = "max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
";

fn elementwise(c: &mut Criterion) {
    let n = 1 << 20;
    let text = format!(
        "HloModule elementwise_1m, entry_computation_layout={{(f32[{n}]{{0}}, f32[{n}]{{0}})->f32[{n}]{{0}}}}

ENTRY main {{
  a = f32[{n}]{{0}} parameter(0)
  b = f32[{n}]{{0}} parameter(1)
  t = f32[{n}]{{0}} tanh(a)
  tb = f32[{n}]{{0}} multiply(t, b)
  aa = f32[{n}]{{0}} multiply(a, a)
  na = f32[{n}]{{0}} negate(aa)
  x = f32[{n}]{{0}} exponential(na)
  ROOT r = f32[{n}]{{0}} add(tb, x)
}}
"
    );
    let shape = format!("f32[{n}]");
    let args = [f32_literal(&shape, 1, false), f32_literal(&shape, 2, false)];
    let (_, exe) = compile_checked(&text, &args);
    bench_run(c, "elementwise_tanh_mul_exp_1M_f32", &exe, &args, 3 * 4 * n);
}

fn softmax(c: &mut Criterion) {
    let text = format!(
        "HloModule softmax_rows, entry_computation_layout={{(f32[1024,1024]{{1,0}})->f32[1024,1024]{{1,0}}}}

{MAX}
{ADD}
ENTRY main {{
  x = f32[1024,1024]{{1,0}} parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[1024]{{0}} reduce(x, ninf), dimensions={{1}}, to_apply=max_f32
  mb = f32[1024,1024]{{1,0}} broadcast(mx), dimensions={{0}}
  d = f32[1024,1024]{{1,0}} subtract(x, mb)
  e = f32[1024,1024]{{1,0}} exponential(d)
  zero = f32[] constant(0)
  s = f32[1024]{{0}} reduce(e, zero), dimensions={{1}}, to_apply=add_f32
  sb = f32[1024,1024]{{1,0}} broadcast(s), dimensions={{0}}
  ROOT r = f32[1024,1024]{{1,0}} divide(e, sb)
}}
"
    );
    let args = [f32_literal("f32[1024,1024]", 3, false)];
    let (_, exe) = compile_checked(&text, &args);
    bench_run(
        c,
        "softmax_rows_1024x1024_f32",
        &exe,
        &args,
        2 * 4 * 1024 * 1024,
    );
}

fn reductions(c: &mut Criterion) {
    for (dim, name) in [(0, "column"), (1, "row")] {
        let text = format!(
            "HloModule reduce_{name}, entry_computation_layout={{(f32[2048,2048]{{1,0}})->f32[2048]{{0}}}}

{ADD}
ENTRY main {{
  x = f32[2048,2048]{{1,0}} parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[2048]{{0}} reduce(x, zero), dimensions={{{dim}}}, to_apply=add_f32
}}
"
        );
        let args = [f32_literal("f32[2048,2048]", 4, true)];
        let (_, exe) = compile_checked(&text, &args);
        let bytes = 4 * (2048 * 2048 + 2048);
        bench_run(
            c,
            &format!("{name}_reduce_2048x2048_dim{dim}_f32"),
            &exe,
            &args,
            bytes,
        );
    }
}

/// The transpose module of an `n x m` matrix, both layouts row-major.
fn transpose_text(n: usize, m: usize) -> String {
    format!(
        "HloModule transpose_{n}x{m}, entry_computation_layout={{(f32[{n},{m}]{{1,0}})->f32[{m},{n}]{{1,0}}}}

ENTRY main {{
  x = f32[{n},{m}]{{1,0}} parameter(0)
  ROOT t = f32[{m},{n}]{{1,0}} transpose(x), dimensions={{1,0}}
}}
"
    )
}

/// Checks that the compiled transpose of an `n x m` matrix keeps its row-major result
/// layout (no pass turned it into a bitcast with a `{0,1}` layout), runs as one kernel,
/// and that its output is the input transposed, element for element.
fn check_transpose(exe: &Executable, arg: &Literal, n: usize, m: usize) {
    let root = exe.plan().module.entry().root_instr().shape().clone();
    let layout = root.layout().map(|l| l.minor_to_major.clone());
    assert_eq!(layout, Some(vec![1, 0]), "result layout of {root:?}");
    assert_eq!(exe.stats().kernels, 1, "{}", exe.plan().source);
    let outs = exe.run(std::slice::from_ref(arg)).expect("runs");
    let (Some(ArrayData::F32(x)), Some(ArrayData::F32(t))) = (
        arg.as_array().map(ArrayLiteral::data),
        outs[0].as_array().map(ArrayLiteral::data),
    ) else {
        panic!("f32 arrays");
    };
    for i in 0..n {
        for j in 0..m {
            assert_eq!(t[j * n + i].to_bits(), x[i * m + j].to_bits(), "({j}, {i})");
        }
    }
}

fn transpose(c: &mut Criterion) {
    let small = f32_literal("f32[3,5]", 5, false);
    let (_, exe) = compile_checked(&transpose_text(3, 5), std::slice::from_ref(&small));
    check_transpose(&exe, &small, 3, 5);
    let args = [f32_literal("f32[1024,1024]", 6, false)];
    let (_, exe) = compile_checked(&transpose_text(1024, 1024), &args);
    check_transpose(&exe, &args[0], 1024, 1024);
    bench_run(
        c,
        "transpose_1024x1024_f32",
        &exe,
        &args,
        2 * 4 * 1024 * 1024,
    );
}

fn gather(c: &mut Criterion) {
    let text = "HloModule embedding_gather, entry_computation_layout={(f32[4096,256]{1,0}, s32[1024]{0})->f32[1024,256]{1,0}}

ENTRY main {
  table = f32[4096,256]{1,0} parameter(0)
  ids = s32[1024]{0} parameter(1)
  ROOT g = f32[1024,256]{1,0} gather(table, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,256}
}
";
    let args = [
        f32_literal("f32[4096,256]", 7, false),
        s32_indices(1024, 4096, 8),
    ];
    let (_, exe) = compile_checked(text, &args);
    // Rows read and written, and the indices.
    let bytes = 2 * 4 * 1024 * 256 + 4 * 1024;
    bench_run(
        c,
        "gather_embedding_4096x256_by_1024_f32",
        &exe,
        &args,
        bytes,
    );
}

fn gemm(c: &mut Criterion) {
    let mut g = c.benchmark_group("gemm");
    for n in [64u64, 128, 256, 512, 1024] {
        let text = format!(
            "HloModule gemm_{n}, entry_computation_layout={{(f32[{n},{n}]{{1,0}}, f32[{n},{n}]{{1,0}})->f32[{n},{n}]{{1,0}}}}

ENTRY main {{
  a = f32[{n},{n}]{{1,0}} parameter(0)
  b = f32[{n},{n}]{{1,0}} parameter(1)
  ROOT d = f32[{n},{n}]{{1,0}} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"
        );
        let shape = format!("f32[{n},{n}]");
        let args = [
            f32_literal(&shape, 9, false),
            f32_literal(&shape, 10, false),
        ];
        let (_, exe) = compile_checked(&text, &args);
        let prepared = exe.prepare(&args).expect("arguments fit the parameters");
        if n >= 512 {
            g.sample_size(20);
        }
        g.throughput(Throughput::Elements(2 * n * n * n));
        g.bench_with_input(BenchmarkId::new("f32", n), &n, |b, _| {
            b.iter(|| black_box(exe.run_prepared(black_box(&prepared)).expect("runs")))
        });
    }
    g.finish();
}

/// HMC chains' leapfrog gradient (`/tmp/up11`'s `hmc_bayes_logreg_chains`, 8 chains of a
/// 64-feature logistic regression on 2048 rows): `X theta` (`[2048,64] x [64,8]`, the
/// thin kernel with a column-major rhs) and `g X` (`[8,2048] x [2048,64]`, the small-row
/// kernel). Each is 2^20 multiply-adds, just at backend-cpu's threshold for splitting a
/// product among the threads: on two threads the first gains (24 -> 17 us) and the second
/// loses (8 -> 11 us) to the pool's hand-off (`taskset`, quiet machine, session 56).
fn gemm_hmc(c: &mut Criterion) {
    let mut g = c.benchmark_group("gemm_hmc");
    let cases = [
        (
            "x_theta_2048x64x8",
            "f32[2048,64]",
            "f32[8,64]",
            "f32[2048,8]",
            1,
            1,
        ),
        (
            "g_x_8x2048x64",
            "f32[8,2048]",
            "f32[2048,64]",
            "f32[8,64]",
            1,
            0,
        ),
    ];
    for (name, a, b, d, lc, rc) in cases {
        let text = format!(
            "HloModule {name}\n\nENTRY main {{\n  a = {a}{{1,0}} parameter(0)\n  b = {b}{{1,0}} parameter(1)\n  ROOT d = {d}{{1,0}} dot(a, b), lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}\n}}\n"
        );
        let args = [f32_literal(a, 11, false), f32_literal(b, 12, false)];
        let (_, exe) = compile_checked(&text, &args);
        let prepared = exe.prepare(&args).expect("arguments fit the parameters");
        g.throughput(Throughput::Elements(2 * 2048 * 64 * 8));
        g.bench_function(name, |bench| {
            bench.iter(|| black_box(exe.run_prepared(black_box(&prepared)).expect("runs")))
        });
    }
    g.finish();
}

/// The largest `corpus/*/before_optimizations.hlo` (by size) and its name.
/// A c64 literal of `shape` (e.g. `c64[64,1024]`), both parts uniform in `[-0.5, 0.5)`.
fn c64_literal(shape: &str, seed: u64) -> Literal {
    let shape = hlo::parse_shape(shape).expect("shape");
    let n = shape.element_count().expect("count") as usize;
    let mut rng = SplitMix::new(seed);
    let data = (0..n)
        .map(|_| [rng.unit() - 0.5, rng.unit() - 0.5])
        .collect();
    Literal::Array(ArrayLiteral::new(shape, ArrayData::C64(data)).expect("fits"))
}

/// The components of a float or complex array literal, widened.
fn components(l: &Literal) -> Vec<f64> {
    match l.as_array().expect("an array").data() {
        ArrayData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        ArrayData::C64(v) => v.iter().flatten().map(|&x| f64::from(x)).collect(),
        _ => panic!("an f32 or c64 array"),
    }
}

/// FFTs (the library call, in the operand's precision) at the user programs' sizes of
/// benches/README.md's FFT section. An `f32` transform of this size differs from the
/// evaluator's `f64` one by rounding relative to the largest output, not element by
/// element, so each is checked by its largest error over its largest magnitude.
fn fft(c: &mut Criterion) {
    let cases = [
        (
            "rfft2_8x512x512_f32",
            "f32[8,512,512]",
            "c64[8,512,257]",
            "RFFT",
            "{512,512}",
        ),
        (
            "fft_64x65536_c64",
            "c64[64,65536]",
            "c64[64,65536]",
            "FFT",
            "{65536}",
        ),
        (
            "irfft_256x16384_c64",
            "c64[256,8193]",
            "f32[256,16384]",
            "IRFFT",
            "{16384}",
        ),
        (
            "fft3_8x64x64x64_c64",
            "c64[8,64,64,64]",
            "c64[8,64,64,64]",
            "FFT",
            "{64,64,64}",
        ),
    ];
    let mut g = c.benchmark_group("fft");
    g.sample_size(10);
    for (name, x, y, kind, lengths) in cases {
        let text = format!(
            "HloModule fft_{name}\n\nENTRY main {{\n  x = {x} parameter(0)\n  ROOT f = {y} fft(x), fft_type={kind}, fft_length={lengths}\n}}\n"
        );
        let arg = if x.starts_with("f32") {
            f32_literal(x, 11, false)
        } else {
            c64_literal(x, 11)
        };
        let args = [arg];
        let module = hlo::parse_module(&text).expect("bench module parses");
        let exe = runtime::compile(&module, &options()).expect("bench module compiles");
        let got = components(&exe.run(&args).expect("runs")[0]);
        let want = hlo_eval::evaluate(&module, &args).expect("the evaluator runs");
        let want = components(&want);
        let top = want.iter().fold(1e-30, |m: f64, w| m.max(w.abs()));
        let err = got
            .iter()
            .zip(&want)
            .fold(0.0, |m: f64, (g, w)| m.max((g - w).abs()));
        assert!(err <= 1e-5 * top, "{name}: error {err:e} over {top:e}");
        let prepared = exe.prepare(&args).expect("arguments fit the parameters");
        g.bench_function(name, |b| {
            b.iter(|| black_box(exe.run_prepared(black_box(&prepared)).expect("runs")))
        });
    }
    g.finish();
}

fn largest_corpus_module() -> (String, Module) {
    let (size, program) = testkit::corpus::programs()
        .into_iter()
        .map(|p| (std::fs::metadata(p.before()).map_or(0, |m| m.len()), p))
        .max_by_key(|(size, _)| *size)
        .expect("a corpus program");
    let text = std::fs::read_to_string(program.before()).expect("readable corpus module");
    let module = hlo::parse_module(&text).expect("corpus module parses");
    (format!("{}_{}KB", program.name, size / 1024), module)
}

fn compile(c: &mut Criterion) {
    let (name, module) = largest_corpus_module();
    let mut g = c.benchmark_group("compile");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.measurement_time(Duration::from_secs(10));
    // Cold: a new, empty cache directory per iteration, so every compile runs the C
    // compiler; creating and removing the directory is not timed.
    let fresh = AtomicUsize::new(0);
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compiled-bench-cold");
    g.bench_function(BenchmarkId::new("cold", &name), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = root.join(fresh.fetch_add(1, Ordering::Relaxed).to_string());
                let _ = std::fs::remove_dir_all(&dir);
                let options = CompileOptions {
                    cache_dir: Some(dir.clone()),
                    ..CompileOptions::default()
                };
                let start = Instant::now();
                let exe = runtime::compile(black_box(&module), &options).expect("compiles");
                total += start.elapsed();
                assert!(!exe.stats().cache_hit, "a cold compile hit the cache");
                drop(exe);
                let _ = std::fs::remove_dir_all(&dir);
            }
            total
        })
    });
    // Cached: the object is in the cache; passes, codegen and the lookup still run.
    let warm = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compiled-bench-warm");
    let options = CompileOptions {
        cache_dir: Some(warm),
        ..CompileOptions::default()
    };
    runtime::compile(&module, &options).expect("compiles");
    g.bench_function(BenchmarkId::new("cached", &name), |b| {
        b.iter(|| {
            let exe = runtime::compile(black_box(&module), &options).expect("compiles");
            assert!(exe.stats().cache_hit, "a cached compile missed the cache");
            exe
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    elementwise,
    softmax,
    reductions,
    transpose,
    gather,
    gemm,
    gemm_hmc,
    fft,
    compile
);
criterion_main!(benches);
