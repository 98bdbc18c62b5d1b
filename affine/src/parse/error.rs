//! Parse errors: [`ParseError`] with its rendering (line:column, the source line and a
//! caret), and the position-only error the lexer and parser raise before the source line is
//! attached.

use std::fmt::Write;

use thiserror::Error;

/// Widest part of a source line an error message shows.
pub(super) const SNIPPET_WIDTH: usize = 100;

/// A syntax or meaning error, with the 1-based line and column (in characters) it points at.
///
/// `Display` renders `line:column: message`, then the source line, then a caret under the
/// offending character; [`ParseError::render`] adds an optional file name.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{}", render_error(None, *.line, *.column, .message, .source_line.as_str()))]
pub struct ParseError {
    /// Line of the offending character, from 1.
    pub line: usize,
    /// Column of the offending character, from 1, counted in characters.
    pub column: usize,
    /// What is wrong, e.g. ``unknown variable `d7` ``.
    pub message: String,
    /// The text of line `line`, for rendering.
    source_line: String,
}

impl ParseError {
    /// The error as `file:line:column: message`, the source line and a caret under the
    /// offending character. `source` is the parsed text; `file` (if any) prefixes the position.
    pub fn render(&self, source: &str, file: Option<&str>) -> String {
        let line = source
            .split('\n')
            .nth(self.line.saturating_sub(1))
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .unwrap_or(&self.source_line);
        render_error(file, self.line, self.column, &self.message, line)
    }
}

pub(super) fn render_error(
    file: Option<&str>,
    line: usize,
    column: usize,
    message: &str,
    source_line: &str,
) -> String {
    let mut out = String::new();
    if let Some(f) = file {
        let _ = write!(out, "{f}:");
    }
    let _ = writeln!(out, "{line}:{column}: {message}");
    // Show at most SNIPPET_WIDTH characters of the line, keeping the column in view.
    let chars: Vec<char> = source_line.chars().collect();
    let col = column.saturating_sub(1);
    let start = if chars.len() <= SNIPPET_WIDTH {
        0
    } else {
        col.saturating_sub(SNIPPET_WIDTH / 2)
            .min(chars.len().saturating_sub(SNIPPET_WIDTH))
    };
    let end = (start + SNIPPET_WIDTH).min(chars.len());
    let (lead, trail) = (start > 0, end < chars.len());
    let mut caret = String::new();
    if lead {
        out.push_str("...");
        caret.push_str("   ");
    }
    out.extend(&chars[start..end]);
    if trail {
        out.push_str("...");
    }
    for i in start..col {
        // Tabs stay tabs so that the caret lines up however the terminal expands them.
        caret.push(if chars.get(i) == Some(&'\t') {
            '\t'
        } else {
            ' '
        });
    }
    caret.push('^');
    let _ = write!(out, "\n{caret}");
    out
}

/// A position in the source: 1-based line and column (characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pos {
    pub(super) line: usize,
    pub(super) column: usize,
}

/// An error before its source line is attached.
pub(super) struct RawError {
    pub(super) pos: Pos,
    pub(super) message: String,
}

impl RawError {
    pub(super) fn finish(self, text: &str) -> ParseError {
        let line = text
            .split('\n')
            .nth(self.pos.line - 1)
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .unwrap_or("");
        ParseError {
            line: self.pos.line,
            column: self.pos.column,
            message: self.message,
            source_line: line.to_string(),
        }
    }
}

pub(super) type PResult<T> = Result<T, RawError>;

pub(super) fn err<T>(pos: Pos, message: impl Into<String>) -> PResult<T> {
    Err(RawError {
        pos,
        message: message.into(),
    })
}
