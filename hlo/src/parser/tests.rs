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
        "  ROOT %p = f32[4] parameter(0), backend_config=",
        "error: expected a quoted string, found `}`",
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
    // `%a#0` selects a tuple element (see `tuple_element_operands`).
    check(
        "  %a = (f32[2]) parameter(0)\n  ROOT %r = f32[2] negate(%a#0)",
        "  %a = (f32[2]) parameter(0)\n  %a_0 = f32[2] get-tuple-element(%a), index=0\n  ROOT %r = f32[2] negate(%a_0)",
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
    // A name no opcode takes is an error too, as in XLA: a misspelled attribute must not
    // leave the op with its default.
    check(
        "  %a = f32[] parameter(0)\n  ROOT %n = f32[] negate(%a), my_flag=3",
        "error: unknown attribute `my_flag` on negate (XLA's parser rejects it too; \
         free-form values belong in backend_config or frontend_attributes)",
    );
    check(
        "  %a = f32[8] parameter(0)\n  ROOT %t = (f32[2], s32[2]) topk(%a), k=2, largst=false",
        "error: unknown attribute `largst` on topk; did you mean `largest`? (XLA's parser \
         rejects it too; free-form values belong in backend_config or frontend_attributes)",
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

#[test]
fn tuple_element_operands() {
    // One get-tuple-element per `#N` step, made before its first user and shared by later
    // uses of the same path; a longer path reuses the steps of a shorter one.
    check(
        "  %p = (f32[2], (s32[], f32[])) parameter(0)\n  %a = f32[] negate(%p#1#1)\n  %b = (s32[], f32[]) tuple(%p#1)\n  ROOT %c = s32[] add(%p#1#0, %p#1#0)",
        "  %p = (f32[2], (s32[], f32[])) parameter(0)\n  %p_1 = (s32[], f32[]) get-tuple-element(%p), index=1\n  %p_1_1 = f32[] get-tuple-element(%p_1), index=1\n  %a = f32[] negate(%p_1_1)\n  %b = (s32[], f32[]) tuple(%p_1)\n  %p_1_0 = s32[] get-tuple-element(%p_1), index=0\n  ROOT %c = s32[] add(%p_1_0, %p_1_0)",
    );
    // Without sigils, with the operand's shape written (checked against the element's).
    check(
        "  p = (f32[2]{0}, s32[]) parameter(0)\n  ROOT n = s32[] negate(s32[] p#1)",
        "  p = (f32[2]{0}, s32[]) parameter(0)\n  p_1 = s32[] get-tuple-element((f32[2]{0}, s32[]) p), index=1\n  ROOT n = s32[] negate(s32[] p_1)",
    );
    // The written shape may differ from the element's in layout only.
    check(
        "  %p = (f32[2,3]{1,0}) parameter(0)\n  ROOT %n = f32[2,3]{0,1} negate(f32[2,3]{0,1} %p#0)",
        "  %p = (f32[2,3]{1,0}) parameter(0)\n  %p_0 = f32[2,3]{1,0} get-tuple-element((f32[2,3]{1,0}) %p), index=0\n  ROOT %n = f32[2,3]{0,1} negate(f32[2,3]{1,0} %p_0)",
    );
    // Any tuple-shaped instruction may be the base, and the element's shape decides an
    // inferred result shape.
    check(
        "  %x = f32[3] parameter(0)\n  %t = tuple(%x, %x)\n  ROOT %s = add(%t#0, %t#1)",
        "  %x = f32[3] parameter(0)\n  %t = (f32[3], f32[3]) tuple(%x, %x)\n  %t_0 = f32[3] get-tuple-element(%t), index=0\n  %t_1 = f32[3] get-tuple-element(%t), index=1\n  ROOT %s = f32[3] add(%t_0, %t_1)",
    );
    // A written name wins over a generated one, even when written after the use.
    check(
        "  %p = (f32[], f32[]) parameter(0)\n  %n = f32[] negate(%p#0)\n  %p_0 = f32[] abs(%n)\n  ROOT %r = f32[] add(%p_0, %p#1)",
        "  %p = (f32[], f32[]) parameter(0)\n  %p_0.1 = f32[] get-tuple-element(%p), index=0\n  %n = f32[] negate(%p_0.1)\n  %p_0 = f32[] abs(%n)\n  %p_1 = f32[] get-tuple-element(%p), index=1\n  ROOT %r = f32[] add(%p_0, %p_1)",
    );
    assert_eq!(
        run("  %p = (f32[], f32[]) parameter(0)\n  ROOT %n = f32[] negate(%p#2)"),
        "error: tuple index 2 is out of range: `p` has 2 elements"
    );
    assert_eq!(
        run("  %p = f32[] parameter(0)\n  ROOT %n = f32[] negate(%p#0)"),
        "error: `#0` selects a tuple element, but `p` is f32[], not a tuple"
    );
    assert_eq!(
        run("  %p = (f32[], s32[]) parameter(0)\n  ROOT %n = f32[] negate(f32[] %p#1)"),
        "error: operand `p#1` is declared as f32[] but has shape s32[]"
    );
}

/// Two computations: `while` loops whose body and condition read the loop state with
/// `%s#N` (the parameter renamed in the second computation, as XLA's parser does).
const LOOP: &str = "HloModule loop

%cond (s: (s32[], f32[3])) -> pred[] {
  %s = (s32[], f32[3]{0}) parameter(0)
  %ten = s32[] constant(10)
  ROOT %lt = pred[] compare(%s#0, %ten), direction=LT
}

%body (s: (s32[], f32[3])) -> (s32[], f32[3]) {
  %s = (s32[], f32[3]{0}) parameter(0)
  %one = s32[] constant(1)
  %i = s32[] add(%s#0, %one)
  %x = f32[3]{0} add(%s#1, %s#1)
  ROOT %next = (s32[], f32[3]{0}) tuple(%i, %x)
}

ENTRY %main (x0: f32[3]) -> f32[3] {
  %x0 = f32[3]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[3]{0}) tuple(%zero, %x0)
  %w = (s32[], f32[3]{0}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[3]{0} negate(%w#1)
}
";

#[test]
fn tuple_element_operands_round_trip() {
    let m = parse_module(LOOP).expect("parses");
    crate::verifier::verify(&m).expect("verifies");
    // Each computation has its own steps; names stay unique in the module.
    let names: Vec<&str> = m
        .computations()
        .flat_map(|(_, c)| c.instructions().map(|(_, i)| i.name()))
        .collect();
    for want in ["s_0", "s.1", "s_0.1", "s_1", "w_1"] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    // Printed with explicit get-tuple-elements, which parse back to the same module.
    let printed = print_module(&m);
    assert!(!printed.contains('#'), "{printed}");
    assert_eq!(parse_module(&printed).expect("printed parses"), m);
}

#[test]
fn tuple_element_operands_equal_explicit_get_tuple_elements() {
    // The same module with the get-tuple-elements written out, named as the parser names
    // them.
    let explicit = LOOP
        .replace(
            "  ROOT %lt = pred[] compare(%s#0, %ten)",
            "  %s_0 = s32[] get-tuple-element(%s), index=0\n  ROOT %lt = pred[] compare(%s_0, %ten)",
        )
        .replace(
            "  %i = s32[] add(%s#0, %one)\n  %x = f32[3]{0} add(%s#1, %s#1)",
            "  %s_0.1 = s32[] get-tuple-element(%s), index=0\n  %i = s32[] add(%s_0.1, %one)\n  %s_1 = f32[3]{0} get-tuple-element(%s), index=1\n  %x = f32[3]{0} add(%s_1, %s_1)",
        )
        .replace(
            "  ROOT %out = f32[3]{0} negate(%w#1)",
            "  %w_1 = f32[3]{0} get-tuple-element(%w), index=1\n  ROOT %out = f32[3]{0} negate(%w_1)",
        );
    assert!(!explicit.contains('#'), "{explicit}");
    assert_eq!(
        parse_module(LOOP).expect("shorthand parses"),
        parse_module(&explicit).expect("explicit parses")
    );
}

#[test]
fn tuple_element_operands_never_panic() {
    let bases = [
        "  %p = (f32[], (s32[], f32[2])) parameter(0)\n",
        "  %p = () parameter(0)\n",
        "  %p = f32[] parameter(0)\n",
        "",
    ];
    let operands = [
        "%p#",
        "%p##0",
        "%p#0#",
        "%p#1#1#0",
        "%p#0x1",
        "%p#1.5",
        "%p#1e3",
        "%p#-0",
        "%p#+1",
        "%p#00",
        "%p#1#01",
        "p#1#1",
        "%p#99999999999999999999999999999999999999999",
        "#0",
        "%#0",
        "%p#0(",
        "%p#1#1 %p",
        "f32[] %p#0",
        "f32[2] %p#1#1",
        "(s32[], f32[2]) p#1",
        "%p#\u{e9}",
        "%p#0/*c*/#1",
    ];
    for base in bases {
        for op in operands {
            for user in [
                format!("{base}  ROOT %r = negate({op})"),
                format!("{base}  ROOT %r = tuple({op}, {op})"),
                format!("{base}  ROOT %r = f32[] call({op}), to_apply={{ ROOT %x = f32[] parameter(0) }}"),
            ] {
                // Any answer but a panic.
                let _ = run_lenient(&user);
            }
        }
    }
    // A single instruction's operands become parameters: no tuple-element syntax there.
    assert!(parse_module("%m = f32[2] negate(f32[2] %x#0)").is_err());
}

/// Like `run`, without requiring the result to print back.
fn run_lenient(body: &str) -> bool {
    let text = format!("HloModule t\n\nENTRY %e {{\n{body}\n}}\n");
    match parse_module(&text) {
        Ok(m) => {
            let _ = parse_module(&print_module(&m));
            true
        }
        Err(_) => false,
    }
}
