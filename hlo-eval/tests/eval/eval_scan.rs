//! `scan` (forward and reverse, several inputs and carries, other scanned dimensions, zero
//! length) and scalar-literal constants of non-scalar shape, each a small hand-made module
//! checked against values computed by hand.

use crate::support::{f32s, get_f32, get_s32, part, s32s};
use hlo::literal::ArrayData;
use hlo::Literal;
use hlo_eval::{evaluate, EvalError, Evaluator};

fn run(text: &str, args: &[Literal]) -> Literal {
    let m = hlo::parse_module(text).expect("module parses");
    if let Err(errors) = hlo::verifier::verify(&m) {
        panic!("{errors:?}");
    }
    evaluate(&m, args).expect("evaluates")
}

const CUMSUM: &str = r#"HloModule cumsum

add {
  x = f32[] parameter(0)
  acc = f32[] parameter(1)
  s = f32[] add(acc, x)
  ROOT t = (f32[], f32[]) tuple(s, s)
}

ENTRY main {
  xs = f32[5] parameter(0)
  init = f32[] parameter(1)
  ROOT scan = (f32[5], f32[]) scan(xs, init), dimensions={0}, num_carries=1, to_apply=add
}
"#;

#[test]
fn cumulative_sum() {
    let out = run(
        CUMSUM,
        &[
            f32s("f32[5]", &[1.0, 2.0, 3.0, 4.0, 5.0]),
            f32s("f32[]", &[10.0]),
        ],
    );
    // 10+1, +2, +3, +4, +5.
    assert_eq!(get_f32(part(&out, 0)), [11.0, 13.0, 16.0, 20.0, 25.0]);
    assert_eq!(get_f32(part(&out, 1)), [25.0]);
}

#[test]
fn reverse_cumulative_sum() {
    let text = CUMSUM.replace("to_apply=add", "is_reverse=true, to_apply=add");
    let out = run(
        &text,
        &[
            f32s("f32[5]", &[1.0, 2.0, 3.0, 4.0, 5.0]),
            f32s("f32[]", &[0.0]),
        ],
    );
    // From the last position: 5, 5+4, 9+3, 12+2, 14+1, stored at the positions read.
    assert_eq!(get_f32(part(&out, 0)), [15.0, 14.0, 12.0, 9.0, 5.0]);
    assert_eq!(get_f32(part(&out, 1)), [15.0]);
}

#[test]
fn running_max_along_the_second_dimension() {
    let text = r#"HloModule runmax

mx {
  x = s32[2] parameter(0)
  m = s32[2] parameter(1)
  n = s32[2] maximum(m, x)
  ROOT t = (s32[2], s32[2]) tuple(n, n)
}

ENTRY main {
  xs = s32[2,4] parameter(0)
  init = s32[2] constant({-100, -100})
  ROOT scan = (s32[2,4], s32[2]) scan(xs, init), dimensions={1}, num_carries=1, to_apply=mx
}
"#;
    let out = run(text, &[s32s("s32[2,4]", &[3, 1, 4, 1, -5, 9, 2, 6])]);
    // Row 0: 3 1 4 1 -> 3 3 4 4; row 1: -5 9 2 6 -> -5 9 9 9.
    assert_eq!(get_s32(part(&out, 0)), [3, 3, 4, 4, -5, 9, 9, 9]);
    assert_eq!(get_s32(part(&out, 1)), [4, 9]);
}

#[test]
fn several_inputs_and_carries() {
    // Per step: sum += a*b (a dot product so far), count += 1; outputs: the running
    // sum and a - b.
    let text = r#"HloModule multi

body {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  sum = f32[] parameter(2)
  count = s32[] parameter(3)
  ab = f32[] multiply(a, b)
  sum2 = f32[] add(sum, ab)
  one = s32[] constant(1)
  count2 = s32[] add(count, one)
  diff = f32[] subtract(a, b)
  ROOT t = (f32[], f32[], f32[], s32[]) tuple(sum2, diff, sum2, count2)
}

ENTRY main {
  as = f32[3] parameter(0)
  bs = f32[3] parameter(1)
  zero = f32[] constant(0)
  c0 = s32[] constant(7)
  ROOT scan = (f32[3], f32[3], f32[], s32[]) scan(as, bs, zero, c0), dimensions={0}, num_carries=2, to_apply=body
}
"#;
    let out = run(
        text,
        &[
            f32s("f32[3]", &[1.0, 2.0, 3.0]),
            f32s("f32[3]", &[4.0, 5.0, 6.0]),
        ],
    );
    // 1*4 = 4, +2*5 = 14, +3*6 = 32.
    assert_eq!(get_f32(part(&out, 0)), [4.0, 14.0, 32.0]);
    assert_eq!(get_f32(part(&out, 1)), [-3.0, -3.0, -3.0]);
    assert_eq!(get_f32(part(&out, 2)), [32.0]);
    assert_eq!(get_s32(part(&out, 3)), [10]);
}

