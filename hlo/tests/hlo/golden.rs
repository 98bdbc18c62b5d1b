//! Golden text tests of the parser and printer: every case of `tests/text/**/*.test`
//! (testkit's format) is parsed and printed back; the printed module followed by the
//! warnings (as `//` comments), or the error message, must equal the expected part. The
//! case's title is the input's file name in messages. `UPDATE_EXPECT=1` blesses.
//!
//! Every input that parses is also checked to reach a fixpoint: printing, re-parsing and
//! re-printing gives the same text, in the module's own style and in XLA's default style.

use std::path::Path;

use hlo::{
    parse_module, parse_module_with, print_module, print_module_with, ParseOptions, PrintOptions,
};
use testkit::golden;

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

#[test]
fn golden_text_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/text");
    let files = golden::files(&root, "test");
    assert!(!files.is_empty());
    for file in files {
        // Inputs were whole files: they end with a newline.
        golden::check_file(&file, |case| {
            render(&case.title, &(case.input.clone() + "\n"))
        });
    }
}

/// `//` comments may end at a lone carriage return (old Mac line ends), as XLA's lexer
/// allows. Kept here rather than in a golden file, whose lines cannot hold a lone `\r`.
#[test]
fn lone_carriage_returns_end_comments() {
    let text = "HloModule cr:\r// a comment that ends at a carriage return\rENTRY c1 {\r  ROOT c = f32[1]{0} constant({1}) // another\r}\r";
    let want = "HloModule cr\n\nENTRY c1 {\n  ROOT c = f32[1]{0} constant({1})\n}\n\n";
    assert_eq!(render("comments_cr.hlo", text), want);
}
