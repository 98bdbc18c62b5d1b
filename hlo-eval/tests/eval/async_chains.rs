//! Late-binding async chains: a chain evaluates to its wrapped computation on every
//! operand bound along it (by the start and each update), checked against the same
//! computation applied by a `call` to the same operands, and the printed module (the
//! generic form) evaluates the same.

use crate::support::{f32s, part, s32s};
use hlo::Literal;
use hlo_eval::evaluate;

fn run(text: &str, args: &[Literal]) -> Literal {
    let m = hlo::parse_module(text).expect("module parses");
    if let Err(errors) = hlo::verifier::verify(&m) {
        panic!("{errors:?}\n{text}");
    }
    let v = evaluate(&m, args).expect("evaluates");
    let printed = hlo::print_module(&m);
    let again = hlo::parse_module(&printed).expect("printed module parses");
    assert_eq!(evaluate(&again, args).expect("evaluates"), v, "{printed}");
    v
}

const WRAPPED: &str = r#"%wrapped (a: f32[4], b: f32[4], c: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  %c = f32[4] parameter(2)
  %m = f32[4] multiply(%a, %b)
  ROOT %r = f32[4] subtract(%m, %c)
}
"#;

fn xyz() -> [Literal; 3] {
    [
        f32s("f32[4]", &[1.0, -2.0, 0.5, 3.0]),
        f32s("f32[4]", &[4.0, 0.25, -3.0, 2.0]),
        f32s("f32[4]", &[0.5, 1.5, -1.0, 7.0]),
    ]
}

#[test]
fn chain_binding_late_through_tuples_equals_a_call() {
    let chain = format!(
        "HloModule m\n\n{WRAPPED}\nENTRY %e (x: f32[4], y: f32[4], z: f32[4]) -> (f32[4], f32[4]) {{
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %z = f32[4] parameter(2)
  %s = ((), f32[4], u32[]) async-start(), calls=%wrapped
  %u = ((f32[4]), f32[4], u32[]) async-update(%s, %y)
  %t = (((f32[4]), f32[4], u32[]), f32[4]) tuple(%u, %z)
  %g = ((f32[4]), f32[4], u32[]) get-tuple-element(%t), index=0
  %c = ((f32[4]), f32[4], u32[]) copy(%g)
  %v = ((f32[4], f32[4], f32[4]), f32[4], u32[]) async-update(%c, %x, %z)
  %d = f32[4] async-done(%v)
  %s.b = ((f32[4], f32[4]), f32[4], u32[]) async-start(%z, %x), calls=%wrapped
  %u.b = ((f32[4], f32[4], f32[4]), f32[4], u32[]) async-update(%s.b, %y)
  %d.b = f32[4] async-done(%u.b)
  ROOT %o = (f32[4], f32[4]) tuple(%d, %d.b)
}}
"
    );
    let calls = format!(
        "HloModule m\n\n{WRAPPED}\nENTRY %e (x: f32[4], y: f32[4], z: f32[4]) -> (f32[4], f32[4]) {{
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %z = f32[4] parameter(2)
  %d = f32[4] call(%y, %x, %z), to_apply=%wrapped
  %d.b = f32[4] call(%z, %x, %y), to_apply=%wrapped
  ROOT %o = (f32[4], f32[4]) tuple(%d, %d.b)
}}
"
    );
    let args = xyz();
    let got = run(&chain, &args);
    assert_eq!(got, run(&calls, &args));
    // y*x - z, elementwise.
    assert_eq!(
        crate::support::get_f32(part(&got, 0)),
        [3.5, -2.0, -0.5, -1.0]
    );
}

