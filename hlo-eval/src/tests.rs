//! Corner cases of XLA's elementwise and data-movement semantics, each a tiny module.

use super::{evaluate, EvalError, Evaluator};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};
use hlo::Literal;

fn arr(ty: ElementType, dims: &[i64], data: ArrayData) -> Literal {
    Literal::Array(ArrayLiteral::new(Shape::array(ty, dims.to_vec()), data).expect("valid literal"))
}

fn run(text: &str, args: &[Literal]) -> ArrayData {
    let m = hlo::parse_module(text).expect("parses");
    let out = evaluate(&m, args).expect("evaluates");
    out.as_array().expect("array result").data().clone()
}

/// Evaluates `ROOT r = <result> <op>(p0[, p1])` over parameters of type `ty`.
fn op2(ty: &str, result: &str, op: &str, a: Literal, b: Literal) -> ArrayData {
    let n = a.shape().dims()[0];
    let text = format!(
        "HloModule t\nENTRY e {{\n  a = {ty}[{n}] parameter(0)\n  b = {ty}[{n}] parameter(1)\n  ROOT r = {result}[{n}] {op}(a, b)\n}}\n"
    );
    run(&text, &[a, b])
}

fn op1(ty: &str, result: &str, op: &str, a: Literal) -> ArrayData {
    let n = a.shape().dims()[0];
    let text = format!(
        "HloModule t\nENTRY e {{\n  a = {ty}[{n}] parameter(0)\n  ROOT r = {result}[{n}] {op}(a)\n}}\n"
    );
    run(&text, &[a])
}

fn s32(v: Vec<i32>) -> Literal {
    arr(ElementType::S32, &[v.len() as i64], ArrayData::S32(v))
}

fn u32s(v: Vec<u32>) -> Literal {
    arr(ElementType::U32, &[v.len() as i64], ArrayData::U32(v))
}

fn f32s(v: Vec<f32>) -> Literal {
    arr(ElementType::F32, &[v.len() as i64], ArrayData::F32(v))
}

const MIN: i32 = i32::MIN;
const MAX: i32 = i32::MAX;

#[test]
fn integer_division_and_remainder() {
    let a = vec![7, -7, 7, -7, MIN, 5, MIN];
    let b = vec![2, 2, -2, -2, -1, 0, 0];
    assert_eq!(
        op2("s32", "s32", "divide", s32(a.clone()), s32(b.clone())),
        ArrayData::S32(vec![3, -3, -3, 3, MIN, -1, -1])
    );
    assert_eq!(
        op2("s32", "s32", "remainder", s32(a), s32(b)),
        ArrayData::S32(vec![1, -1, 1, -1, 0, 5, MIN])
    );
    assert_eq!(
        op2("u32", "u32", "divide", u32s(vec![7, 7]), u32s(vec![0, 2])),
        ArrayData::U32(vec![u32::MAX, 3])
    );
    assert_eq!(
        op2(
            "u32",
            "u32",
            "remainder",
            u32s(vec![7, 7]),
            u32s(vec![0, 4])
        ),
        ArrayData::U32(vec![7, 3])
    );
}

#[test]
fn wrapping_arithmetic() {
    assert_eq!(
        op2("s32", "s32", "add", s32(vec![MAX, MIN]), s32(vec![1, -1])),
        ArrayData::S32(vec![MIN, MAX])
    );
    assert_eq!(
        op2(
            "s32",
            "s32",
            "multiply",
            s32(vec![65536, MIN]),
            s32(vec![65536, -1])
        ),
        ArrayData::S32(vec![0, MIN])
    );
    assert_eq!(
        op1("s32", "s32", "negate", s32(vec![MIN, 3])),
        ArrayData::S32(vec![MIN, -3])
    );
    assert_eq!(
        op1("s32", "s32", "abs", s32(vec![MIN, -3])),
        ArrayData::S32(vec![MIN, 3])
    );
}

