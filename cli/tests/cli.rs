//! End-to-end tests of the `hloc` binary: each case in tests/cli/*.test (testkit's golden
//! format) is a command line (single quotes group words), optional `# stdin: ...` and
//! `# feature: z3` header lines, and the expected stdout, stderr (prefixed `stderr: `) and
//! exit code. Commands run from the repository root with a compile cache of their own
//! (`HLOC_CACHE_DIR` under cargo's target tmp dir). Bless with `UPDATE_EXPECT=1`.

use testkit::golden;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Splits a command line on spaces, keeping single-quoted text together.
fn split_args(line: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in line.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    args.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        args.push(cur);
    }
    args
}

fn run_case(case: &golden::Case) -> String {
    if case.header_value("feature") == Some("z3") && !cfg!(feature = "z3") {
        return case.expected.clone();
    }
    let args = split_args(case.input.trim());
    assert_eq!(
        args.first().map(String::as_str),
        Some("hloc"),
        "line {}: command must start with hloc",
        case.line
    );
    let stdin: Vec<&str> = case
        .header
        .iter()
        .filter_map(|h| h.strip_prefix("stdin: "))
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hloc"))
        .args(&args[1..])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env(
            "HLOC_CACHE_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hloc runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.join("\n").as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("hloc finishes");
    let mut text = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        text.push_str(&format!("\nstderr: {line}").replace("stderr: \n", "stderr:\n"));
    }
    text.push_str(&format!("\nexit: {}", out.status.code().unwrap_or(-1)));
    text.trim_start_matches('\n').to_string()
}

#[test]
fn cli_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    for path in golden::files(&dir, "test") {
        golden::check_file(&path, run_case);
    }
}
