//! The runtime's library calls against the reference evaluator on their edge cases:
//! stable multi-operand sort with NaNs and equal keys (column layouts too), top-k, scatter
//! with repeated and out-of-bounds indices and a non-commutative combiner (generated
//! kernels, and the library for a variadic scatter), batched scatter, select-and-scatter
//! with overlapping windows and padding, the LAPACK calls on batches and both triangles,
//! rng-bit-generator (both algorithms, several output types), fft of every kind; and the
//! kernels' complex arithmetic, f8 conversions and reduce-precision on edge values.

use std::path::Path;

use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::{ElementType, Literal, Shape};
use runtime::CompileOptions;

fn options() -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache")),
        ..CompileOptions::default()
    }
}

fn lit(ty: ElementType, dims: Vec<i64>, data: ArrayData) -> Literal {
    Literal::Array(ArrayLiteral::new(Shape::array(ty, dims), data).expect("literal"))
}

/// Compiles `text` (with and without the pass pipeline), runs it on `args` (random ones
/// when empty), and checks every output against the evaluator; the program must use a
/// library call.
fn check(text: &str, args: &[Literal]) {
    check_with(text, args, true)
}

fn check_with(text: &str, args: &[Literal], library: bool) {
    let m = hlo::parse_module(text).expect("parse");
    let args: Vec<Literal> = if args.is_empty() {
        let entry = m.entry();
        (0..entry.parameters().len())
            .map(|n| {
                let id = entry.parameter(n).expect("parameter");
                hlo_eval::random::random_literal(entry.instr(id).shape(), 7, n as u64, 1 << 30)
                    .expect("random")
            })
            .collect()
    } else {
        args.to_vec()
    };
    for run_passes in [false, true] {
        let o = CompileOptions {
            run_passes,
            ..options()
        };
        let exe = runtime::compile(&m, &o).expect("compile");
        assert!(
            !library || exe.stats().library_calls > 0,
            "no library call in\n{text}"
        );
        let outs = exe.run(&args).expect("run");
        if let Err(e) = runtime::check_reference(&m, &args, &outs) {
            panic!("{e}\n{}", exe.plan().source);
        }
    }
}

#[test]
fn sort_is_stable_with_nans_and_layouts() {
    let text = r#"
HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
ENTRY e {
  k = f32[3,6]{0,1} parameter(0)
  v = s32[3,6]{1,0} parameter(1)
  ROOT s = (f32[3,6]{1,0}, s32[3,6]{0,1}) sort(k, v), dimensions={1}, is_stable=true, to_apply=cmp
}"#;
    let nan = f32::NAN;
    let k = vec![
        1.0, -0.0, 0.0, nan, 1.0, -nan, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, -1.0, 5.0, -1.0, 3.0, -1.0,
        0.5,
    ];
    check(
        text,
        &[
            lit(ElementType::F32, vec![3, 6], ArrayData::F32(k)),
            lit(
                ElementType::S32,
                vec![3, 6],
                ArrayData::S32((0..18).collect()),
            ),
        ],
    );
}

#[test]
fn topk_keeps_the_first_of_equal_values() {
    let text = r#"
HloModule m
ENTRY e {
  x = f32[2,6] parameter(0)
  ROOT t = (f32[2,3], s32[2,3]) topk(x), k=3, largest=true
}"#;
    let x = vec![
        1.0,
        3.0,
        3.0,
        f32::NAN,
        -1.0,
        3.0,
        0.0,
        -0.0,
        0.0,
        1.0,
        1.0,
        -2.0,
    ];
    check(
        text,
        &[lit(ElementType::F32, vec![2, 6], ArrayData::F32(x))],
    );
}