#[test]
fn shifts_out_of_range() {
    let x = s32(vec![1, 1, 1, -8, -8, -8, -8]);
    let k = s32(vec![31, 32, -1, 1, 40, 28, 32]);
    assert_eq!(
        op2("s32", "s32", "shift-left", x.clone(), k.clone()),
        ArrayData::S32(vec![MIN, 0, 0, -16, 0, MIN, 0])
    );
    assert_eq!(
        op2("s32", "s32", "shift-right-arithmetic", x.clone(), k.clone()),
        ArrayData::S32(vec![0, 0, 0, -4, -1, -1, -1])
    );
    assert_eq!(
        op2("s32", "s32", "shift-right-logical", x, k),
        ArrayData::S32(vec![0, 0, 0, 0x7fff_fffc, 0, 15, 0])
    );
    let u8s = |v: Vec<u8>| arr(ElementType::U8, &[v.len() as i64], ArrayData::U8(v));
    assert_eq!(
        op2("u8", "u8", "shift-left", u8s(vec![1, 1]), u8s(vec![7, 8])),
        ArrayData::U8(vec![128, 0])
    );
    // Unsigned values shift arithmetically as their signed reinterpretation: the top bit
    // fills in, out-of-range amounts included (XLA gives 228, 255, 0, 255 for these).
    assert_eq!(
        op2(
            "u8",
            "u8",
            "shift-right-arithmetic",
            u8s(vec![200, 200, 100, 255]),
            u8s(vec![1, 9, 9, 200])
        ),
        ArrayData::U8(vec![228, 255, 0, 255])
    );
}

#[test]
fn integer_power_and_bit_counts() {
    assert_eq!(
        op2(
            "s32",
            "s32",
            "power",
            s32(vec![2, 2, 1, -2, 0, 3]),
            s32(vec![10, -1, -5, 3, 0, 40])
        ),
        ArrayData::S32(vec![1024, 0, 1, -8, 1, 3i32.wrapping_pow(40)])
    );
    assert_eq!(
        op1(
            "s32",
            "s32",
            "count-leading-zeros",
            s32(vec![0, 1, -1, 256])
        ),
        ArrayData::S32(vec![32, 31, 0, 23])
    );
    assert_eq!(
        op1("s32", "s32", "popcnt", s32(vec![0, -1, 7])),
        ArrayData::S32(vec![0, 32, 3])
    );
    let s4 = arr(ElementType::S4, &[3], ArrayData::S8(vec![7, -8, -1]));
    assert_eq!(
        op1("s4", "s4", "popcnt", s4.clone()),
        ArrayData::S8(vec![3, 1, 4])
    );
    let one = arr(ElementType::S4, &[3], ArrayData::S8(vec![1, 1, 1]));
    assert_eq!(
        op2("s4", "s4", "add", s4, one),
        ArrayData::S8(vec![-8, -7, 0])
    );
}

#[test]
fn float_nan_zero_and_rounding() {
    let nan = f32::NAN;
    let r = op2(
        "f32",
        "f32",
        "maximum",
        f32s(vec![nan, 1.0, -0.0, 0.0]),
        f32s(vec![1.0, nan, 0.0, -0.0]),
    );
    let ArrayData::F32(v) = r else { panic!() };
    assert!(v[0].is_nan() && v[1].is_nan());
    assert!(v[2] == 0.0 && v[2].is_sign_positive() && v[3].is_sign_positive());
    let r = op2(
        "f32",
        "f32",
        "minimum",
        f32s(vec![-0.0, 0.0]),
        f32s(vec![0.0, -0.0]),
    );
    let ArrayData::F32(v) = r else { panic!() };
    assert!(v[0].is_sign_negative() && v[1].is_sign_negative());
    let ArrayData::F32(v) = op1("f32", "f32", "sign", f32s(vec![-0.0, nan, -3.0, 2.0])) else {
        panic!()
    };
    assert!(v[0] == 0.0 && v[0].is_sign_negative() && v[1].is_nan() && v[2] == -1.0 && v[3] == 1.0);
    let x = f32s(vec![0.5, 1.5, 2.5, -0.5, -2.5]);
    assert_eq!(
        op1("f32", "f32", "round-nearest-even", x.clone()),
        ArrayData::F32(vec![0.0, 2.0, 2.0, -0.0, -2.0])
    );
    assert_eq!(
        op1("f32", "f32", "round-nearest-afz", x),
        ArrayData::F32(vec![1.0, 2.0, 3.0, -1.0, -3.0])
    );
    assert_eq!(
        op2(
            "f32",
            "f32",
            "remainder",
            f32s(vec![-7.5, 7.5]),
            f32s(vec![2.0, -2.0])
        ),
        ArrayData::F32(vec![-1.5, 1.5])
    );
    assert_eq!(
        op1(
            "f32",
            "pred",
            "is-finite",
            f32s(vec![1.0, nan, f32::INFINITY, -0.0])
        ),
        ArrayData::Pred(vec![true, false, false, true])
    );
    // expm1 and log1p keep small arguments accurate.
    assert_eq!(
        op1("f32", "f32", "exponential-minus-one", f32s(vec![1e-10])),
        ArrayData::F32(vec![1e-10])
    );
    assert_eq!(
        op1("f32", "f32", "log-plus-one", f32s(vec![1e-10])),
        ArrayData::F32(vec![1e-10])
    );
}

