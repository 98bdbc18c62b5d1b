//! Golden text tests.
//!
//! Every `tests/text/**/*.hlo` is parsed and printed back; the printed module followed by
//! the warnings (as `//` comments), or the error message, must equal the `.out` file beside
//! the input. Run with `UPDATE_EXPECT=1` to rewrite the `.out` files.
//!
//! Every input that parses is also checked to reach a fixpoint: printing, re-parsing and
//! re-printing gives the same text, in the module's own style and in XLA's default style.

use std::fs;
use std::path::{Path, PathBuf};

use hlo::{
    parse_module, parse_module_with, print_module, print_module_with, ParseOptions, PrintOptions,
};

fn inputs(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            inputs(&p, out);
        } else if p.extension().is_some_and(|e| e == "hlo") {
            out.push(p);
        }
    }
}

/// Parse -> print -> parse -> print gives the same text.
fn assert_fixpoint(name: &str, printed: &str, options: &PrintOptions) {
    let again = parse_module(printed).unwrap_or_else(|e| {
        panic!("{name}: printed text does not parse:\n{e}\n--- text ---\n{printed}")
    });
    let reprinted = print_module_with(&again, options);
    assert_eq!(reprinted, printed, "{name}: print/parse is not a fixpoint");
}

fn render(rel: &str, text: &str) -> String {
    let options = ParseOptions {
        file_name: Some(rel.to_string()),
        ..ParseOptions::default()
    };
    match parse_module_with(text, &options) {
        Ok(parsed) => {
            let style = parsed.module.source_style();
            let printed = print_module(&parsed.module);
            assert_fixpoint(rel, &printed, &style);
            let canonical = print_module_with(&parsed.module, &PrintOptions::default());
            assert_fixpoint(rel, &canonical, &PrintOptions::default());
            let mut out = printed;
            for w in &parsed.warnings {
                out.push_str(&format!("// {w}\n"));
            }
            out
        }
        Err(e) => format!("{e}\n"),
    }
}

fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  expected: {x}\n  actual:   {y}", i + 1);
        }
    }
    format!(
        "one text is a prefix of the other ({} vs {} lines)",
        a.lines().count(),
        b.lines().count()
    )
}

#[test]
fn golden_text_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    inputs(&root.join("tests/text"), &mut files);
    assert!(!files.is_empty(), "no inputs under tests/text");
    let bless = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let actual = render(&rel, &text);
        let expected_path = path.with_extension("out");
        if bless {
            fs::write(&expected_path, &actual).unwrap_or_else(|e| panic!("{rel}: {e}"));
            continue;
        }
        match fs::read_to_string(&expected_path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => {
                failures.push(format!("{rel}: {}", first_difference(&expected, &actual)))
            }
            Err(_) => failures.push(format!(
                "{rel}: missing {} (run with UPDATE_EXPECT=1)",
                expected_path.display()
            )),
        }
    }
    println!("checked {} golden files", files.len());
    assert!(
        failures.is_empty(),
        "golden mismatches:\n{}",
        failures.join("\n")
    );
}