#[test]
fn scatter_repeats_in_order_and_skips_out_of_bounds_windows() {
    // `b - a`-like combiner (not commutative): the update order matters.
    let text = r#"
HloModule m
comb {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  ROOT s = f32[] subtract(b, m)
}
ENTRY e {
  x = f32[5,3] parameter(0)
  i = s32[6,1] parameter(1)
  u = f32[6,2] parameter(2)
  ROOT s = f32[5,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}"#;
    let x = lit(
        ElementType::F32,
        vec![5, 3],
        ArrayData::F32((0..15).map(|v| v as f32 * 0.5).collect()),
    );
    let i = lit(
        ElementType::S32,
        vec![6, 1],
        ArrayData::S32(vec![1, 1, -1, 4, 5, 1]),
    );
    let u = lit(
        ElementType::F32,
        vec![6, 2],
        ArrayData::F32((0..12).map(|v| v as f32 - 3.0).collect()),
    );
    // A single-operand scatter is a generated kernel, not a library call.
    check_with(text, &[x, i, u], false);
}

#[test]
fn scatter_with_batching_dims_and_implicit_index_vector() {
    let text = r#"
HloModule m
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
ENTRY e {
  x = s32[4,5] parameter(0)
  i = s32[4,3] parameter(1)
  u = s32[4,3] parameter(2)
  ROOT s = s32[4,5] scatter(x, i, u), update_window_dims={}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, input_batching_dims={0}, scatter_indices_batching_dims={0}, index_vector_dim=2, to_apply=add
}"#;
    let i = lit(
        ElementType::S32,
        vec![4, 3],
        ArrayData::S32(vec![0, 4, 4, 1, 1, 7, 2, -3, 2, 3, 0, 3]),
    );
    let x = lit(
        ElementType::S32,
        vec![4, 5],
        ArrayData::S32((0..20).collect()),
    );
    let u = lit(
        ElementType::S32,
        vec![4, 3],
        ArrayData::S32((10..22).collect()),
    );
    // A single-operand scatter is a generated kernel, not a library call.
    check_with(text, &[x, i, u], false);
}

#[test]
fn scatter_wrapped_in_a_fusion_updates_its_operand_in_place() {
    // XLA's optimized modules wrap a scatter in a fusion of its own, its parameters in
    // another order than the scatter's operands; the operand dies at the fusion (updated
    // in its own buffer) in one module and is read again after it (copied first) in the
    // other.
    let body = r#"
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
wrapped {
  u = f32[6,3] parameter(0)
  x = f32[8,3] parameter(1)
  i = s32[6,1] parameter(2)
  ROOT s = f32[8,3] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}"#;
    let i = lit(
        ElementType::S32,
        vec![6, 1],
        ArrayData::S32(vec![7, 0, 8, -1, 7, 3]),
    );
    let x = lit(
        ElementType::F32,
        vec![8, 3],
        ArrayData::F32((0..24).map(|v| v as f32).collect()),
    );
    let u = lit(
        ElementType::F32,
        vec![6, 3],
        ArrayData::F32((0..18).map(|v| 0.25 * v as f32).collect()),
    );
    for entry in [
        "ENTRY e {\n  x = f32[8,3] parameter(0)\n  i = s32[6,1] parameter(1)\n  u = f32[6,3] parameter(2)\n  n = f32[8,3] negate(x)\n  ROOT f = f32[8,3] fusion(u, n, i), kind=kLoop, calls=wrapped\n}",
        "ENTRY e {\n  x = f32[8,3] parameter(0)\n  i = s32[6,1] parameter(1)\n  u = f32[6,3] parameter(2)\n  f = f32[8,3] fusion(u, x, i), kind=kLoop, calls=wrapped\n  ROOT t = (f32[8,3], f32[8,3]) tuple(f, x)\n}",
    ] {
        let text = format!("HloModule m\n{body}\n{entry}");
        check_with(&text, &[x.clone(), i.clone(), u.clone()], false);
    }
}

#[test]
fn variadic_scatter_is_a_library_call_in_update_order() {
    // Two operands updated together, repeated and out-of-bounds indices: the library's
    // sequential routine (the generated kernel takes single-operand scatters).
    let text = r#"
HloModule m
comb {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  m = f32[] multiply(a, c)
  s = f32[] subtract(c, m)
  t = s32[] add(b, d)
  ROOT r = (f32[], s32[]) tuple(s, t)
}
ENTRY e {
  x = f32[5,3] parameter(0)
  y = s32[5,3] parameter(1)
  i = s32[6,1] parameter(2)
  u = f32[6,2] parameter(3)
  v = s32[6,2] parameter(4)
  ROOT s = (f32[5,3], s32[5,3]) scatter(x, y, i, u, v), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}"#;
    let x = lit(
        ElementType::F32,
        vec![5, 3],
        ArrayData::F32((0..15).map(|v| v as f32 * 0.5).collect()),
    );
    let y = lit(
        ElementType::S32,
        vec![5, 3],
        ArrayData::S32((0..15).collect()),
    );
    let i = lit(
        ElementType::S32,
        vec![6, 1],
        ArrayData::S32(vec![1, 1, -1, 4, 5, 1]),
    );
    let u = lit(
        ElementType::F32,
        vec![6, 2],
        ArrayData::F32((0..12).map(|v| v as f32 - 3.0).collect()),
    );
    let v = lit(
        ElementType::S32,
        vec![6, 2],
        ArrayData::S32((100..112).collect()),
    );
    check(text, &[x, y, i, u, v]);
}

#[test]
fn select_and_scatter_with_overlap_and_padding() {
    let text = r#"
HloModule m
ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[1,5,6,2] parameter(0)
  s = f32[1,3,3,2] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[1,5,6,2] select-and-scatter(x, s, z), window={size=1x3x2x1 stride=1x2x2x1 pad=0_0x1_1x0_0x0_0}, select=ge, scatter=add
}"#;
    // A compiled kernel since the select-scatter emitter (random_select_scatter.rs).
    check_with(text, &[], false);
}

