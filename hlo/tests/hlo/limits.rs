//! Inputs built to hit worst cases: huge claimed shapes, deep nesting, many attributes,
//! many inline computations, long lines with many warnings. Each must parse or fail
//! promptly (work linear in the input) without panicking or overflowing the stack.

use hlo::{parse_module, parse_module_with, print_module, ParseOptions};

fn module(body: &str) -> String {
    format!("HloModule m\n\nENTRY e {{\n{body}\n}}\n")
}

#[test]
fn huge_claimed_shapes_allocate_nothing() {
    let text = module("  ROOT c = f32[1000000000000,1000000] constant({...})");
    let m = parse_module(&text).unwrap();
    assert!(print_module(&m).contains("f32[1000000000000,1000000] constant({...})"));
    let e = parse_module(&module("  ROOT c = f32[1000000000000] constant({1, 2})")).unwrap_err();
    assert!(e.message.contains("dimension 0 has 2 elements"), "{e}");
    let e = parse_module(&module("  ROOT c = s8[9223372036854775807,2] parameter(0)")).unwrap_err();
    assert!(e.message.contains("more elements or bytes"), "{e}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in [1_000, 100_000] {
        let literal = "{".repeat(depth) + &"}".repeat(depth);
        let e =
            parse_module(&module(&format!("  ROOT c = f32[1] constant({literal})"))).unwrap_err();
        assert!(e.message.contains("nests deeper"), "{e}");
        let shape = "(".repeat(depth) + &")".repeat(depth);
        let e = parse_module(&module(&format!("  ROOT p = {shape} parameter(0)"))).unwrap_err();
        assert!(e.message.contains("nesting deeper"), "{e}");
        // Verbatim values (an unknown module attribute's) are scanned without recursion.
        let raw = "[".repeat(depth) + &"]".repeat(depth);
        let text = module("  ROOT p = f32[] parameter(0)")
            .replace("HloModule m", &format!("HloModule m, x={raw}"));
        let m = parse_module(&text).unwrap();
        assert_eq!(
            print_module(&parse_module(&print_module(&m)).unwrap()),
            print_module(&m)
        );
    }
}

#[test]
fn many_attributes_and_warnings_are_linear() {
    let n = 20_000;
    let attrs: String = (0..n).map(|i| format!(", a{i}={i}")).collect();
    // Unknown module attributes: each kept with a warning.
    let text = module("  ROOT p = f32[] parameter(0)")
        .replace("HloModule m", &format!("HloModule m{attrs}"));
    let parsed = parse_module_with(&text, &ParseOptions::default()).unwrap();
    assert_eq!(parsed.warnings.len(), n);
    assert_eq!(parsed.warnings[n - 1].line, 1);
    // Unknown instruction attributes: an error at the first.
    let e = parse_module(&module(&format!("  ROOT p = f32[] parameter(0){attrs}"))).unwrap_err();
    assert!(
        e.message.starts_with("unknown attribute `a0` on parameter"),
        "{e}"
    );
    // An instruction holds at most one of each name the parser knows, so its attributes
    // are few; a repeated one is an error.
    let dup = module("  ROOT p = f32[] parameter(0), backend_config=\"a\", backend_config=\"b\"");
    assert!(parse_module(&dup)
        .unwrap_err()
        .message
        .contains("given twice"));
}

#[test]
fn many_inline_computations_on_one_line() {
    let n = 3_000;
    let mut body = String::from("  p = f32[4] parameter(0)\n");
    for i in 0..n {
        let prev = if i == 0 {
            "p".to_string()
        } else {
            format!("m{}", i - 1)
        };
        body.push_str(&format!(
            "  m{i} = f32[4] map({prev}), dimensions={{0}}, to_apply={{ x = f32[] parameter(0) ROOT y = f32[] negate(x) }}\n"
        ));
    }
    body.push_str(&format!("  ROOT r = f32[4] copy(m{})", n - 1));
    let m = parse_module(&module(&body)).unwrap();
    assert_eq!(m.computation_count(), n + 1);
    let printed = print_module(&m);
    assert!(
        printed.contains(&format!("%_.{}", n - 1)) || printed.contains(&format!("_.{} ", n - 1))
    );
    assert_eq!(print_module(&parse_module(&printed).unwrap()), printed);
}

#[test]
fn long_strings_and_lines() {
    let long = "x".repeat(1 << 20);
    let text = module(&format!(
        "  ROOT p = f32[] parameter(0), metadata={{op_name=\"{long}\"}}"
    ));
    let m = parse_module(&text).unwrap();
    assert_eq!(
        m.entry()
            .root_instr()
            .metadata()
            .unwrap()
            .op_name()
            .map(str::len),
        Some(1 << 20)
    );
    let text = module(&format!(
        "  ROOT p = f32[] parameter(0), metadata={{op_name=\"{long}}}"
    ));
    let e = parse_module(&text).unwrap_err();
    assert!(
        e.to_string().len() < 1000,
        "error display stays short on a 1 MB line"
    );
}

#[test]
fn many_one_line_computations() {
    let n = 5_000;
    let mut text = String::from("HloModule m\n\n");
    for i in 0..n {
        text.push_str(&format!("c{i} {{ ROOT p = f32[] parameter(0) }}\n"));
    }
    text.push_str(
        "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=c0\n}\n",
    );
    let m = parse_module(&text).unwrap();
    assert_eq!(m.computation_count(), n + 1);
    assert_eq!(m.entry().name(), "e");
}
