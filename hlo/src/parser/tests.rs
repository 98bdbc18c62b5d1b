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
        "error: parameter number must be >= 0",
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

#[test]
fn inferred_and_nested_instructions() {
    // No result shape: inferred from the operands.
    check(
        "  %a = f32[2] parameter(0)\n  ROOT %n = negate(%a)",
        "  %a = f32[2] parameter(0)\n  ROOT %n = f32[2] negate(%a)",
    );
    // Operands written as instructions become instructions of their own, before the user.
    check(
        "  ROOT %r = add(f32[2] parameter(0), negate(f32[2] parameter(1)))",
        "  %parameter.anon = f32[2] parameter(0)\n  %parameter.anon.1 = f32[2] parameter(1)\n  %negate.anon = f32[2] negate(f32[2] %parameter.anon.1)\n  ROOT %r = f32[2] add(f32[2] %parameter.anon, f32[2] %negate.anon)",
    );
    // A nested instruction's attributes end where the next operand starts.
    check(
        "  %p = (f32[2], s32[]) parameter(0)\n  ROOT %t = tuple(get-tuple-element(%p), index=1, %p)",
        "  %p = (f32[2], s32[]) parameter(0)\n  %get-tuple-element.anon = s32[] get-tuple-element(%p), index=1\n  ROOT %t = (s32[], (f32[2], s32[])) tuple(%get-tuple-element.anon, %p)",
    );
    // A scalar broadcast may leave out dimensions={}.
    check(
        "  %s = f32[] parameter(0)\n  ROOT %b = f32[3] broadcast(%s)",
        "  %s = f32[] parameter(0)\n  ROOT %b = f32[3] broadcast(%s), dimensions={}",
    );
    // Opcodes whose result is part of the operation need it written.
    assert_eq!(
        run("  %a = f32[4] parameter(0)\n  ROOT %r = reshape(%a)"),
        "error: the shape of reshape cannot be inferred: write its result shape"
    );
    assert_eq!(
        run("  ROOT %r = add(f32[2] parameter(0), f32[3] parameter(1))"),
        "error: cannot infer the shape of this add: operands 0 and 1 of add have different dimensions (f32[2] vs f32[3]); HLO has no implicit broadcast"
    );
    // `%a#0` is no operand syntax of XLA's: the `#` is not part of a name.
    assert!(
        run("  %a = (f32[2]) parameter(0)\n  ROOT %r = f32[2] negate(%a#0)").starts_with("error:")
    );
}

#[test]
fn nesting_depth_is_limited() {
    let mut body = String::from("  ROOT %r = ");
    for _ in 0..200 {
        body.push_str("negate(");
    }
    body.push_str("f32[] parameter(0)");
    for _ in 0..200 {
        body.push(')');
    }
    assert!(
        run(&body).starts_with("error: nesting deeper than"),
        "{}",
        run(&body)
    );
}

#[test]
fn unexpected_attributes() {
    assert_eq!(
        run("  %a = f32[] parameter(0)\n  ROOT %n = f32[] negate(%a), dimensions={0}"),
        "error: unexpected attribute \"dimensions\" (not taken by negate)"
    );
    // A name hloc does not know is kept verbatim (with a warning).
    check(
        "  %a = f32[] parameter(0)\n  ROOT %n = f32[] negate(%a), my_flag=3",
        "  %a = f32[] parameter(0)\n  ROOT %n = f32[] negate(%a), my_flag=3",
    );
}

#[test]
fn single_instruction_modules() {
    let m = parse_module("%m = f32[2] multiply(f32[2] %x, f32[2] %x)").unwrap();
    let entry = m.entry();
    assert_eq!(
        entry.parameters().len(),
        1,
        "one parameter per distinct name"
    );
    assert_eq!(entry.root_instr().name(), "m");
    let m = parse_module("f32[2] add(f32[2], f32[2])").unwrap();
    assert_eq!(m.entry().parameters().len(), 2);
    let e = parse_module("%m = f32[2] multiply(%x, %y)").unwrap_err();
    assert!(
        e.message.starts_with("Operand had no shape in HLO text"),
        "{e}"
    );
    let e = parse_module("%p = f32[2] parameter(-1)").unwrap_err();
    assert!(
        e.message.starts_with("parameter number must be >= 0"),
        "{e}"
    );
}

#[test]
fn module_header_and_roots() {
    let m = parse_module(
        "HloModule m:\nENTRY e {\n  a = f32[] constant(1)\n  b = f32[] constant(2)\n}\n",
    )
    .unwrap();
    assert_eq!(m.name(), "m");
    assert_eq!(
        m.entry().root_instr().name(),
        "b",
        "the last instruction is the root"
    );
    // Old Mac line ends end a `//` comment.
    let m =
        parse_module("HloModule m\r// note\rENTRY e {\r  ROOT c = f32[] constant(1)\r}").unwrap();
    assert_eq!(m.entry().root_instr().name(), "c");
}

#[test]
fn unsigned_literals_wrap_only_for_u64() {
    check(
        "  ROOT %c = u64[2] constant({-1, 7})",
        "  ROOT %c = u64[2] constant({18446744073709551615, 7})",
    );
    assert_eq!(
        run("  ROOT %c = u32[] constant(-1)"),
        "error: value -1 is out of range for u32"
    );
    assert!(run("  ROOT %c = u64[] constant(-9223372036854775809)").starts_with("error:"));
}

#[test]
fn checked_attribute_values() {
    for (attr, message) in [
        (
            "sharding={devices=[2]0,1,2}",
            "error: sharding devices=[2] has 2 tiles but lists 3 device ids",
        ),
        (
            "sharding={devices=[2,2]0,1,1,2}",
            "error: sharding lists device 1 twice",
        ),
        (
            "sharding={devices=[4]<=[2,2]T(0,0)}",
            "error: the iota transpose T(0,0) is not a permutation of its 2 dimensions",
        ),
    ] {
        assert_eq!(
            run(&format!("  ROOT %p = f32[4] parameter(0), {attr}")),
            message
        );
    }
    check(
        "  ROOT %p = f32[4] parameter(0), sharding={devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
        "  ROOT %p = f32[4] parameter(0), sharding={devices=[2,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
    );
}