#[test]
fn lapack_calls_on_batches_and_both_triangles() {
    let text = r#"
HloModule m
ENTRY e {
  a = f32[2,3,3]{1,2,0} parameter(0)
  b = f32[2,3,2]{1,2,0} parameter(1)
  at = f32[2,3,3]{1,2,0} transpose(a), dimensions={0,2,1}
  spd0 = f32[2,3,3]{1,2,0} dot(a, at), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  three = f32[] constant(3)
  eye = f32[2,3,3]{1,2,0} broadcast(three), dimensions={}
  io = s32[3,3] iota(), iota_dimension=0
  jo = s32[3,3] iota(), iota_dimension=1
  d = pred[3,3] compare(io, jo), direction=EQ
  db = pred[2,3,3] broadcast(d), dimensions={1,2}
  zero = f32[] constant(0)
  zb = f32[2,3,3]{1,2,0} broadcast(zero), dimensions={}
  diag = f32[2,3,3]{1,2,0} select(db, eye, zb)
  spd = f32[2,3,3]{1,2,0} add(spd0, diag)
  lo = (f32[2,3,3]{1,2,0}, s32[2]) custom-call(spd), custom_call_target="lapack_spotrf_ffi", backend_config={uplo = 76 : ui8}
  up = (f32[2,3,3]{1,2,0}, s32[2]) custom-call(spd), custom_call_target="lapack_spotrf_ffi", backend_config={uplo = 85 : ui8}
  l = f32[2,3,3]{1,2,0} get-tuple-element(lo), index=0
  u = f32[2,3,3]{1,2,0} get-tuple-element(up), index=0
  x1 = f32[2,3,2]{1,2,0} custom-call(l, b), custom_call_target="lapack_strsm_ffi", backend_config={diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8}
  bt = f32[2,2,3]{1,2,0} transpose(b), dimensions={0,2,1}
  x2 = f32[2,2,3]{1,2,0} custom-call(u, bt), custom_call_target="lapack_strsm_ffi", backend_config={diag = 85 : ui8, side = 82 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8}
  lu = (f32[2,3,3]{1,2,0}, s32[2,3], s32[2]) custom-call(a), custom_call_target="lapack_sgetrf_ffi"
  li = s32[2] get-tuple-element(lo), index=1
  f = f32[2,3,3]{1,2,0} get-tuple-element(lu), index=0
  p = s32[2,3] get-tuple-element(lu), index=1
  inf = s32[2] get-tuple-element(lu), index=2
  ROOT t = (f32[2,3,3]{1,2,0}, s32[2], f32[2,3,3]{1,2,0}, f32[2,3,2]{1,2,0}, f32[2,2,3]{1,2,0}, f32[2,3,3]{1,2,0}, s32[2,3], s32[2]) tuple(l, li, u, x1, x2, f, p, inf)
}"#;
    check(text, &[]);
}

