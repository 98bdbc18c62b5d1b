//! Verifier text tests: every `tests/verifier/*.hlo` is parsed and verified; the output
//! (`ok`, every error one per line as `file:line:col: error: comp/instr: message`, or the
//! parse error) must equal the `.out` file beside it. `UPDATE_EXPECT=1` rewrites the
//! `.out` files. Files named `layout_sensitive_*.hlo` are verified with
//! `VerifyOptions::layout_sensitive`.

#[path = "support/expect_files.rs"]
mod expect_files;

use expect_files::check_dir;

use hlo::verifier::{verify_parsed_with, VerifyOptions};
use hlo::{parse_module_with, ParseOptions};

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
    check_dir("tests/verifier", render);
}