#[test]
fn compare_default_and_total_order() {
    let a = f32s(vec![-0.0, f32::NAN, f32::NAN, -f32::NAN]);
    let b = f32s(vec![0.0, f32::NAN, 1.0, f32::NEG_INFINITY]);
    let text = |dir: &str, extra: &str| {
        format!(
            "HloModule t\nENTRY e {{\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT r = pred[4] compare(a, b), direction={dir}{extra}\n}}\n"
        )
    };
    let args = [a, b];
    assert_eq!(
        run(&text("LT", ""), &args),
        ArrayData::Pred(vec![false, false, false, false])
    );
    assert_eq!(
        run(&text("EQ", ""), &args),
        ArrayData::Pred(vec![true, false, false, false])
    );
    assert_eq!(
        run(&text("NE", ""), &args),
        ArrayData::Pred(vec![false, true, true, true])
    );
    assert_eq!(
        run(&text("LT", ", type=TOTALORDER"), &args),
        ArrayData::Pred(vec![true, false, false, true])
    );
    assert_eq!(
        run(&text("EQ", ", order=TOTAL"), &args),
        ArrayData::Pred(vec![false, true, false, false])
    );
    // Unsigned comparison of signed storage.
    let t = "HloModule t\nENTRY e {\n  a = s32[2] parameter(0)\n  b = s32[2] parameter(1)\n  ROOT r = pred[2] compare(a, b), direction=LT, type=UNSIGNED\n}\n";
    assert_eq!(
        run(t, &[s32(vec![-1, 1]), s32(vec![1, -1])]),
        ArrayData::Pred(vec![false, true])
    );
}

#[test]
fn float_to_int_saturates() {
    let x = f32s(vec![
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3e9,
        -3e9,
        2.7,
        -2.7,
    ]);
    assert_eq!(
        op1("f32", "s32", "convert", x),
        ArrayData::S32(vec![0, MAX, MIN, MAX, MIN, 2, -2])
    );
    assert_eq!(
        op1(
            "f32",
            "u8",
            "convert",
            f32s(vec![-1.0, 300.0, 255.9, f32::NAN])
        ),
        ArrayData::U8(vec![0, 255, 255, 0])
    );
    assert_eq!(
        op1("s32", "u8", "convert", s32(vec![256 + 7, -1])),
        ArrayData::U8(vec![7, 255])
    );
    assert_eq!(
        op1(
            "f32",
            "pred",
            "convert",
            f32s(vec![0.0, -0.0, f32::NAN, 0.5])
        ),
        ArrayData::Pred(vec![false, false, true, true])
    );
}

#[test]
fn small_float_rounding() {
    let tie = 1.0 + 2f32.powi(-8); // halfway between two bf16 values: rounds to even (1.0)
    let above = 1.0 + 3.0 * 2f32.powi(-8); // halfway, odd below: rounds up
    assert_eq!(
        op1(
            "f32",
            "bf16",
            "convert",
            f32s(vec![tie, above, f32::INFINITY, -0.0])
        ),
        ArrayData::Bits16(vec![0x3f80, 0x3f82, 0x7f80, 0x8000])
    );
    // f16: 65520 overflows to inf; 2^-25 ties to 0, 3*2^-26 rounds to the smallest subnormal.
    assert_eq!(
        op1(
            "f32",
            "f16",
            "convert",
            f32s(vec![65504.0, 65520.0, 2f32.powi(-25), 3.0 * 2f32.powi(-26)])
        ),
        ArrayData::Bits16(vec![0x7bff, 0x7c00, 0x0000, 0x0001])
    );
    // f8e4m3fn has no infinity: overflow is NaN; f8e5m2 overflows to infinity.
    assert_eq!(
        op1("f32", "f8e4m3fn", "convert", f32s(vec![448.0, 500.0, -1.0])),
        ArrayData::Bits8(vec![0x7e, 0x7f, 0xb8])
    );
    assert_eq!(
        op1("f32", "f8e5m2", "convert", f32s(vec![1e6])),
        ArrayData::Bits8(vec![0x7c])
    );
    // bf16 arithmetic rounds each result.
    let b = |v: Vec<u16>| arr(ElementType::BF16, &[v.len() as i64], ArrayData::Bits16(v));
    assert_eq!(
        op2("bf16", "bf16", "add", b(vec![0x3f80]), b(vec![0x3b80])), // 1 + 2^-8
        ArrayData::Bits16(vec![0x3f80])
    );
}

