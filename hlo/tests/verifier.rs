//! Verifier text tests: every `tests/verifier/*.hlo` is parsed and verified; the output
//! (`ok`, every error one per line as `file:line:col: error: comp/instr: message`, or the
//! parse error) must equal the `.out` file beside it. `UPDATE_EXPECT=1` rewrites the
//! `.out` files.

use std::fs;
use std::path::{Path, PathBuf};

use hlo::verifier::verify_parsed;
use hlo::{parse_module_with, ParseOptions};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "hlo"))
        .collect();
    v.sort();
    v
}

fn render(rel: &str, text: &str) -> String {
    let options = ParseOptions {
        file_name: Some(rel.to_string()),
        ..ParseOptions::default()
    };
    let parsed = match parse_module_with(text, &options) {
        Ok(p) => p,
        Err(e) => return format!("parse error: {e}\n"),
    };
    match verify_parsed(&parsed, text) {
        Ok(()) => "ok\n".to_string(),
        Err(errors) => errors.iter().map(|e| e.render(rel) + "\n").collect(),
    }
}

#[test]
fn verifier_text_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = inputs(&root.join("tests/verifier"));
    assert!(!files.is_empty(), "no inputs under tests/verifier");
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
            Ok(expected) => failures.push(format!(
                "{rel}:\n--- expected\n{expected}--- actual\n{actual}"
            )),
            Err(_) => failures.push(format!("{rel}: missing .out (run with UPDATE_EXPECT=1)")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
