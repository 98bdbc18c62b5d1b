//! Parser unit tests through one helper: `check(body, expect)` parses an entry computation
//! made of `body` and compares the printed body (or the error message) with `expect`.

use crate::{parse_module, print_module};

/// Parses `ENTRY e {\n<body>\n}` and returns the printed instructions, or `error: msg`.
fn run(body: &str) -> String {
    let text = format!("HloModule t\n\nENTRY %e {{\n{body}\n}}\n");
    match parse_module(&text) {
        Ok(m) => {
            let printed = print_module(&m);
            let again = parse_module(&printed).expect("printed text parses");
            assert_eq!(print_module(&again), printed, "fixpoint");
            let start = printed.find("{\n").map_or(0, |i| i + 2);
            let end = printed.rfind("\n}").unwrap_or(printed.len());
            printed[start..end].to_string()
        }
        Err(e) => format!("error: {}", e.message),
    }
}

fn check(body: &str, expect: &str) {
    assert_eq!(run(body), expect, "input:\n{body}");
}

#[test]
fn literals() {
    check(
        "  ROOT %c = (s32[], (f32[2]{0}, pred[])) constant((1, ({-0, 2.5}, true)))",
        "  ROOT %c = (s32[], (f32[2]{0}, pred[])) constant((1, ({-0, 2.5}, true)))",
    );
    check(
        "  ROOT %c = f32[] constant({...})",
        "  ROOT %c = f32[] constant({...})",
    );
    check(
        "  ROOT %c = f32[2]{0} constant({1, ...})",
        "  ROOT %c = f32[2]{0} constant({...})",
    );
    check(
        "  ROOT %c = f32[] constant(-nan(0x7))",
        "  ROOT %c = f32[] constant(-nan(0x7))",
    );
    check(
        "  ROOT %c = f32[] constant(nan(0x0))",
        "error: invalid NaN payload",
    );
    check(
        "  ROOT %c = f8e4m3fn[] constant(nan(0x1))",
        "error: NaN payload 0x1 is not valid for f8e4m3fn",
    );
    check(
        "  ROOT %c = s64[] constant(99999999999999999999)",
        "error: value 99999999999999999999 is out of range for s64",
    );
    check(
        "  ROOT %c = f64[] constant(1e999)",
        "error: number out of range for a double",
    );
    check(
        "  ROOT %c = s32[] constant(1.5)",
        "error: expected an integer for s32",
    );
    check(
        "  ROOT %c = f32[] constant(true)",
        "error: boolean value is not valid for f32",
    );
    check(
        "  ROOT %c = f32[2,2]{1,0} constant({1, 2, 3, 4})",
        "error: expected '{' (values belong at nesting level 2), found `1`",
    );
    check(
        "  ROOT %c = s32[2]{0} constant({1, 2, 3})",
        "error: too many elements in the minor dimension (expected 2)",
    );
    check(
        "  ROOT %c = token[] constant(1)",
        "error: token constants are not supported",
    );
    check(
        "  ROOT %c = c64[] constant((1, 2, 3))",
        "error: expected ')' after a complex value, found `,`",
    );
}