#[test]
fn bitcast_follows_layouts() {
    let text = "HloModule t\nENTRY e {\n  a = f32[2,3]{0,1} parameter(0)\n  ROOT r = f32[6]{0} bitcast(a)\n}\n";
    let a = arr(
        ElementType::F32,
        &[2, 3],
        ArrayData::F32(vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    );
    // Column-major physical order: a[0,0], a[1,0], a[0,1], ...
    assert_eq!(
        run(text, &[a]),
        ArrayData::F32(vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0])
    );
    let text = "HloModule t\nENTRY e {\n  a = f32[2]{0} parameter(0)\n  ROOT r = u32[2]{0} bitcast-convert(a)\n}\n";
    assert_eq!(
        run(text, &[f32s(vec![1.0, -0.0])]),
        ArrayData::U32(vec![0x3f80_0000, 0x8000_0000])
    );
    let text = "HloModule t\nENTRY e {\n  a = f32[1]{0} parameter(0)\n  ROOT r = u16[1,2]{1,0} bitcast-convert(a)\n}\n";
    assert_eq!(
        run(text, &[f32s(vec![1.0])]),
        ArrayData::U16(vec![0x0000, 0x3f80])
    );
}

#[test]
fn dynamic_slices_clamp() {
    let text = "HloModule t\nENTRY e {\n  a = s32[6] parameter(0)\n  i = s32[] parameter(1)\n  ROOT r = s32[3] dynamic-slice(a, i), dynamic_slice_sizes={3}\n}\n";
    let a = s32(vec![0, 1, 2, 3, 4, 5]);
    let i = |v: i32| arr(ElementType::S32, &[], ArrayData::S32(vec![v]));
    assert_eq!(run(text, &[a.clone(), i(5)]), ArrayData::S32(vec![3, 4, 5]));
    assert_eq!(
        run(text, &[a.clone(), i(-2)]),
        ArrayData::S32(vec![0, 1, 2])
    );
    let text = "HloModule t\nENTRY e {\n  a = s32[6] parameter(0)\n  i = s32[] parameter(1)\n  u = s32[2] constant({8, 9})\n  ROOT r = s32[6] dynamic-update-slice(a, u, i)\n}\n";
    assert_eq!(
        run(text, &[a, i(9)]),
        ArrayData::S32(vec![0, 1, 2, 3, 8, 9])
    );
}

#[test]
fn pad_negative_and_interior() {
    let text = "HloModule t\nENTRY e {\n  a = s32[4] parameter(0)\n  z = s32[] constant(0)\n  ROOT r = s32[7] pad(a, z), padding=-1_1_1\n}\n";
    assert_eq!(
        run(text, &[s32(vec![1, 2, 3, 4])]),
        ArrayData::S32(vec![0, 2, 0, 3, 0, 4, 0])
    );
}

#[test]
fn variadic_reduce_argmax() {
    let text = r#"HloModule t
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GE
  v = f32[] select(gt, av, bv)
  i = s32[] select(gt, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  x = f32[2,3] parameter(0)
  idx = s32[2,3] iota(), iota_dimension=1
  lo = f32[] constant(-inf)
  z = s32[] constant(0)
  r = (f32[2], s32[2]) reduce(x, idx, lo, z), dimensions={1}, to_apply=argmax
  ROOT i = s32[2] get-tuple-element(r), index=1
}
"#;
    let x = arr(
        ElementType::F32,
        &[2, 3],
        ArrayData::F32(vec![1.0, 5.0, 2.0, 7.0, 0.0, 7.5]),
    );
    assert_eq!(run(text, &[x]), ArrayData::S32(vec![1, 2]));
}

#[test]
fn conditional_index_out_of_range_runs_last_branch() {
    let text = r#"HloModule t
b0 {
  p = s32[] parameter(0)
  ROOT r = s32[] constant(10)
}
b1 {
  p = s32[] parameter(0)
  ROOT r = s32[] negate(p)
}
ENTRY e {
  i = s32[] parameter(0)
  x = s32[] constant(3)
  ROOT c = s32[] conditional(i, x, x), branch_computations={b0, b1}
}
"#;
    let i = |v: i32| arr(ElementType::S32, &[], ArrayData::S32(vec![v]));
    assert_eq!(run(text, &[i(0)]), ArrayData::S32(vec![10]));
    assert_eq!(run(text, &[i(7)]), ArrayData::S32(vec![-3]));
    assert_eq!(run(text, &[i(-1)]), ArrayData::S32(vec![-3]));
}