/// QR as JAX emits it (`geqrf`, then `orgqr` for Q) on a batch of tall matrices in
/// column-major layouts, and `geqrf` of a wide f64 one: Q, R and the reflectors agree with
/// the evaluator's LAPACK-convention Householder QR.
#[test]
fn lapack_qr_on_batches_tall_and_wide() {
    let text = r#"
HloModule m
ENTRY e {
  a = f32[2,6,4]{1,2,0} parameter(0)
  w = f64[3,5]{0,1} parameter(1)
  qr = (f32[2,6,4]{1,2,0}, f32[2,4]) custom-call(a), custom_call_target="lapack_sgeqrf_ffi"
  r = f32[2,6,4]{1,2,0} get-tuple-element(qr), index=0
  tau = f32[2,4] get-tuple-element(qr), index=1
  q = f32[2,6,4]{1,2,0} custom-call(r, tau), custom_call_target="lapack_sorgqr_ffi"
  wqr = (f64[3,5]{0,1}, f64[3]) custom-call(w), custom_call_target="lapack_dgeqrf_ffi"
  wr = f64[3,5]{0,1} get-tuple-element(wqr), index=0
  wt = f64[3] get-tuple-element(wqr), index=1
  ROOT t = (f32[2,6,4]{1,2,0}, f32[2,4], f32[2,6,4]{1,2,0}, f64[3,5]{0,1}, f64[3]) tuple(r, tau, q, wr, wt)
}"#;
    check(text, &[]);
}

#[test]
fn rng_bit_generator_matches_both_algorithms() {
    for (alg, ty) in [
        ("rng_three_fry", "u32[3,5]"),
        ("rng_three_fry", "u64[7]"),
        ("rng_philox", "u32[2,3]"),
        ("rng_philox", "u64[5]"),
        ("rng_default", "u8[9]"),
    ] {
        for state in ["u64[2]", "u64[3]"] {
            let text = format!(
                "HloModule m\nENTRY e {{\n  s = {state} parameter(0)\n  ROOT r = ({state}, {ty}) rng-bit-generator(s), algorithm={alg}\n}}"
            );
            check(&text, &[]);
        }
    }
}

#[test]
fn fft_of_every_kind() {
    for (ty_in, ty_out, kind, len) in [
        ("c64[3,8]", "c64[3,8]", "FFT", "{8}"),
        ("c64[2,6]", "c64[2,6]", "IFFT", "{2,6}"),
        ("f32[3,10]", "c64[3,6]", "RFFT", "{10}"),
        ("c64[4,5]", "f32[4,8]", "IRFFT", "{8}"),
        ("c128[2,3,5]", "c128[2,3,5]", "FFT", "{3,5}"),
    ] {
        let text = format!(
            "HloModule m\nENTRY e {{\n  x = {ty_in} parameter(0)\n  ROOT f = {ty_out} fft(x), fft_type={kind}, fft_length={len}\n}}"
        );
        check(&text, &[]);
    }
}

