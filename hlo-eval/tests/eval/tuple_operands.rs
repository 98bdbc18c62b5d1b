//! Tuple-element operands (`%s#1#0`, as current XLA prints loop bodies): a module written
//! with them evaluates like the same module written with explicit get-tuple-elements.

use crate::support::{f32s, get_f32, get_s32, part};
use hlo::Literal;
use hlo_eval::evaluate;

/// A loop over a nested state `(i, (acc, step))`: five times `acc += step; step *= 2`.
const SHORTHAND: &str = r#"HloModule loop

%cond (s: (s32[], (f32[3], f32[3]))) -> pred[] {
  %s = (s32[], (f32[3]{0}, f32[3]{0})) parameter(0)
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%s#0, %n), direction=LT
}

%body (s: (s32[], (f32[3], f32[3]))) -> (s32[], (f32[3], f32[3])) {
  %s = (s32[], (f32[3]{0}, f32[3]{0})) parameter(0)
  %one = s32[] constant(1)
  %i = s32[] add(%s#0, %one)
  %acc = f32[3]{0} add(%s#1#0, %s#1#1)
  %step = f32[3]{0} add(%s#1#1, %s#1#1)
  %inner = (f32[3]{0}, f32[3]{0}) tuple(%acc, %step)
  ROOT %next = (s32[], (f32[3]{0}, f32[3]{0})) tuple(%i, %inner)
}

ENTRY %main (x: f32[3], d: f32[3]) -> (f32[3], s32[]) {
  %x = f32[3]{0} parameter(0)
  %d = f32[3]{0} parameter(1)
  %zero = s32[] constant(0)
  %pair = (f32[3]{0}, f32[3]{0}) tuple(%x, %d)
  %init = (s32[], (f32[3]{0}, f32[3]{0})) tuple(%zero, %pair)
  %w = (s32[], (f32[3]{0}, f32[3]{0})) while(%init), condition=%cond, body=%body
  ROOT %out = (f32[3]{0}, s32[]) tuple(%w#1#0, %w#0)
}
"#;

/// The same module with every get-tuple-element written out.
const EXPLICIT: &str = r#"HloModule loop

%cond (s: (s32[], (f32[3], f32[3]))) -> pred[] {
  %s = (s32[], (f32[3]{0}, f32[3]{0})) parameter(0)
  %n = s32[] constant(5)
  %i0 = s32[] get-tuple-element(%s), index=0
  ROOT %lt = pred[] compare(%i0, %n), direction=LT
}

%body (s: (s32[], (f32[3], f32[3]))) -> (s32[], (f32[3], f32[3])) {
  %s = (s32[], (f32[3]{0}, f32[3]{0})) parameter(0)
  %one = s32[] constant(1)
  %i0 = s32[] get-tuple-element(%s), index=0
  %i = s32[] add(%i0, %one)
  %pair = (f32[3]{0}, f32[3]{0}) get-tuple-element(%s), index=1
  %acc0 = f32[3]{0} get-tuple-element(%pair), index=0
  %step0 = f32[3]{0} get-tuple-element(%pair), index=1
  %acc = f32[3]{0} add(%acc0, %step0)
  %step = f32[3]{0} add(%step0, %step0)
  %inner = (f32[3]{0}, f32[3]{0}) tuple(%acc, %step)
  ROOT %next = (s32[], (f32[3]{0}, f32[3]{0})) tuple(%i, %inner)
}

ENTRY %main (x: f32[3], d: f32[3]) -> (f32[3], s32[]) {
  %x = f32[3]{0} parameter(0)
  %d = f32[3]{0} parameter(1)
  %zero = s32[] constant(0)
  %pair = (f32[3]{0}, f32[3]{0}) tuple(%x, %d)
  %init = (s32[], (f32[3]{0}, f32[3]{0})) tuple(%zero, %pair)
  %w = (s32[], (f32[3]{0}, f32[3]{0})) while(%init), condition=%cond, body=%body
  %state = (f32[3]{0}, f32[3]{0}) get-tuple-element(%w), index=1
  %acc = f32[3]{0} get-tuple-element(%state), index=0
  %count = s32[] get-tuple-element(%w), index=0
  ROOT %out = (f32[3]{0}, s32[]) tuple(%acc, %count)
}
"#;

fn run(text: &str, args: &[Literal]) -> Literal {
    let m = hlo::parse_module(text).expect("module parses");
    if let Err(errors) = hlo::verifier::verify(&m) {
        panic!("{errors:?}");
    }
    evaluate(&m, args).expect("evaluates")
}

#[test]
fn tuple_element_operands_evaluate_like_get_tuple_elements() {
    let args = [
        f32s("f32[3]", &[1.0, -2.0, 0.5]),
        f32s("f32[3]", &[1.0, 0.25, -3.0]),
    ];
    let short = run(SHORTHAND, &args);
    let long = run(EXPLICIT, &args);
    assert_eq!(short, long);
    // acc = x + d * (1 + 2 + 4 + 8 + 16) after five iterations.
    assert_eq!(get_f32(part(&short, 0)), [32.0, 5.75, -92.5]);
    assert_eq!(get_s32(part(&short, 1)), [5]);
    // The printed module (explicit get-tuple-elements) evaluates the same.
    let printed = hlo::print_module(&hlo::parse_module(SHORTHAND).expect("parses"));
    assert_eq!(run(&printed, &args), short);
}