#[test]
fn chain_across_a_while_loop_equals_a_call() {
    let chain = format!(
        "HloModule m\n\n{WRAPPED}
%cond (p: (((f32[4]), f32[4], u32[]), s32[])) -> pred[] {{
  %p = (((f32[4]), f32[4], u32[]), s32[]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=1
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}}

%body (p: (((f32[4]), f32[4], u32[]), s32[])) -> (((f32[4]), f32[4], u32[]), s32[]) {{
  %p = (((f32[4]), f32[4], u32[]), s32[]) parameter(0)
  %st = ((f32[4]), f32[4], u32[]) get-tuple-element(%p), index=0
  %b = ((f32[4]), f32[4], u32[]) opt-barrier(%st)
  %i = s32[] get-tuple-element(%p), index=1
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  ROOT %next = (((f32[4]), f32[4], u32[]), s32[]) tuple(%b, %j)
}}

ENTRY %e (x: f32[4], y: f32[4], z: f32[4]) -> f32[4] {{
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %z = f32[4] parameter(2)
  %s = ((f32[4]), f32[4], u32[]) async-start(%x), calls=%wrapped
  %zero = s32[] constant(0)
  %init = (((f32[4]), f32[4], u32[]), s32[]) tuple(%s, %zero)
  %w = (((f32[4]), f32[4], u32[]), s32[]) while(%init), condition=%cond, body=%body
  %state = ((f32[4]), f32[4], u32[]) get-tuple-element(%w), index=0
  %u = ((f32[4], f32[4], f32[4]), f32[4], u32[]) async-update(%state, %z, %y)
  ROOT %d = f32[4] async-done(%u)
}}
"
    );
    let call = format!(
        "HloModule m\n\n{WRAPPED}\nENTRY %e (x: f32[4], y: f32[4], z: f32[4]) -> f32[4] {{
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %z = f32[4] parameter(2)
  ROOT %d = f32[4] call(%x, %z, %y), to_apply=%wrapped
}}
"
    );
    let args = xyz();
    assert_eq!(run(&chain, &args), run(&call, &args));
}

#[test]
fn short_forms_equal_their_wrapped_ops() {
    let chain = "HloModule m

ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  z = f32[4] parameter(2)
  s = ((f32[4]), f32[4], u32[]) subtract-start(x)
  u = ((f32[4], f32[4]), f32[4], u32[]) subtract-update(s, y)
  d = f32[4] subtract-done(u)
  s.b = ((), f32[4], u32[]) clamp-start()
  u.b = ((f32[4], f32[4]), f32[4], u32[]) clamp-update(s.b, z, x)
  v.b = ((f32[4], f32[4], f32[4]), f32[4], u32[]) clamp-update(u.b, y)
  d.b = f32[4] clamp-done(v.b)
  ROOT o = (f32[4], f32[4]) tuple(d, d.b)
}
";
    let plain = "HloModule m

ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  z = f32[4] parameter(2)
  d = f32[4] subtract(x, y)
  d.b = f32[4] clamp(z, x, y)
  ROOT o = (f32[4], f32[4]) tuple(d, d.b)
}
";
    let args = xyz();
    assert_eq!(run(chain, &args), run(plain, &args));
}

#[test]
fn variadic_short_form_binding_nothing_at_the_start() {
    let chain = "HloModule m

ENTRY e {
  x = s32[5] parameter(0)
  i = s32[] parameter(1)
  s = ((), s32[3], u32[]) dynamic-slice-start(), dynamic_slice_sizes={3}
  u = ((s32[5]), s32[3], u32[]) dynamic-slice-update(s, x)
  v = ((s32[5], s32[]), s32[3], u32[]) dynamic-slice-update(u, i)
  ROOT d = s32[3] dynamic-slice-done(v)
}
";
    let plain = "HloModule m

ENTRY e {
  x = s32[5] parameter(0)
  i = s32[] parameter(1)
  ROOT d = s32[3] dynamic-slice(x, i), dynamic_slice_sizes={3}
}
";
    for start in [0, 1, 2, 7] {
        let args = [
            s32s("s32[5]", &[10, 20, 30, 40, 50]),
            s32s("s32[]", &[start]),
        ];
        assert_eq!(run(chain, &args), run(plain, &args));
    }
}
