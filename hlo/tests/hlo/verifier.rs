//! Verifier text tests: every case of `tests/verifier/*.test` (testkit's format) is parsed
//! and verified; the output (`ok`, every error one per line as `file:line:col: error:
//! comp/instr: message`, or the parse error) must equal the expected part. The case's
//! title is the input's file name in messages; titles containing `/layout_sensitive_` are
//! verified with `VerifyOptions::layout_sensitive`. `UPDATE_EXPECT=1` blesses.

use std::path::Path;

use hlo::verifier::{verify_parsed_with, VerifyOptions};
use hlo::{parse_module_with, ParseOptions};
use testkit::golden;

fn render(rel: &str, text: &str) -> String {
    let options = ParseOptions {
        file_name: Some(rel.to_string()),
        ..ParseOptions::default()
    };
    let parsed = match parse_module_with(text, &options) {
        Ok(p) => p,
        Err(e) => return format!("parse error: {e}\n"),
    };
    // Files named `layout_sensitive_*.hlo` are verified with layouts.
    let options = VerifyOptions {
        layout_sensitive: rel.contains("/layout_sensitive_"),
    };
    match verify_parsed_with(&parsed, text, &options) {
        Ok(()) => "ok\n".to_string(),
        Err(errors) => errors.iter().map(|e| e.render(rel) + "\n").collect(),
    }
}

#[test]
fn verifier_text_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/verifier");
    for file in golden::files(&root, "test") {
        golden::check_file(&file, |case| {
            render(&case.title, &(case.input.clone() + "\n"))
        });
    }
}
