//! Element semantics of compiled kernels against the reference evaluator on edge values:
//! HLO's integer rules (wrapping, division by zero, `MIN / -1`, shifts past the width,
//! negative powers), NaN-propagating min/max, the float total order, conversions
//! (saturating float to int, 16-bit float rounding), plus the object cache, a missing C
//! compiler and the while-loop limit.

use std::path::{Path, PathBuf};

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};
use runtime::{CompileOptions, RuntimeError};

fn cache(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn options() -> CompileOptions {
    CompileOptions {
        cache_dir: Some(cache("hloc-cache")),
        ..CompileOptions::default()
    }
}

fn lit(ty: ElementType, data: ArrayData) -> Literal {
    let n = data.len() as i64;
    Literal::Array(ArrayLiteral::new(Shape::array(ty, vec![n]), data).expect("literal"))
}

/// Compiles `text`, runs it on `args`, and checks every output against the evaluator.
fn check(text: &str, args: &[Literal]) {
    let m = hlo::parse_module(text).expect("parse");
    let exe = runtime::compile(&m, &options()).expect("compile");
    let outs = exe.run(args).expect("run");
    if let Err(e) = runtime::check_reference(&m, args, &outs) {
        panic!("{e}\n{}", exe.plan().source);
    }
}

const INT_BINARY: &str = r#"
HloModule m
ENTRY e {
  a = s32[8] parameter(0)
  b = s32[8] parameter(1)
  d = s32[8] divide(a, b)
  r = s32[8] remainder(a, b)
  l = s32[8] shift-left(a, b)
  sl = s32[8] shift-right-logical(a, b)
  sa = s32[8] shift-right-arithmetic(a, b)
  p = s32[8] power(a, b)
  m = s32[8] multiply(a, b)
  ad = s32[8] add(a, b)
  ROOT t = (s32[8], s32[8], s32[8], s32[8], s32[8], s32[8], s32[8], s32[8]) tuple(d, r, l, sl, sa, p, m, ad)
}"#;

#[test]
fn signed_integer_rules() {
    let a = vec![i32::MIN, 7, -7, 5, -1, i32::MAX, 1, 3];
    let b = vec![-1, 0, 2, 32, 31, 2, -3, 33];
    check(
        INT_BINARY,
        &[
            lit(ElementType::S32, ArrayData::S32(a)),
            lit(ElementType::S32, ArrayData::S32(b)),
        ],
    );
}

#[test]
fn unsigned_and_small_integer_rules() {
    let text = r#"
HloModule m
ENTRY e {
  a = u8[6] parameter(0)
  b = u8[6] parameter(1)
  d = u8[6] divide(a, b)
  r = u8[6] remainder(a, b)
  sa = u8[6] shift-right-arithmetic(a, b)
  m = u8[6] multiply(a, b)
  c = u8[6] count-leading-zeros(a)
  p = u8[6] popcnt(a)
  n = u8[6] negate(a)
  ROOT t = (u8[6], u8[6], u8[6], u8[6], u8[6], u8[6], u8[6]) tuple(d, r, sa, m, c, p, n)
}"#;
    check(
        text,
        &[
            lit(
                ElementType::U8,
                ArrayData::U8(vec![200, 7, 255, 0, 129, 16]),
            ),
            lit(ElementType::U8, ArrayData::U8(vec![0, 2, 1, 3, 7, 8])),
        ],
    );
}

#[test]
fn float_min_max_compare_and_rounding() {
    let text = r#"
HloModule m
ENTRY e {
  a = f32[7] parameter(0)
  b = f32[7] parameter(1)
  mx = f32[7] maximum(a, b)
  mn = f32[7] minimum(a, b)
  lt = pred[7] compare(a, b), direction=LT, type=TOTALORDER
  eq = pred[7] compare(a, b), direction=EQ
  s = f32[7] sign(a)
  ra = f32[7] round-nearest-afz(a)
  re = f32[7] round-nearest-even(a)
  ROOT t = (f32[7], f32[7], pred[7], pred[7], f32[7], f32[7], f32[7]) tuple(mx, mn, lt, eq, s, ra, re)
}"#;
    let a = vec![f32::NAN, 1.0, -0.0, 2.5, -2.5, f32::INFINITY, 0.5];
    let b = vec![1.0, f32::NAN, 0.0, 2.5, -3.0, f32::NEG_INFINITY, -0.0];
    check(
        text,
        &[
            lit(ElementType::F32, ArrayData::F32(a)),
            lit(ElementType::F32, ArrayData::F32(b)),
        ],
    );
}

#[test]
fn conversions_saturate_and_round() {
    let text = r#"
HloModule m
ENTRY e {
  a = f32[8] parameter(0)
  i = s32[8] convert(a)
  u = u8[8] convert(a)
  h = f16[8] convert(a)
  bf = bf16[8] convert(a)
  hb = f32[8] convert(h)
  p = pred[8] convert(a)
  ROOT t = (s32[8], u8[8], f16[8], bf16[8], f32[8], pred[8]) tuple(i, u, h, bf, hb, p)
}"#;
    let a = vec![
        f32::NAN,
        3e9,
        -3e9,
        -1.7,
        255.9,
        65520.0,
        1e-6,
        f32::NEG_INFINITY,
    ];
    check(text, &[lit(ElementType::F32, ArrayData::F32(a))]);
}

#[test]
fn half_precision_arithmetic() {
    let text = r#"
HloModule m
ENTRY e {
  a = f16[4] parameter(0)
  b = bf16[4] parameter(1)
  x = f16[4] multiply(a, a)
  y = bf16[4] exponential(b)
  ROOT t = (f16[4], bf16[4]) tuple(x, y)
}"#;
    // f16: 1.5, -2, 65504 (max), a subnormal; bf16: 1, -1, 0.5, 0.
    check(
        text,
        &[
            lit(
                ElementType::F16,
                ArrayData::Bits16(vec![0x3e00, 0xc000, 0x7bff, 0x0003]),
            ),
            lit(
                ElementType::BF16,
                ArrayData::Bits16(vec![0x3f80, 0xbf80, 0x3f00, 0x0000]),
            ),
        ],
    );
}

const NEGATE: &str =
    "HloModule cache_test\nENTRY e {\n  p = f32[3] parameter(0)\n  ROOT n = f32[3] negate(p)\n}";

#[test]
fn cache_hits_and_rebuilds_corrupt_entries() {
    let dir = cache("hloc-cache-corrupt");
    let _ = std::fs::remove_dir_all(&dir);
    let opts = CompileOptions {
        cache_dir: Some(dir.clone()),
        ..CompileOptions::default()
    };
    let m = hlo::parse_module(NEGATE).expect("parse");
    let arg = [lit(ElementType::F32, ArrayData::F32(vec![1.0, -2.0, 0.5]))];
    let first = runtime::compile(&m, &opts).expect("compile");
    assert!(!first.stats().cache_hit);
    let second = runtime::compile(&m, &opts).expect("compile");
    assert!(second.stats().cache_hit);
    drop((first, second));
    // Corrupt every cached object: the next compile must rebuild, not trust it.
    for e in std::fs::read_dir(&dir).expect("cache dir").flatten() {
        if e.path().extension().is_some_and(|x| x == "so") {
            std::fs::write(e.path(), b"not an object").expect("corrupt");
        }
    }
    let third = runtime::compile(&m, &opts).expect("compile after corruption");
    assert!(!third.stats().cache_hit);
    let out = third.run(&arg).expect("run");
    runtime::check_reference(&m, &arg, &out).expect("matches");
}

#[test]
fn time_passes_records_every_stage_in_order() {
    let dir = cache("hloc-cache-time-passes");
    let _ = std::fs::remove_dir_all(&dir);
    let m = hlo::parse_module(NEGATE).expect("parse");
    let plain = CompileOptions {
        cache_dir: Some(dir.clone()),
        ..CompileOptions::default()
    };
    let timed = CompileOptions {
        time_passes: true,
        ..plain.clone()
    };
    let names = |exe: &runtime::Executable| -> Vec<String> {
        exe.timings().iter().map(|(n, _)| n.clone()).collect()
    };
    let cold = runtime::compile(&m, &timed).expect("compile");
    let cold_names = names(&cold);
    let passes = cold_names.iter().take_while(|n| n.starts_with("pass "));
    assert!(passes.count() > 3, "{cold_names:?}");
    let at = |name: &str| cold_names.iter().position(|n| n == name);
    let order = [
        "pass call-inliner",
        "pass algsimp",
        "pass dce",
        "fusion priority-fusion",
        "fusion dce",
        "codegen",
        "print-c",
        "cache-lookup",
        "cc",
        "load",
        "constants",
    ];
    let positions: Vec<Option<usize>> = order.iter().map(|n| at(n)).collect();
    assert!(
        positions.iter().all(Option::is_some) && positions.windows(2).all(|w| w[0] < w[1]),
        "stages out of order: {cold_names:?}"
    );
    assert_eq!(cold_names.last().map(String::as_str), Some("constants"));
    // A cache hit has no `cc` stage; without the option nothing is recorded.
    let warm = runtime::compile(&m, &timed).expect("compile");
    assert!(warm.stats().cache_hit);
    let warm_names = names(&warm);
    let without_cc: Vec<&String> = cold_names.iter().filter(|n| *n != "cc").collect();
    assert_eq!(warm_names.iter().collect::<Vec<_>>(), without_cc);
    let untimed = runtime::compile(&m, &plain).expect("compile");
    assert!(untimed.timings().is_empty());
    assert!(untimed.stats().timings.is_empty());
    assert_eq!(untimed.stats().to_text().lines().count(), 7);
}

#[test]
fn a_missing_compiler_is_a_clear_error() {
    let opts = CompileOptions {
        cache_dir: Some(cache("hloc-cache-nocc")),
        compiler: Some("/nonexistent/hloc-test-cc".into()),
        ..CompileOptions::default()
    };
    let m = hlo::parse_module(NEGATE).expect("parse");
    match runtime::compile(&m, &opts) {
        Err(e @ RuntimeError::Backend(runtime::BackendError::NoCompiler { .. })) => {
            assert!(e.to_string().contains("--backend reference"), "{e}")
        }
        other => panic!("expected NoCompiler, got {other:?}"),
    }
}

/// Unfused (the path a module takes when its fusions need an emitter that is missing), an
/// elementwise kernel over a column reduction's result reads that result from its buffer:
/// it does not recompute the reduction from operands it has no buffer for.
#[test]
fn an_unfused_consumer_of_a_column_reduction_reads_its_buffer() {
    let text = "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  x = f32[8,16] parameter(0)\n  p = f32[8,32] parameter(1)\n  c = f32[] constant(0)\n  r = f32[32] reduce(p, c), dimensions={0}, to_apply=add\n  k = f32[] constant(0.05)\n  b = f32[32] broadcast(k), dimensions={}\n  m = f32[32] multiply(r, b)\n  ROOT t = (f32[32], f32[8,16]) tuple(m, x)\n}";
    let m = hlo::parse_module(text).expect("parse");
    let opts = CompileOptions {
        fuse: false,
        ..options()
    };
    let exe = runtime::compile(&m, &opts).expect("compile");
    let args = random_args(&m);
    let outs = exe.run(&args).expect("run");
    runtime::check_reference(&m, &args, &outs).expect("matches the evaluator");
}

/// Multi-output fusions whose outputs differ in shape, small (one block, nests in turn,
/// later nests reading earlier outputs) and large (blocks dealt out to the shapes, split
/// across threads), match the evaluator.
#[test]
fn multi_output_fusions_of_several_shapes_match_the_evaluator() {
    for (rows, cols, n) in [(6, 10, 7), (64, 300, 3), (1, 20000, 5)] {
        let text = format!(
            "HloModule m\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}}\nfused {{\n  p = f32[{rows},{cols}] parameter(0)\n  q = f32[{n}] parameter(1)\n  z = f32[] constant(0)\n  e = f32[{rows},{cols}] exponential(p)\n  s = f32[{cols}] reduce(e, z), dimensions={{0}}, to_apply=add\n  r = f32[{rows}] reduce(e, z), dimensions={{1}}, to_apply=add\n  n = f32[{n}] negate(q)\n  ROOT t = (f32[{cols}], f32[{n}], f32[{rows},{cols}], f32[{rows}]) tuple(s, n, e, r)\n}}\nENTRY e {{\n  p0 = f32[{rows},{cols}] parameter(0)\n  p1 = f32[{n}] parameter(1)\n  ROOT f = (f32[{cols}], f32[{n}], f32[{rows},{cols}], f32[{rows}]) fusion(p0, p1), kind=kLoop, calls=fused\n}}"
        );
        let m = hlo::parse_module(&text).expect("parse");
        let opts = CompileOptions {
            threads: Some(2),
            ..options()
        };
        let exe = runtime::compile(&m, &opts).expect("compile");
        assert_eq!(exe.stats().kernels, 1, "{}", exe.plan().source);
        let args = random_args(&m);
        let outs = exe.run(&args).expect("run");
        runtime::check_reference(&m, &args, &outs)
            .unwrap_or_else(|e| panic!("{e}\n{}", exe.plan().source));
    }
}

/// Output fusions handed to hloc (a dot and its epilogue in one fusion) run their dot as a
/// library GEMM and the epilogue as a kernel over its product; they match the evaluator.
#[test]
fn output_fusions_run_their_dot_as_a_gemm() {
    for (m, k, n, ty) in [(256, 128, 96, "f32"), (64, 70, 128, "f64")] {
        let text = format!(
            "HloModule m\nfused {{\n  a = {ty}[{m},{k}] parameter(0)\n  b = {ty}[{k},{n}] parameter(1)\n  c = {ty}[{n}] parameter(2)\n  d = {ty}[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n  cb = {ty}[{m},{n}] broadcast(c), dimensions={{1}}\n  s = {ty}[{m},{n}] add(d, cb)\n  ROOT t = {ty}[{m},{n}] tanh(s)\n}}\nENTRY e {{\n  p0 = {ty}[{m},{k}] parameter(0)\n  p1 = {ty}[{k},{n}] parameter(1)\n  p2 = {ty}[{n}] parameter(2)\n  ROOT f = {ty}[{m},{n}] fusion(p0, p1, p2), kind=kOutput, calls=fused\n}}"
        );
        let module = hlo::parse_module(&text).expect("parse");
        let exe = runtime::compile(&module, &options()).expect("compile");
        assert_eq!(
            (exe.stats().library_calls, exe.stats().kernels),
            (1, 1),
            "{text}"
        );
        let args = random_args(&module);
        let outs = exe.run(&args).expect("run");
        runtime::check_reference(&module, &args, &outs).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
}

/// A module of library calls only compiles no C: it runs without a C compiler.
#[test]
fn a_module_without_kernels_needs_no_compiler() {
    let opts = CompileOptions {
        cache_dir: Some(cache("hloc-cache-nokernels")),
        compiler: Some("/nonexistent/hloc-test-cc".into()),
        ..CompileOptions::default()
    };
    let text = "HloModule m\nENTRY e {\n  a = f32[16,32] parameter(0)\n  b = f32[32,8] parameter(1)\n  ROOT d = f32[16,8] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}";
    let m = hlo::parse_module(text).expect("parse");
    let exe = runtime::compile(&m, &opts).expect("compile");
    assert_eq!(
        (exe.stats().kernels, exe.stats().library_calls),
        (0, 1),
        "{}",
        exe.plan().source
    );
    let args = random_args(&m);
    let outs = exe.run(&args).expect("run");
    runtime::check_reference(&m, &args, &outs).expect("matches the evaluator");
}

#[test]
fn while_loops_stop_at_the_iteration_limit() {
    let text = r#"
HloModule m
cond {
  p = s32[] parameter(0)
  z = s32[] constant(0)
  ROOT ge = pred[] compare(p, z), direction=GE
}
body {
  p = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT a = s32[] add(p, one)
}
ENTRY e {
  x = s32[] parameter(0)
  ROOT w = s32[] while(x), condition=cond, body=body
}"#;
    let m = hlo::parse_module(text).expect("parse");
    let opts = CompileOptions {
        max_while_iterations: 10,
        ..options()
    };
    let exe = runtime::compile(&m, &opts).expect("compile");
    let scalar = |v: i32| {
        Literal::Array(
            ArrayLiteral::new(Shape::scalar(ElementType::S32), ArrayData::S32(vec![v]))
                .expect("literal"),
        )
    };
    assert!(matches!(
        exe.run(&[scalar(0)]),
        Err(RuntimeError::Backend(runtime::BackendError::LoopLimit {
            limit: 10,
            ..
        }))
    ));
    let out = exe.run(&[scalar(-5)]).expect("terminates");
    runtime::check_reference(&m, &[scalar(-5)], &out).expect("matches");
}

#[test]
fn huge_shapes_are_refused_before_allocating() {
    let text = "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT b = f32[65536,65536] broadcast(p), dimensions={}\n}";
    let m = hlo::parse_module(text).expect("parse");
    assert!(matches!(
        runtime::compile(&m, &options()),
        Err(RuntimeError::TooLarge { .. })
    ));
}

fn random_args(m: &hlo::Module) -> Vec<Literal> {
    let entry = m.entry();
    (0..entry.parameters().len())
        .map(|n| {
            let id = entry.parameter(n).expect("parameter");
            hlo_eval::random::random_literal(entry.instr(id).shape(), 3, n as u64, 1 << 20)
                .expect("random input")
        })
        .collect()
}

#[test]
fn library_gemms_match_on_strided_layouts() {
    for text in [
        // Batched, the rhs column-major within each batch, the result batch-minor.
        "HloModule m\nENTRY e {\n  a = f64[3,4,5]{2,1,0} parameter(0)\n  b = f64[3,6,5]{1,2,0} parameter(1)\n  ROOT d = f64[3,4,6]{0,2,1} dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}\n}",
        // Matrix-vector: no free rhs dimension.
        "HloModule m\nENTRY e {\n  a = f32[7,9]{0,1} parameter(0)\n  b = f32[9]{0} parameter(1)\n  ROOT d = f32[7]{0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
        // An empty contraction gives zeros.
        "HloModule m\nENTRY e {\n  a = f32[2,0] parameter(0)\n  b = f32[0,3] parameter(1)\n  ROOT d = f32[2,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
    ] {
        // Without the passes, which would fold the empty contraction away.
        check_library_gemm(text, None);
    }
}

/// Compiles `text` without the passes (on `threads` threads if given): one library GEMM,
/// matching the evaluator.
fn check_library_gemm(text: &str, threads: Option<usize>) {
    let m = hlo::parse_module(text).expect("parse");
    let opts = CompileOptions {
        run_passes: false,
        threads,
        ..options()
    };
    let exe = runtime::compile(&m, &opts).expect("compile");
    assert_eq!(exe.stats().library_calls, 1, "{text}");
    let args = random_args(&m);
    let outs = exe.run(&args).expect("run");
    runtime::check_reference(&m, &args, &outs).unwrap_or_else(|e| panic!("{e}\n{text}"));
}

#[test]
fn width_changing_bitcast_convert_reads_the_same_bytes() {
    let text = "HloModule m\nENTRY e {\n  p = u32[3,2]{1,0} parameter(0)\n  w = u64[3]{0} bitcast-convert(p)\n  ROOT n = u64[3]{0} not(w)\n}";
    let m = hlo::parse_module(text).expect("parse");
    let exe = runtime::compile(&m, &options()).expect("compile");
    let args = random_args(&m);
    let outs = exe.run(&args).expect("run");
    runtime::check_reference(&m, &args, &outs).expect("matches");
}

/// Width-changing bitcast-converts inside one (given) fusion: narrow to wide through a
/// reshape, wide to narrow, then a same-width float reinterpretation, computed
/// elementally. (The fusion passes themselves leave width-changing ones unfused, where
/// they are free aliases; a module may still arrive fused.)
const FUSED_REINTERPRETS: &str = r#"
HloModule m
fused {
  p = u32[3,4]{1,0} parameter(0)
  r = u32[6,2]{1,0} reshape(p)
  w = u64[6]{0} bitcast-convert(r)
  one = u64[] constant(1)
  b = u64[6]{0} broadcast(one), dimensions={}
  a = u64[6]{0} add(w, b)
  n = u16[6,4]{1,0} bitcast-convert(a)
  h = f16[6,4]{1,0} bitcast-convert(n)
  f = f32[6,4]{1,0} convert(h)
  ROOT x = f32[3,8]{1,0} reshape(f)
}
ENTRY e {
  p0 = u32[3,4]{1,0} parameter(0)
  ROOT k = f32[3,8]{1,0} fusion(p0), kind=kLoop, calls=fused
}"#;

#[test]
fn width_changing_bitcast_converts_fuse() {
    let m = hlo::parse_module(FUSED_REINTERPRETS).expect("parse");
    let exe = runtime::compile(&m, &options()).expect("compile");
    // The fusion is one kernel (no unfused fallback).
    assert_eq!(exe.stats().kernels, 1, "{:?}", exe.stats());
    let args = random_args(&m);
    let outs = exe.run(&args).expect("run");
    runtime::check_reference(&m, &args, &outs).expect("matches");
}

/// A loop whose body returns its state permuted (and one element passed through): the
/// state copies must read every result before writing any.
const ROTATING_LOOP: &str = r#"
HloModule m
cond {
  s = (s32[], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[4] get-tuple-element(s), index=1
  b = f32[4] get-tuple-element(s), index=2
  c = f32[4] get-tuple-element(s), index=3
  one = s32[] constant(1)
  j = s32[] add(i, one)
  two = f32[] constant(2)
  t = f32[4] broadcast(two), dimensions={}
  ct = f32[4] multiply(c, t)
  ROOT r = (s32[], f32[4], f32[4], f32[4]) tuple(j, b, ct, a)
}
ENTRY e {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  c = f32[4] parameter(2)
  z = s32[] constant(0)
  init = (s32[], f32[4], f32[4], f32[4]) tuple(z, a, b, c)
  ROOT w = (s32[], f32[4], f32[4], f32[4]) while(init), condition=cond, body=body
}"#;

#[test]
fn while_state_rotates_through_its_copies() {
    let f = |v: [f32; 4]| lit(ElementType::F32, ArrayData::F32(v.to_vec()));
    check(
        ROTATING_LOOP,
        &[
            f([1.0, 2.0, 3.0, 4.0]),
            f([10.0, 20.0, 30.0, 40.0]),
            f([100.0, 200.0, 300.0, 400.0]),
        ],
    );
}

/// A loop of small kernels and a GEMM: the runtime binds it once per execution (a tight
/// loop of calls) unless profiling, which takes the general per-thunk path.
const SMALL_STEP_LOOP: &str = r#"
HloModule m
cond {
  p = (s32[], f32[6,6], f32[6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(7)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[6,6], f32[6]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[6,6] get-tuple-element(p), index=1
  v = f32[6] get-tuple-element(p), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  d = f32[6] dot(a, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[6] tanh(d)
  ROOT r = (s32[], f32[6,6], f32[6]) tuple(j, a, t)
}
ENTRY e {
  a = f32[6,6] parameter(0)
  v = f32[6] parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[6,6], f32[6]) tuple(z, a, v)
  ROOT w = (s32[], f32[6,6], f32[6]) while(init), condition=cond, body=body
}"#;

#[test]
fn bound_loops_match_the_general_path_bit_for_bit() {
    // A GEMM in the body; state that rotates (staged through the loop's scratch).
    for text in [SMALL_STEP_LOOP, ROTATING_LOOP] {
        let m = hlo::parse_module(text).expect("parse");
        let exe = runtime::compile(&m, &options()).expect("compile");
        if text == SMALL_STEP_LOOP {
            assert!(
                exe.stats().library_calls > 0,
                "the body's dot is a library GEMM:\n{}",
                exe.plan().source
            );
        }
        let args = random_args(&m);
        let bound = exe.run(&args).expect("run bound");
        runtime::check_reference(&m, &args, &bound).expect("matches the evaluator");
        exe.set_profiling(true);
        let general = exe.run(&args).expect("run profiled");
        assert!(exe.take_profile().is_some());
        assert_eq!(bound, general, "bound and general paths differ");
    }
}

#[test]
fn gemms_split_across_threads_match_on_strided_layouts() {
    for text in [
        // Wide: split by columns; the rhs and the result column-major.
        "HloModule m\nENTRY e {\n  a = f32[40,64]{1,0} parameter(0)\n  b = f32[64,600]{0,1} parameter(1)\n  ROOT d = f32[40,600]{0,1} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
        // Wide and row-major, in f64.
        "HloModule m\nENTRY e {\n  a = f64[33,70] parameter(0)\n  b = f64[70,517] parameter(1)\n  ROOT d = f64[33,517] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
        // Tall: split by rows.
        "HloModule m\nENTRY e {\n  a = f32[2500,48]{0,1} parameter(0)\n  b = f32[48,20] parameter(1)\n  ROOT d = f32[2500,20] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
        // Batched: one product per thread at a time.
        "HloModule m\nENTRY e {\n  a = f32[4,64,64] parameter(0)\n  b = f32[4,64,300]{1,2,0} parameter(1)\n  ROOT d = f32[4,64,300] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}\n}",
    ] {
        check_library_gemm(text, Some(2));
    }
}

#[test]
fn map_inlines_its_computation_and_ids_are_zero_on_one_device() {
    let text = r#"
HloModule m
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  e = f32[] exponential(a)
  ROOT s = f32[] subtract(e, m)
}
ENTRY e {
  x = f32[5,7]{0,1} parameter(0)
  y = f32[5,7] parameter(1)
  mp = f32[5,7] map(x, y), dimensions={0,1}, to_apply=f
  r = u32[] replica-id()
  p = u32[] partition-id()
  s = u32[] add(r, p)
  c = f32[] convert(s)
  b = f32[5,7] broadcast(c), dimensions={}
  ROOT o = f32[5,7] add(mp, b)
}"#;
    let m = hlo::parse_module(text).expect("parse");
    let args = random_args(&m);
    for run_passes in [false, true] {
        let opts = CompileOptions {
            run_passes,
            ..options()
        };
        let exe = runtime::compile(&m, &opts).expect("compile");
        let outs = exe.run(&args).expect("run");
        runtime::check_reference(&m, &args, &outs).expect("matches the evaluator");
    }
}

/// A fusion the module comes with that no emitter generates (here a reverse of a reduce
/// window, read over a range: `hloc fuse --target cpu` forms it) runs unfused and refused
/// by hloc's own fusion rules instead of failing.
#[test]
fn a_premade_fusion_the_emitters_lack_runs_unfused() {
    let text = r#"HloModule m
mx {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
fc {
  p = f32[6,11] parameter(0)
  r = f32[6,11] reverse(p), dimensions={1}
  ninf = f32[] constant(-inf)
  w = f32[6,11] reduce-window(r, ninf), window={size=1x11 pad=0_0x10_0}, to_apply=mx
  ROOT r2 = f32[6,11] reverse(w), dimensions={1}
}
ENTRY e {
  x = f32[6,11] parameter(0)
  ROOT f = f32[6,11] fusion(x), kind=kLoop, calls=fc
}"#;
    let m = hlo::parse_module(text).expect("parse");
    let emitted = plan::build_program(&m);
    assert!(
        matches!(emitted, Err(codegen::CodegenError::Unsupported { .. })),
        "the case needs a fusion the emitters lack"
    );
    let args = random_args(&m);
    let exe = runtime::compile(&m, &options()).expect("compile");
    let outs = exe.run(&args).expect("run");
    runtime::check_reference(&m, &args, &outs).expect("matches the evaluator");
}

/// Nested tuples at every boundary (issue 36 item 3): in the root, as an entry parameter
/// (flattened at the boundary, the argument given as a tuple literal), returned by a
/// conditional and carried by a while loop; each against the evaluator.
#[test]
fn nested_tuples_at_every_boundary_match_the_evaluator() {
    let cases = [
        "HloModule root\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  \
         s = f32[4] add(a, b)\n  m = f32[4] multiply(a, b)\n  in = (f32[4], f32[4]) tuple(s, m)\n  \
         ROOT t = (f32[4], (f32[4], f32[4])) tuple(a, in)\n}",
        "HloModule param\nENTRY e {\n  p = (f32[4], (f32[4], s32[3])) parameter(0)\n  \
         a = f32[4] get-tuple-element(p), index=0\n  q = (f32[4], s32[3]) get-tuple-element(p), index=1\n  \
         b = f32[4] get-tuple-element(q), index=0\n  c = s32[3] get-tuple-element(q), index=1\n  \
         s = f32[4] add(a, b)\n  ROOT t = (f32[4], s32[3], (f32[4], s32[3])) tuple(s, c, q)\n}",
        "HloModule cond\ntb {\n  x = f32[4] parameter(0)\n  n = f32[4] negate(x)\n  \
         i = (f32[4], f32[4]) tuple(x, n)\n  ROOT r = ((f32[4], f32[4]), f32[4]) tuple(i, x)\n}\n\
         fb {\n  x = f32[4] parameter(0)\n  e = f32[4] exponential(x)\n  i = (f32[4], f32[4]) tuple(e, e)\n  \
         ROOT r = ((f32[4], f32[4]), f32[4]) tuple(i, x)\n}\n\
         ENTRY e {\n  p = pred[] parameter(0)\n  x = f32[4] parameter(1)\n  \
         c = ((f32[4], f32[4]), f32[4]) conditional(p, x, x), true_computation=tb, false_computation=fb\n  \
         i = (f32[4], f32[4]) get-tuple-element(c), index=0\n  y = f32[4] get-tuple-element(i), index=1\n  \
         z = f32[4] get-tuple-element(c), index=1\n  ROOT t = (f32[4], ((f32[4], f32[4]), f32[4])) tuple(y, c)\n}",
        "HloModule loop\ncond {\n  s = (s32[], (f32[4], f32[4])) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  \
         n = s32[] constant(3)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n\
         body {\n  s = (s32[], (f32[4], f32[4])) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  \
         v = (f32[4], f32[4]) get-tuple-element(s), index=1\n  a = f32[4] get-tuple-element(v), index=0\n  \
         b = f32[4] get-tuple-element(v), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  \
         c = f32[4] add(a, b)\n  w = (f32[4], f32[4]) tuple(c, a)\n  ROOT r = (s32[], (f32[4], f32[4])) tuple(j, w)\n}\n\
         ENTRY e {\n  x = f32[4] parameter(0)\n  y = f32[4] parameter(1)\n  zero = s32[] constant(0)\n  \
         v = (f32[4], f32[4]) tuple(x, y)\n  init = (s32[], (f32[4], f32[4])) tuple(zero, v)\n  \
         ROOT l = (s32[], (f32[4], f32[4])) while(init), condition=cond, body=body\n}",
    ];
    for text in cases {
        let m = hlo::parse_module(text).expect("parse");
        let args = random_args(&m);
        let exe = runtime::compile(&m, &options()).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let outs = exe.run(&args).unwrap_or_else(|e| panic!("{e}\n{text}"));
        if let Err(e) = runtime::check_reference(&m, &args, &outs) {
            panic!("{e}\n{text}");
        }
    }
}