#[test]
fn errors_are_values() {
    let m = hlo::parse_module("HloModule t\nENTRY e {\n  a = f32[4] parameter(0)\n  ROOT r = f32[1000,1000] broadcast(a), dimensions={}\n}\n");
    let m = m.unwrap();
    let err = Evaluator::new(&m)
        .with_size_limit(1000)
        .run(&[f32s(vec![0.0; 4])])
        .unwrap_err();
    assert!(
        matches!(
            err,
            EvalError::TooLarge {
                bytes: 4_000_000,
                ..
            }
        ),
        "{err}"
    );
    let err = evaluate(&m, &[]).unwrap_err();
    assert!(matches!(
        err,
        EvalError::ArgumentCount {
            expected: 1,
            got: 0
        }
    ));
    let err = evaluate(&m, &[s32(vec![1, 2, 3, 4])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "argument 0 (parameter `a`) must be f32[4], got s32[4]"
    );
    // A custom call the evaluator does not know names its target.
    let text = "HloModule t\nENTRY e {\n  x = f32[3] parameter(0)\n  ROOT r = f32[3] custom-call(x), custom_call_target=\"my_fused_kernel\"\n}\n";
    let m = hlo::parse_module(text).unwrap();
    let err = evaluate(&m, &[f32s(vec![0.0; 3])]).unwrap_err();
    assert!(matches!(err, EvalError::Unsupported { .. }));
    assert_eq!(
        err.to_string(),
        "unsupported operation `custom-call` (instruction `r`): custom_call_target=\"my_fused_kernel\""
    );
}

#[test]
fn endless_while_stops_at_the_limit() {
    let text = "HloModule t\n\ncond {\n  s = s32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\nbody {\n  s = s32[] parameter(0)\n  one = s32[] constant(1)\n  ROOT n = s32[] add(s, one)\n}\n\nENTRY e {\n  z = s32[] constant(0)\n  ROOT w = s32[] while(z), condition=cond, body=body\n}\n";
    let m = hlo::parse_module(text).unwrap();
    let err = crate::Evaluator::new(&m)
        .with_while_limit(50)
        .run(&[])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "while loop `w` did not finish within 50 iterations"
    );
}

#[test]
fn rng_draws_from_its_distribution_deterministically() {
    let text = "HloModule r\nENTRY e {\n  lo = s32[] constant(3)\n  hi = s32[] constant(7)\n  u = s32[4000] rng(lo, hi), distribution=rng_uniform\n  m = f32[] constant(2)\n  s = f32[] constant(0.5)\n  n = f32[20000] rng(m, s), distribution=rng_normal\n  ROOT t = (s32[4000], f32[20000]) tuple(u, n)\n}\n";
    let m = hlo::parse_module(text).unwrap();
    let first = evaluate(&m, &[]).unwrap();
    assert_eq!(first, evaluate(&m, &[]).unwrap(), "deterministic");
    let Literal::Tuple(parts) = first else {
        panic!("tuple result")
    };
    let (Some(ArrayData::S32(u)), Some(ArrayData::F32(n))) = (
        parts[0].as_array().map(|a| a.data()),
        parts[1].as_array().map(|a| a.data()),
    ) else {
        panic!("s32 and f32 parts")
    };
    for k in 3..7 {
        let count = u.iter().filter(|&&x| x == k).count();
        assert!(
            (800..1200).contains(&count),
            "{k} drawn {count} times of 4000"
        );
    }
    assert!(u.iter().all(|x| (3..7).contains(x)));
    let mean = n.iter().map(|&x| f64::from(x)).sum::<f64>() / n.len() as f64;
    let var = n
        .iter()
        .map(|&x| (f64::from(x) - mean).powi(2))
        .sum::<f64>()
        / n.len() as f64;
    assert!((mean - 2.0).abs() < 0.02, "mean {mean}");
    assert!((var.sqrt() - 0.5).abs() < 0.02, "sigma {}", var.sqrt());
}

