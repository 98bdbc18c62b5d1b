//! Golden text tests: a file of cases, each an input and its expected output side by side.
//!
//! Cases are blocks separated by blank lines. A block holding a `----` line is a case: its
//! leading `#` lines are its header, the lines before `----` its input, the lines after it the
//! expected output. Other blocks are comments and are kept as they are. With
//! `UPDATE_EXPECT=1` the expected parts are rewritten from the actual outputs (bless mode), so
//! a reviewer reads the change as a diff.
//!
//! Shared by several test binaries (by `#[path]`), each using a subset of it.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::Path;

/// One case of a golden file.
#[derive(Debug, Clone)]
pub struct Case {
    /// `#` lines before the input, without the `# ` prefix.
    pub header: Vec<String>,
    /// The input text (lines joined with `\n`).
    pub input: String,
    /// The expected output (lines joined with `\n`).
    pub expected: String,
    /// 1-based line of the block's first line, for messages.
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

enum Block {
    Comment(String),
    Case(Case),
}

fn parse_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut current: Vec<(usize, &str)> = Vec::new();
    let flush = |current: &mut Vec<(usize, &str)>, blocks: &mut Vec<Block>| {
        if current.is_empty() {
            return;
        }
        let line = current[0].0;
        if let Some(sep) = current.iter().position(|(_, l)| *l == "----") {
            let head_len = current[..sep]
                .iter()
                .take_while(|(_, l)| l.starts_with('#'))
                .count();
            let header = current[..head_len]
                .iter()
                .map(|(_, l)| l.trim_start_matches('#').trim().to_string())
                .collect();
            let input = current[head_len..sep]
                .iter()
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n");
            let expected = current[sep + 1..]
                .iter()
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n");
            blocks.push(Block::Case(Case {
                header,
                input,
                expected,
                line,
            }));
        } else {
            blocks.push(Block::Comment(
                current
                    .iter()
                    .map(|(_, l)| *l)
                    .collect::<Vec<_>>()
                    .join("\n"),
            ));
        }
        current.clear();
    };
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            flush(&mut current, &mut blocks);
        } else {
            current.push((i + 1, l));
        }
    }
    flush(&mut current, &mut blocks);
    blocks
}

/// The cases of a golden file.
pub fn cases(text: &str) -> Vec<Case> {
    parse_blocks(text)
        .into_iter()
        .filter_map(|b| match b {
            Block::Case(c) => Some(c),
            Block::Comment(_) => None,
        })
        .collect()
}

/// Runs `f` on every case of `path`, compares outputs with the expected parts, and either
/// blesses the file (`UPDATE_EXPECT=1`) or panics listing every mismatch.
pub fn check_file(path: &Path, mut f: impl FnMut(&Case) -> String) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let blocks = parse_blocks(&text);
    let bless = std::env::var("UPDATE_EXPECT").is_ok_and(|v| v == "1");
    let mut out = String::new();
    let mut mismatches = Vec::new();
    let mut count = 0;
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match b {
            Block::Comment(c) => {
                let _ = writeln!(out, "{c}");
            }
            Block::Case(case) => {
                count += 1;
                let actual = f(case);
                for h in &case.header {
                    let _ = writeln!(out, "# {h}");
                }
                if !case.input.is_empty() {
                    let _ = writeln!(out, "{}", case.input);
                }
                let _ = writeln!(out, "----");
                if !actual.is_empty() {
                    let _ = writeln!(out, "{actual}");
                }
                if actual.trim_end() != case.expected.trim_end() {
                    mismatches.push(format!(
                        "{}:{}:\n  input:    {}\n  expected: {}\n  actual:   {}",
                        path.display(),
                        case.line,
                        case.input.replace('\n', "\n            "),
                        case.expected.replace('\n', "\n            "),
                        actual.replace('\n', "\n            ")
                    ));
                }
            }
        }
    }
    assert!(count > 0, "{}: no cases", path.display());
    if bless {
        if out != text {
            std::fs::write(path, out).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        return;
    }
    assert!(
        mismatches.is_empty(),
        "{} of {count} cases differ (run with UPDATE_EXPECT=1 to bless):\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// The files with extension `ext` directly under `dir`, sorted.
pub fn files(dir: &Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}