#[test]
fn outputs_stack_at_the_scanned_dimension() {
    // Scanning dimension 1 of [2,3]: each step sees a column (f32[2]) and outputs the
    // column plus the carry, stacked back as column j of a [2,3] result.
    let text = r#"HloModule cols

body {
  col = f32[2] parameter(0)
  acc = f32[2] parameter(1)
  s = f32[2] add(acc, col)
  ROOT t = (f32[2], f32[2]) tuple(s, s)
}

ENTRY main {
  x = f32[2,3] parameter(0)
  z = f32[2] constant(0)
  ROOT scan = (f32[2,3], f32[2]) scan(x, z), dimensions={1}, num_carries=1, is_reverse=true, to_apply=body
}
"#;
    let out = run(
        text,
        &[f32s("f32[2,3]", &[1.0, 2.0, 3.0, 10.0, 20.0, 30.0])],
    );
    // Reverse along columns: row 0: 3, 3+2, 5+1 -> [6, 5, 3]; row 1: [60, 50, 30].
    assert_eq!(get_f32(part(&out, 0)), [6.0, 5.0, 3.0, 60.0, 50.0, 30.0]);
    assert_eq!(get_f32(part(&out, 1)), [6.0, 60.0]);
}

#[test]
fn a_body_returning_one_value() {
    // No carries: the scan is a map over positions; the result is not a tuple.
    let text = r#"HloModule map_like

body {
  x = s32[] parameter(0)
  ROOT y = s32[] multiply(x, x)
}

ENTRY main {
  xs = s32[4] parameter(0)
  ROOT scan = s32[4] scan(xs), dimensions={0}, num_carries=0, to_apply=body
}
"#;
    let out = run(text, &[s32s("s32[4]", &[1, -2, 3, 4])]);
    assert_eq!(get_s32(&out), [1, 4, 9, 16]);
    // One carry and no outputs: the final carry.
    let text = r#"HloModule fold

body {
  x = s32[] parameter(0)
  acc = s32[] parameter(1)
  ROOT s = s32[] subtract(acc, x)
}

ENTRY main {
  xs = s32[3] parameter(0)
  init = s32[] constant(100)
  ROOT scan = s32[] scan(xs, init), dimensions={0}, num_carries=1, is_reverse=true, to_apply=body
}
"#;
    let out = run(text, &[s32s("s32[3]", &[1, 2, 30])]);
    assert_eq!(get_s32(&out), [67]);
}

#[test]
fn a_scan_of_length_zero_returns_the_initial_carries() {
    let text = CUMSUM.replace("f32[5]", "f32[0]");
    let out = run(&text, &[f32s("f32[0]", &[]), f32s("f32[]", &[2.5])]);
    assert_eq!(get_f32(part(&out, 0)), Vec::<f32>::new());
    assert_eq!(get_f32(part(&out, 1)), [2.5]);
}

#[test]
fn scalar_literal_constants_fill_their_shape() {
    let text = r#"HloModule splat

ENTRY main {
  p = f32[2,3] parameter(0)
  c = f32[2,3] constant(1.5)
  ROOT r = f32[2,3] add(p, c)
}
"#;
    let out = run(text, &[f32s("f32[2,3]", &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])]);
    assert_eq!(get_f32(&out), [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]);
    let text = r#"HloModule splat_tuple

ENTRY main {
  ROOT c = (s32[3], pred[2], bf16[2]) constant(({-4, 5, 6}, true, -0.5))
}
"#;
    // `{-4, 5, 6}` is listed; `true` and `-0.5` fill their shapes.
    let out = run(text, &[]);
    assert_eq!(get_s32(part(&out, 0)), [-4, 5, 6]);
    assert_eq!(
        part(&out, 1).as_array().unwrap().data(),
        &ArrayData::Pred(vec![true, true])
    );
    let bf = part(&out, 2).as_array().unwrap();
    assert_eq!(bf.get_f64(0), Some(-0.5));
    assert_eq!(bf.get_f64(1), Some(-0.5));
    assert!(!bf.is_splat());
}

#[test]
fn a_huge_scalar_literal_constant_is_refused_not_allocated() {
    let text = "HloModule huge\n\nENTRY main {\n  ROOT c = f32[1000000,1000000] constant(0)\n}\n";
    let m = hlo::parse_module(text).expect("parses without allocating");
    let err = Evaluator::new(&m)
        .with_size_limit(1 << 30)
        .run(&[])
        .unwrap_err();
    assert!(matches!(err, EvalError::TooLarge { .. }), "{err}");
}