/// The typed-loop fast path of `xor` reductions (integers and pred) agrees with calling
/// the reducer computation element by element, here forced by an extra instruction.
#[test]
fn xor_reduce_fast_path_matches_the_computation() {
    let module = |body: &str, ty: &str| {
        format!(
            "HloModule t\nx {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n{body}\n}}\nENTRY e {{\n  p = {ty}[2,3] parameter(0)\n  z = {ty}[] constant(0)\n  ROOT r = {ty}[2] reduce(p, z), dimensions={{1}}, to_apply=x\n}}\n"
        )
    };
    let fast = "  ROOT s = TY[] xor(a, b)";
    // Not a single op of the parameters: the generic path calls the computation.
    let slow = "  n = TY[] xor(a, b)\n  z0 = TY[] constant(0)\n  ROOT s = TY[] xor(n, z0)";
    let ints = arr(
        ElementType::S32,
        &[2, 3],
        ArrayData::S32(vec![5, 3, 12, -1, 7, MIN]),
    );
    let want = ArrayData::S32(vec![5 ^ 3 ^ 12, -1 ^ 7 ^ MIN]);
    for body in [fast, slow] {
        let text = module(&body.replace("TY", "s32"), "s32");
        assert_eq!(run(&text, std::slice::from_ref(&ints)), want, "{body}");
    }
    let preds = arr(
        ElementType::Pred,
        &[2, 3],
        ArrayData::Pred(vec![true, true, true, true, false, false]),
    );
    assert_eq!(
        run(&module(&fast.replace("TY", "pred"), "pred"), &[preds]),
        ArrayData::Pred(vec![true, true])
    );
}

/// TOTALORDER orders by sign, then the bits as an integer: a signaling NaN (quiet bit
/// clear) sorts before the quiet NaN, in a sort's comparator and in `compare` alike, for
/// f32, f16 and bf16 (widening to f64 would set the quiet bit and reverse them).
#[test]
fn total_order_keeps_a_signaling_nan_below_the_quiet_one() {
    // f32: 0x7fc00000 (quiet NaN), 0x7f800001 (signaling NaN), 1.0, 0xff800001 (-sNaN),
    // 0xffc00000 (-qNaN).
    let bits = [
        0x7fc0_0000u32,
        0x7f80_0001,
        0x3f80_0000,
        0xff80_0001,
        0xffc0_0000,
    ];
    let sort = |ty: &str, n: usize| {
        format!(
            "HloModule t\ncmp {{\n  x = {ty}[] parameter(0)\n  y = {ty}[] parameter(1)\n  \
             ROOT lt = pred[] compare(x, y), direction=LT, type=TOTALORDER\n}}\n\
             ENTRY e {{\n  a = {ty}[{n}] parameter(0)\n  \
             ROOT s = {ty}[{n}] sort(a), dimensions={{0}}, to_apply=cmp\n}}\n"
        )
    };
    let f32_in = arr(
        ElementType::F32,
        &[5],
        ArrayData::F32(bits.iter().map(|&b| f32::from_bits(b)).collect()),
    );
    let out = run(&sort("f32", 5), &[f32_in]);
    let ArrayData::F32(v) = out else {
        panic!("f32 result")
    };
    let got: Vec<u32> = v.iter().map(|x| x.to_bits()).collect();
    assert_eq!(
        got,
        [
            0xffc0_0000,
            0xff80_0001,
            0x3f80_0000,
            0x7f80_0001,
            0x7fc0_0000
        ]
    );
    // f16 (0x7e00 quiet, 0x7c01 signaling) and bf16 (0x7fc0 quiet, 0x7f81 signaling).
    for (ty, et, quiet, signaling, one) in [
        ("f16", ElementType::F16, 0x7e00u16, 0x7c01u16, 0x3c00u16),
        ("bf16", ElementType::BF16, 0x7fc0, 0x7f81, 0x3f80),
    ] {
        let input = arr(et, &[3], ArrayData::Bits16(vec![quiet, one, signaling]));
        assert_eq!(
            run(&sort(ty, 3), std::slice::from_ref(&input)),
            ArrayData::Bits16(vec![one, signaling, quiet]),
            "{ty}"
        );
        let cmp = format!(
            "HloModule t\nENTRY e {{\n  a = {ty}[3] parameter(0)\n  b = {ty}[3] parameter(1)\n  \
             ROOT r = pred[3] compare(a, b), direction=LT, type=TOTALORDER\n}}\n"
        );
        let swapped = arr(et, &[3], ArrayData::Bits16(vec![signaling, one, quiet]));
        assert_eq!(
            run(&cmp, &[swapped, input]),
            ArrayData::Pred(vec![true, false, false]),
            "{ty}"
        );
    }
}
