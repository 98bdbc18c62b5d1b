//! Parse errors and warnings, located at line and column with the source line shown.

use std::fmt;

/// Where something is in the source text: 1-based line and column (in characters), plus
/// the text of the line for display.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub column: usize,
    /// The source line, shortened around the column when very long.
    pub source_line: String,
    /// Column of the caret within `source_line` (1-based).
    pub caret_column: usize,
}

/// Longest source line shown whole in messages; longer lines show a window.
const MAX_SHOWN: usize = 160;
/// Characters shown before the column in a window.
const CONTEXT: usize = 60;

impl Location {
    /// The location of byte `offset` in `src` (clamped to the text and to a char boundary).
    pub fn of_offset(src: &str, offset: usize) -> Location {
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &src[..offset];
        let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line_end = src[offset..].find('\n').map_or(src.len(), |i| offset + i);
        let text = src[line_start..line_end].trim_end_matches('\r');
        let column = src[line_start..offset].chars().count() + 1;
        let (source_line, caret_column) = window(text, column);
        Location {
            line,
            column,
            source_line,
            caret_column,
        }
    }
}

/// The part of `text` to show and the caret column in it.
fn window(text: &str, column: usize) -> (String, usize) {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= MAX_SHOWN {
        return (text.to_string(), column);
    }
    let start = column.saturating_sub(1).saturating_sub(CONTEXT);
    let end = (start + MAX_SHOWN).min(chars.len());
    let mut s = String::new();
    let mut caret = column - start;
    if start > 0 {
        s.push_str("...");
        caret += 3;
    }
    s.extend(&chars[start..end]);
    if end < chars.len() {
        s.push_str("...");
    }
    (s, caret)
}

fn write_caret(f: &mut fmt::Formatter<'_>, loc: &Location) -> fmt::Result {
    writeln!(f, "{}", loc.source_line)?;
    // Keep tabs so the caret lines up under tab-indented text.
    let pad: String = loc
        .source_line
        .chars()
        .take(loc.caret_column.saturating_sub(1))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    write!(f, "{pad}^")
}

/// A syntax or consistency error in HLO text.
///
/// `Display` prints `file:line:col: message`, then the source line and a caret under the
/// column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The file name given to the parser, if any.
    pub file: Option<String>,
    /// Where the error is.
    pub location: Location,
    /// What is wrong.
    pub message: String,
}

impl ParseError {
    /// 1-based line.
    pub fn line(&self) -> usize {
        self.location.line
    }

    /// 1-based column.
    pub fn column(&self) -> usize {
        self.location.column
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}:")?;
        }
        writeln!(
            f,
            "{}:{}: {}",
            self.location.line, self.location.column, self.message
        )?;
        write_caret(f, &self.location)
    }
}

impl std::error::Error for ParseError {}

/// Something the parser accepted but wants the user to know (an unknown attribute kept
/// verbatim, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseWarning {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What.
    pub message: String,
}

impl fmt::Display for ParseWarning {
    /// `line:col: warning: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: warning: {}",
            self.line, self.column, self.message
        )
    }
}

/// Computes line and column of increasing offsets in one pass over the text (so that
/// many warnings in a large input cost O(input), not O(input) each).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LineCursor {
    offset: usize,
    line: usize,
    column: usize,
}

impl LineCursor {
    /// Line and column (1-based) of byte `offset` of `src`.
    pub(crate) fn locate(&mut self, src: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        if offset < self.offset || self.line == 0 {
            *self = LineCursor {
                offset: 0,
                line: 1,
                column: 1,
            };
        }
        for c in src[self.offset..offset].chars() {
            if c == '\n' {
                self.line += 1;
                self.column = 1;
            } else {
                self.column += 1;
            }
        }
        self.offset = offset;
        (self.line, self.column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        let src = "ab\n\tcd é x\n";
        let l = Location::of_offset(src, src.find('x').unwrap());
        assert_eq!((l.line, l.column), (2, 7));
        let e = ParseError {
            file: Some("m.hlo".into()),
            location: l,
            message: "bad".into(),
        };
        assert_eq!(e.to_string(), "m.hlo:2:7: bad\n\tcd é x\n\t     ^");
        let mut cur = LineCursor::default();
        assert_eq!(cur.locate(src, src.find('x').unwrap()), (2, 7));
        assert_eq!(cur.locate(src, 1), (1, 2));
        let l = Location::of_offset(src, 1000);
        assert_eq!((l.line, l.column), (3, 1));
        let long = "y".repeat(500) + "Z" + &"y".repeat(500);
        let l = Location::of_offset(&long, 500);
        assert_eq!(l.source_line.chars().nth(l.caret_column - 1), Some('Z'));
    }
}
