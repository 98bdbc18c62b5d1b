//! Golden text tests.
//!
//! Every `tests/text/**/*.hlo` is parsed and printed back; the printed module followed by
//! the warnings (as `//` comments), or the error message, must equal the `.out` file beside
//! the input. Run with `UPDATE_EXPECT=1` to rewrite the `.out` files.
//!
//! Every input that parses is also checked to reach a fixpoint: printing, re-parsing and
//! re-printing gives the same text, in the module's own style and in XLA's default style.

#[path = "support/expect_files.rs"]
mod expect_files;

use expect_files::check_dir;

use hlo::{
    parse_module, parse_module_with, print_module, print_module_with, ParseOptions, PrintOptions,
};

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
    let n = check_dir("tests/text", render);
    println!("checked {n} golden files");
}