#[test]
fn operands_and_shapes() {
    // A declared operand shape may differ in layout; the printer shows the operand's own.
    check(
        "  %p = f32[2] parameter(0)\n  ROOT %n = f32[2] negate(f32[2]{0} %p)",
        "  %p = f32[2] parameter(0)\n  ROOT %n = f32[2] negate(f32[2] %p)",
    );
    check(
        "  %p = (f32[2]{0}, s32[]) parameter(0)\n  ROOT %g = s32[] get-tuple-element((f32[2]{0}, s32[]) %p), index=1",
        "  %p = (f32[2]{0}, s32[]) parameter(0)\n  ROOT %g = s32[] get-tuple-element((f32[2]{0}, s32[]) %p), index=1",
    );
    check(
        "  %p = f32[2] parameter(0)\n  ROOT %n = f32[2] negate(f32[2] %p %p)",
        "error: expected ',' or ')' after an operand, found `p`",
    );
    check(
        "  ROOT %p = f32[-1] parameter(0)",
        "error: dimension sizes must not be negative",
    );
    check(
        "  ROOT %p = token[2] parameter(0)",
        "error: token shapes have no dimensions",
    );
    check(
        "  ROOT %p = f32[2] parameter(-1)",
        "error: parameter numbers must not be negative",
    );
    check(
        "  ROOT %p = f32[2]{0:T(2)(*)L(2)#(u8)*(u16)E(8)SC(0:1)M(4)} parameter(0)",
        "  ROOT %p = f32[2]{0:T(2)(*)L(2)#(u8)*(u16)E(8)SC(0:1)M(4)} parameter(0)",
    );
}

#[test]
fn attributes() {
    check(
        "  %p = f32[4,4] parameter(0)\n  %z = f32[] constant(0)\n  ROOT %r = f32[5,3] pad(%p, %z), padding=0_1x-1_0",
        "  %p = f32[4,4] parameter(0)\n  %z = f32[] constant(0)\n  ROOT %r = f32[5,3] pad(%p, %z), padding=0_1x-1_0",
    );
    check(
        "  %p = f32[4] parameter(0), metadata={op_name=\"a\", future={x=\"}\"} source_line=3}",
        "  ROOT %p = f32[4] parameter(0), metadata={op_name=\"a\" future={x=\"}\"} source_line=3}",
    );
    check(
        "  ROOT %p = f32[4] parameter(0), frontend_attributes={\"quoted key\"=\"v\", k={\"a\": \"}\"}}",
        "  ROOT %p = f32[4] parameter(0), frontend_attributes={\"quoted key\"=\"v\",k={\"a\": \"}\"}}",
    );
    check(
        "  ROOT %p = f32[4] parameter(0), backend_config=\"tab\\there \\\"q\\\" \\303\\251\"",
        "  ROOT %p = f32[4] parameter(0), backend_config=\"tab\\there \\\"q\\\" \\303\\251\"",
    );
    check(
        "  ROOT %p = f32[4] parameter(0), backend_config=\"bad \\q\"",
        "error: unknown escape sequence",
    );
    check(
        "  ROOT %p = f32[4] parameter(0), x=",
        "error: expected a value",
    );
    check(
        "  %p = f32[4] parameter(0)\n  ROOT %n = f32[4] negate(%p), control-predecessors={%nope}",
        "error: instruction `nope` is not defined",
    );
    check(
        "  %p = f32[4] parameter(0)\n  ROOT %c = pred[4] compare(%p, %p), direction=SIDEWAYS",
        "error: expected a comparison direction, found `SIDEWAYS`",
    );
}

#[test]
fn depth_limit() {
    let deep = "(".repeat(200) + "f32[]" + &")".repeat(200);
    assert_eq!(
        run(&format!("  ROOT %p = {deep} parameter(0)")),
        "error: nesting deeper than 128 levels"
    );
    let mut inline = String::from("  ROOT %r = f32[] call(), to_apply=");
    for _ in 0..200 {
        inline.push_str("{ ROOT %x = f32[] call(), to_apply=");
    }
    assert_eq!(run(&inline), "error: nesting deeper than 128 levels");
}

#[test]
fn scalar_with_empty_layout() {
    // XLA accepts `{}` as a scalar's layout and, like XLA, the printer omits it.
    check(
        "  %p = f32[]{} parameter(0)\n  ROOT %n = f32[]{} negate(f32[]{} %p)",
        "  %p = f32[] parameter(0)\n  ROOT %n = f32[] negate(f32[] %p)",
    );
    // An empty layout on an array is not a permutation of its dimensions.
    check(
        "  ROOT %p = f32[2]{} parameter(0)",
        "error: layout {} is not a permutation of the 1 dimensions",
    );
}
