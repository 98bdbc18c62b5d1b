//! Golden text tests: cases of input and expected output side by side in one file.
//!
//! ```text
//! # run: hlo-transforms pass `dce` (tests/transforms/pass_golden.rs)
//! # Free comment lines start with `#` and come before the first case.
//!
//! ==== dead chain removed
//! # passes: dce
//! HloModule m
//! ...input lines, blank lines allowed...
//! ----
//! ...expected output lines, blank lines allowed...
//!
//! ==== next case
//! ```
//!
//! The first line is `# run: WHAT` (what the file exercises: the harness and the API or
//! command). A case starts at a `==== TITLE` line; the `# key: value` (or `# word`) lines
//! right after it are its header; its input runs to a line that is exactly `----`; its
//! expected output runs to the next `==== ` line or the end of the file. An input is kept
//! verbatim (whitespace-only lines included); trailing blank lines of an expected output
//! are not significant. With `UPDATE_EXPECT=1`,
//! [`check_file`] rewrites the expected parts from the actual outputs instead of failing.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The line that starts a case; the rest of the line is the case's title.
pub const CASE_MARKER: &str = "==== ";
/// The line that separates a case's input from its expected output.
pub const SEPARATOR: &str = "----";
/// The prefix of the file's first line.
pub const RUN_PREFIX: &str = "# run:";

/// One case of a golden file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The text after `==== `.
    pub title: String,
    /// Header lines after the title, without the `# ` prefix.
    pub header: Vec<String>,
    /// The input, verbatim (lines joined with `\n`).
    pub input: String,
    /// The expected output (lines joined with `\n`, trailing blank lines removed).
    pub expected: String,
    /// 1-based line of the `==== ` line, for messages.
    pub line: usize,
}

impl Case {
    /// The value of a `key: value` header line.
    pub fn header_value(&self, key: &str) -> Option<&str> {
        self.header.iter().find_map(|h| {
            h.strip_prefix(key)
                .and_then(|r| r.strip_prefix(':'))
                .map(str::trim)
        })
    }

    /// Whether a header line equals `word` or starts with `word:`.
    pub fn has_header(&self, word: &str) -> bool {
        self.header
            .iter()
            .any(|h| h == word || h.starts_with(&format!("{word}:")))
    }
}

/// A parsed golden file: its preamble (the `# run:` line and comments) and its cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldenFile {
    /// What the file exercises (the text after `# run:`).
    pub run: String,
    /// Every line before the first case, verbatim (the `# run:` line included).
    pub preamble: Vec<String>,
    /// The cases in file order.
    pub cases: Vec<Case>,
}

/// Why a golden file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

fn trim_trailing_blank(lines: &[&str]) -> String {
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(0, |i| i + 1);
    lines[..end].join("\n")
}

/// Parses golden-file text.
pub fn parse(text: &str) -> Result<GoldenFile, FormatError> {
    let lines: Vec<&str> = text.lines().collect();
    let run = lines
        .first()
        .and_then(|l| l.strip_prefix(RUN_PREFIX))
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .ok_or(FormatError {
            line: 1,
            message: "a golden file starts with `# run: WHAT` (what it exercises)".into(),
        })?;
    let first_case = lines
        .iter()
        .position(|l| l.starts_with(CASE_MARKER))
        .unwrap_or(lines.len());
    let preamble: Vec<String> = lines[..first_case].iter().map(|l| l.to_string()).collect();
    if let Some((i, l)) = preamble
        .iter()
        .enumerate()
        .find(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
    {
        return Err(FormatError {
            line: i + 1,
            message: format!("text before the first `==== ` case must be `#` comments: `{l}`"),
        });
    }
    let mut cases = Vec::new();
    let mut i = first_case;
    while i < lines.len() {
        let line = i + 1;
        let title = lines[i][CASE_MARKER.len()..].trim().to_string();
        i += 1;
        let mut header = Vec::new();
        while i < lines.len() && lines[i].starts_with('#') {
            header.push(lines[i].trim_start_matches('#').trim().to_string());
            i += 1;
        }
        let start = i;
        while i < lines.len() && lines[i] != SEPARATOR && !lines[i].starts_with(CASE_MARKER) {
            i += 1;
        }
        if i >= lines.len() || lines[i] != SEPARATOR {
            return Err(FormatError {
                line,
                message: format!("case `{title}` has no `----` line before its expected output"),
            });
        }
        let input = lines[start..i].join("\n");
        i += 1;
        let start = i;
        while i < lines.len() && !lines[i].starts_with(CASE_MARKER) {
            i += 1;
        }
        let expected = trim_trailing_blank(&lines[start..i]);
        cases.push(Case {
            title,
            header,
            input,
            expected,
            line,
        });
    }
    Ok(GoldenFile {
        run,
        preamble,
        cases,
    })
}

/// Prints a golden file with the given expected outputs (one per case, in order).
pub fn render(file: &GoldenFile, outputs: &[String]) -> String {
    let mut out = String::new();
    for l in &file.preamble {
        let _ = writeln!(out, "{l}");
    }
    for (k, case) in file.cases.iter().enumerate() {
        // One blank line between blocks.
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push('\n');
        }
        let _ = writeln!(out, "{CASE_MARKER}{}", case.title);
        for h in &case.header {
            let _ = writeln!(out, "# {h}");
        }
        if !case.input.is_empty() {
            let _ = writeln!(out, "{}", case.input);
        }
        let _ = writeln!(out, "{SEPARATOR}");
        let actual = outputs.get(k).unwrap_or(&case.expected);
        let actual = actual.trim_end_matches(['\n', ' ']);
        if !actual.is_empty() {
            let _ = writeln!(out, "{actual}");
        }
    }
    out
}