#[test]
fn complex_arithmetic_matches_the_evaluator() {
    let text = r#"
HloModule m
ENTRY e {
  a = c64[8] parameter(0)
  b = c64[8] parameter(1)
  r = f32[8] parameter(2)
  c = c64[8] convert(r)
  s = c64[8] add(a, b)
  d = c64[8] subtract(a, c)
  m = c64[8] multiply(a, b)
  q = c64[8] divide(a, b)
  n = c64[8] negate(q)
  x = c64[8] exponential(b)
  ab = f32[8] abs(m)
  re = f32[8] real(d)
  im = f32[8] imag(s)
  z = c64[8] complex(re, im)
  eq = pred[8] compare(a, z), direction=NE
  ROOT t = (c64[8], c64[8], f32[8], c64[8], pred[8], c64[8]) tuple(s, n, ab, z, eq, x)
}"#;
    let big = 3.0e38f32;
    let a: Vec<[f32; 2]> = vec![
        [1.0, 2.0],
        [big, big],
        [0.0, 0.0],
        [f32::NAN, 1.0],
        [-1.5, 0.25],
        [1e-30, -1e-30],
        [f32::INFINITY, 0.0],
        [3.0, -4.0],
    ];
    let b: Vec<[f32; 2]> = vec![
        [3.0, -1.0],
        [big, -big],
        [0.0, 0.0],
        [2.0, 2.0],
        [1e-38, 1e38],
        [1e-30, 1e-30],
        [1.0, 1.0],
        [0.0, 2.0],
    ];
    let r: Vec<f32> = vec![1.0, -2.0, 0.0, 4.5, f32::NAN, 1e30, -0.0, 7.0];
    check_with(
        text,
        &[
            lit(ElementType::C64, vec![8], ArrayData::C64(a)),
            lit(ElementType::C64, vec![8], ArrayData::C64(b)),
            lit(ElementType::F32, vec![8], ArrayData::F32(r)),
        ],
        false,
    );
}

#[test]
fn f8_conversions_and_reduce_precision_round_as_xla() {
    let text = r#"
HloModule m
ENTRY e {
  x = f32[16] parameter(0)
  a = f8e4m3fn[16] convert(x)
  b = f8e5m2[16] convert(x)
  ab = f32[16] convert(a)
  bb = f32[16] convert(b)
  s = f8e4m3fn[16] add(a, a)
  h = f16[16] convert(x)
  rh = f16[16] reduce-precision(h), exponent_bits=4, mantissa_bits=3
  r1 = f32[16] reduce-precision(x), exponent_bits=5, mantissa_bits=10
  r2 = f32[16] reduce-precision(x), exponent_bits=3, mantissa_bits=0
  ROOT t = (f8e4m3fn[16], f8e5m2[16], f32[16], f32[16], f8e4m3fn[16], f16[16], f32[16], f32[16]) tuple(a, b, ab, bb, s, rh, r1, r2)
}"#;
    let x: Vec<f32> = vec![
        0.0,
        -0.0,
        1.0,
        -1.5,
        448.0,
        464.0,
        500.0,
        -1e6,
        57344.0,
        61440.0,
        1e-3,
        -2e-9,
        f32::NAN,
        f32::INFINITY,
        0.1,
        3.3e-5,
    ];
    check_with(
        text,
        &[lit(ElementType::F32, vec![16], ArrayData::F32(x))],
        false,
    );
}

#[test]
fn scatter_combines_wide_complex_elements() {
    let text = r#"
HloModule m
add {
  a = c128[] parameter(0)
  b = c128[] parameter(1)
  ROOT s = c128[] add(a, b)
}
ENTRY e {
  x = c128[6] parameter(0)
  i = s32[5,1] parameter(1)
  u = c128[5] parameter(2)
  ROOT s = c128[6] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}"#;
    let i = lit(
        ElementType::S32,
        vec![5, 1],
        ArrayData::S32(vec![0, 5, 5, 9, 2]),
    );
    let x = lit(
        ElementType::C128,
        vec![6],
        ArrayData::C128((0..6).map(|v| [v as f64, -(v as f64)]).collect()),
    );
    let u = lit(
        ElementType::C128,
        vec![5],
        ArrayData::C128((0..5).map(|v| [0.5 * v as f64, 1e300]).collect()),
    );
    // A single-operand scatter is a generated kernel, not a library call.
    check_with(text, &[x, i, u], false);
}

