//! Text tests as files: every `.hlo` input under a directory (recursively, in name order)
//! is rendered, and the text must equal the `.out` file beside it. `UPDATE_EXPECT=1`
//! rewrites the `.out` files instead. Included by path from the tests that use it.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.hlo` file below `dir`, sorted.
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

/// The first line where `expected` and `actual` differ.
fn first_difference(expected: &str, actual: &str) -> String {
    for (i, (x, y)) in expected.lines().zip(actual.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  expected: {x}\n  actual:   {y}", i + 1);
        }
    }
    format!(
        "one text is a prefix of the other ({} vs {} lines)",
        expected.lines().count(),
        actual.lines().count()
    )
}

/// Checks (or blesses) every input under `dir` (relative to the crate) against its `.out`
/// file; `render(relative path, text)` produces the actual output. Returns the number of
/// files checked; panics listing every mismatch.
pub fn check_dir(dir: &str, render: impl Fn(&str, &str) -> String) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    inputs(&root.join(dir), &mut files);
    assert!(!files.is_empty(), "no inputs under {dir}");
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
            Err(_) => failures.push(format!("{rel}: missing .out (run with UPDATE_EXPECT=1)")),
        }
    }
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
    files.len()
}