/// Whether bless mode is on (`UPDATE_EXPECT=1`).
pub fn bless_mode() -> bool {
    std::env::var("UPDATE_EXPECT").is_ok_and(|v| v == "1")
}

/// Reads and parses a golden file, panicking with the path and line on a format error.
pub fn read(path: &Path) -> GoldenFile {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `f` on every case of `path` and compares its output with the expected part.
/// In bless mode the file is rewritten with the actual outputs; otherwise a mismatch
/// panics listing every differing case (file:line, title, input, expected, actual).
pub fn check_file(path: &Path, mut f: impl FnMut(&Case) -> String) {
    let file = read(path);
    assert!(!file.cases.is_empty(), "{}: no cases", path.display());
    let outputs: Vec<String> = file.cases.iter().map(&mut f).collect();
    if bless_mode() {
        let text = render(&file, &outputs);
        let old = std::fs::read_to_string(path).unwrap_or_default();
        if text != old {
            std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        return;
    }
    let mismatches: Vec<String> = file
        .cases
        .iter()
        .zip(&outputs)
        .filter(|(c, a)| a.trim_end() != c.expected.trim_end())
        .map(|(c, a)| {
            format!(
                "{}:{}: {}\n  input:    {}\n  expected: {}\n  actual:   {}",
                path.display(),
                c.line,
                c.title,
                c.input.replace('\n', "\n            "),
                c.expected.replace('\n', "\n            "),
                a.replace('\n', "\n            ")
            )
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ (run with UPDATE_EXPECT=1 to bless):\n{}",
        mismatches.len(),
        file.cases.len(),
        mismatches.join("\n")
    );
}

/// The files with extension `ext` under `dir` (recursively), sorted by path.
pub fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, ext, out);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    let mut v = Vec::new();
    walk(dir, ext, &mut v);
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# run: a sample\n# comment\n\n==== first\n# key: v\n# flag\nin 1\n\nin 2\n----\nout 1\n\nout 2\n\n==== second\n----\n";

    #[test]
    fn parses_cases_headers_and_blank_lines() {
        let f = parse(SAMPLE).unwrap();
        assert_eq!(f.run, "a sample");
        assert_eq!(f.cases.len(), 2);
        let c = &f.cases[0];
        assert_eq!(c.title, "first");
        assert_eq!(c.header_value("key"), Some("v"));
        assert!(c.has_header("flag"));
        assert_eq!(c.input, "in 1\n\nin 2");
        assert_eq!(c.expected, "out 1\n\nout 2");
        assert_eq!(c.line, 4);
        assert_eq!(f.cases[1].input, "");
        assert_eq!(f.cases[1].expected, "");
    }

    #[test]
    fn render_round_trips() {
        let f = parse(SAMPLE).unwrap();
        let outs: Vec<String> = f.cases.iter().map(|c| c.expected.clone()).collect();
        let text = render(&f, &outs);
        assert_eq!(parse(&text).unwrap(), f);
        assert_eq!(text, render(&parse(&text).unwrap(), &outs));
    }

    #[test]
    fn render_writes_new_outputs() {
        let f = parse(SAMPLE).unwrap();
        let text = render(&f, &["new".to_string(), "x\ny".to_string()]);
        let g = parse(&text).unwrap();
        assert_eq!(g.cases[0].expected, "new");
        assert_eq!(g.cases[1].expected, "x\ny");
    }

    #[test]
    fn rejects_missing_run_line_and_separator() {
        assert_eq!(parse("==== a\nx\n----\n").unwrap_err().line, 1);
        let e = parse("# run: x\n\n==== a\nx\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("----"));
        assert!(parse("# run: x\nstray\n==== a\n----\n").is_err());
    }
}