#[test]
fn complex_dots_and_reductions() {
    let text = r#"
HloModule m
add {
  a = c64[] parameter(0)
  b = c64[] parameter(1)
  ROOT s = c64[] add(a, b)
}
ENTRY e {
  a = c64[3,9] parameter(0)
  b = c64[9,2] parameter(1)
  d = c64[3,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = c64[] constant((0, 0))
  r = c64[3] reduce(a, z), dimensions={1}, to_apply=add
  ROOT t = (c64[3,2], c64[3]) tuple(d, r)
}"#;
    check_with(text, &[], false);
}

/// Arrays as row-major `f64`s.
type Flat = Vec<Vec<f64>>;

/// Runs `text` compiled (with and without the pass pipeline) on random arguments and
/// returns the arguments and its flattened outputs, each as row-major `f64`s.
fn run_flat(text: &str) -> Vec<(Flat, Flat)> {
    let m = hlo::parse_module(text).expect("parse");
    let entry = m.entry();
    let args: Vec<Literal> = (0..entry.parameters().len())
        .map(|n| {
            let id = entry.parameter(n).expect("parameter");
            hlo_eval::random::random_literal(entry.instr(id).shape(), 11, n as u64, 1 << 30)
                .expect("random")
        })
        .collect();
    let flat = |l: &Literal| -> Vec<f64> {
        let a = l.as_array().expect("array");
        (0..a.element_count())
            .map(|i| a.get_f64(i).expect("real"))
            .collect()
    };
    [false, true]
        .into_iter()
        .map(|run_passes| {
            let exe = runtime::compile(
                &m,
                &CompileOptions {
                    run_passes,
                    ..options()
                },
            )
            .expect("compile");
            let outs = exe.run(&args).expect("run");
            (
                args.iter().map(flat).collect(),
                outs.iter().map(flat).collect(),
            )
        })
        .collect()
}

/// `a[i][j]` of row-major `n`-column data.
fn at2(v: &[f64], n: usize, i: usize, j: usize) -> f64 {
    v[i * n + j]
}

/// The evaluator has no eigen- or singular value decomposition, so these are checked by
/// their definitions: `A = V diag(w) V^T` from the triangle `uplo` names, `V^T V = I`,
/// eigenvalues nondecreasing (LAPACK's order), `info = 0`; on a batch with column-major
/// layouts, both triangles.
#[test]
fn lapack_syevd_reconstructs_the_symmetric_matrix() {
    for uplo in ['L', 'U'] {
        let text = format!(
            r#"
HloModule m
ENTRY e {{
  a = f32[2,5,5]{{1,2,0}} parameter(0)
  ev = (f32[2,5,5]{{1,2,0}}, f32[2,5], s32[2]) custom-call(a), custom_call_target="lapack_ssyevd_ffi", backend_config={{mode = 86 : ui8, uplo = {} : ui8}}
  v = f32[2,5,5]{{1,2,0}} get-tuple-element(ev), index=0
  w = f32[2,5] get-tuple-element(ev), index=1
  i = s32[2] get-tuple-element(ev), index=2
  ROOT t = (f32[2,5,5]{{1,2,0}}, f32[2,5], s32[2]) tuple(v, w, i)
}}"#,
            uplo as u8
        );
        for (args, outs) in run_flat(&text) {
            let (a, v, w, info) = (&args[0], &outs[0], &outs[1], &outs[2]);
            assert_eq!(info, &vec![0.0, 0.0]);
            for b in 0..2 {
                let (a, v, w) = (&a[b * 25..], &v[b * 25..], &w[b * 5..]);
                assert!(
                    w[..5].windows(2).all(|p| p[0] <= p[1]),
                    "order {:?}",
                    &w[..5]
                );
                for i in 0..5 {
                    for j in 0..5 {
                        // The triangle LAPACK reads, mirrored.
                        let (r, c) = if (uplo == 'L') == (i >= j) {
                            (i, j)
                        } else {
                            (j, i)
                        };
                        let want = at2(a, 5, r, c);
                        let got: f64 = (0..5)
                            .map(|k| at2(v, 5, i, k) * w[k] * at2(v, 5, j, k))
                            .sum();
                        assert!(
                            (got - want).abs() < 1e-3 * (1.0 + want.abs()),
                            "{uplo} A[{i},{j}]: {got} vs {want}"
                        );
                        let dot: f64 = (0..5).map(|k| at2(v, 5, k, i) * at2(v, 5, k, j)).sum();
                        let id = if i == j { 1.0 } else { 0.0 };
                        assert!((dot - id).abs() < 1e-4, "V^T V [{i},{j}] = {dot}");
                    }
                }
            }
        }
    }
}

/// `gesdd` by its definition: `A = U diag(s) V^T` with orthonormal `U` and `V`, singular
/// values nonincreasing and nonnegative, the operand's buffer left as it was, `info = 0`;
/// square (`mode = A`) and thin (`mode = S`) factors, tall and wide, f32 and f64.
#[test]
fn lapack_gesdd_reconstructs_the_matrix() {
    for (ty, m, n, mode, full) in [
        ("f32", 5usize, 3usize, 'A', true),
        ("f64", 3, 6, 'S', false),
        ("f32", 4, 4, 'N', true),
    ] {
        let k = m.min(n);
        let (uc, vr) = if full { (m, n) } else { (k, k) };
        let p = if ty == "f32" { 's' } else { 'd' };
        let text = format!(
            r#"
HloModule m
ENTRY e {{
  a = {ty}[{m},{n}]{{0,1}} parameter(0)
  sv = ({ty}[{m},{n}]{{0,1}}, {ty}[{k}], {ty}[{m},{uc}]{{0,1}}, {ty}[{vr},{n}]{{0,1}}, s32[]) custom-call(a), custom_call_target="lapack_{p}gesdd_ffi", backend_config={{mode = {} : ui8}}
  x = {ty}[{m},{n}]{{0,1}} get-tuple-element(sv), index=0
  s = {ty}[{k}] get-tuple-element(sv), index=1
  u = {ty}[{m},{uc}]{{0,1}} get-tuple-element(sv), index=2
  vt = {ty}[{vr},{n}]{{0,1}} get-tuple-element(sv), index=3
  i = s32[] get-tuple-element(sv), index=4
  ROOT t = ({ty}[{m},{n}]{{0,1}}, {ty}[{k}], {ty}[{m},{uc}]{{0,1}}, {ty}[{vr},{n}]{{0,1}}, s32[]) tuple(x, s, u, vt, i)
}}"#,
            mode as u8
        );
        for (args, outs) in run_flat(&text) {
            let (a, kept, s, u, vt, info) =
                (&args[0], &outs[0], &outs[1], &outs[2], &outs[3], &outs[4]);
            assert_eq!(info, &vec![0.0]);
            assert_eq!(kept, a, "the operand's buffer");
            assert!(
                s.windows(2).all(|p| p[0] >= p[1]) && s.iter().all(|&x| x >= 0.0),
                "{s:?}"
            );
            for i in 0..m {
                for j in 0..n {
                    let got: f64 = (0..k)
                        .map(|q| at2(u, uc, i, q) * s[q] * at2(vt, n, q, j))
                        .sum();
                    let want = at2(a, n, i, j);
                    assert!(
                        (got - want).abs() < 1e-3 * (1.0 + want.abs()),
                        "{ty} {mode} A[{i},{j}]: {got} vs {want}"
                    );
                }
            }
            for (f, rows, cols) in [(u, m, uc), (vt, vr, n)] {
                // U^T U = I (columns) and V^T V = I (rows of V^T).
                let (outer, inner, by_col) = if std::ptr::eq(f, u) {
                    (cols, rows, true)
                } else {
                    (rows, cols, false)
                };
                for x in 0..outer {
                    for y in 0..outer {
                        let dot: f64 = (0..inner)
                            .map(|z| {
                                if by_col {
                                    at2(f, cols, z, x) * at2(f, cols, z, y)
                                } else {
                                    at2(f, cols, x, z) * at2(f, cols, y, z)
                                }
                            })
                            .sum();
                        let id = if x == y { 1.0 } else { 0.0 };
                        assert!(
                            (dot - id).abs() < 1e-4,
                            "{ty} {mode} orthonormal [{x},{y}] = {dot}"
                        );
                    }
                }
            }
        }
    }
}
