//! The HLO lexer: tokens are spans of the input (no allocation), produced on demand with
//! one token of lookahead. Contexts that need XLA's context-sensitive words (`2x3`,
//! `0_1x2_3`, `b01f_01io->b01f`) and verbatim values scan the bytes directly.

/// Token kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    Eof,
    LBrace,
    RBrace,
    LParen,
    RParen,
    LSquare,
    RSquare,
    Comma,
    Equal,
    Colon,
    Star,
    Hash,
    Plus,
    Tilde,
    Question,
    /// `<=`.
    Leq,
    /// `->`.
    Arrow,
    /// `...`.
    Dots,
    /// `%name` (the span excludes the `%`).
    Name,
    /// `[A-Za-z_][A-Za-z0-9_.-]*`.
    Ident,
    /// An integer (decimal, optionally negative, or `0x` hex).
    Int,
    /// A decimal with `.` or exponent, or `-inf` / `-nan`.
    Float,
    /// A quoted string (the span includes the quotes).
    Str,
    /// Bytes that form no token; see [`Lexer::error_message`].
    Error,
}

/// A token: its kind and byte span.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

/// The lexer state (cheap to copy, for lookahead).
#[derive(Clone, Copy)]
pub(crate) struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    peeked: Option<Token>,
    /// End of the last token returned by `next`.
    prev_end: usize,
    error: &'static str,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-'
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Lexer<'a> {
        Lexer {
            src,
            bytes: src.as_bytes(),
            pos: 0,
            peeked: None,
            prev_end: 0,
            error: "",
        }
    }

    /// The message of the last `Error` token.
    pub fn error_message(&self) -> &'static str {
        self.error
    }

    pub fn text(&self, t: Token) -> &'a str {
        self.src.get(t.start..t.end).unwrap_or("")
    }

    pub fn peek(&mut self) -> Token {
        match self.peeked {
            Some(t) => t,
            None => {
                let t = self.lex();
                self.peeked = Some(t);
                t
            }
        }
    }

    pub fn next(&mut self) -> Token {
        let t = match self.peeked.take() {
            Some(t) => t,
            None => self.lex(),
        };
        self.prev_end = t.end;
        t
    }

    /// Moves to byte `pos` (which must start a token), dropping any peeked token.
    pub fn seek(&mut self, pos: usize) {
        self.peeked = None;
        self.pos = pos.min(self.bytes.len());
    }

    /// The end of the shape text starting at the next token: brackets balanced (skipping
    /// `/*...*/`), up to the first whitespace outside them.
    pub fn shape_text_end(&mut self) -> Option<usize> {
        let start = self.offset();
        let b = self.bytes;
        let mut depth = 0usize;
        let mut i = start;
        while i < b.len() {
            match b[i] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = depth.checked_sub(1)?,
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    i += 2 + self.src.get(i + 2..)?.find("*/")? + 1;
                }
                b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => return Some(i),
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// Splits the text at the next token into `shape name`: scans brackets (skipping
    /// `/*...*/`) to the first whitespace outside them, then over whitespace to a `%name`
    /// or identifier. Returns the end of the shape text and the start and end of the name.
    pub fn split_operand(&mut self) -> Option<(usize, usize, usize)> {
        let start = self.offset();
        let b = self.bytes;
        let mut depth = 0usize;
        let mut i = start;
        while i < b.len() {
            match b[i] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = depth.checked_sub(1)?,
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    i += 2 + self.src.get(i + 2..)?.find("*/")? + 1;
                }
                b' ' | b'\t' | b'\n' | b'\r' if depth == 0 => break,
                b',' if depth == 0 => return None,
                _ => {}
            }
            i += 1;
        }
        let shape_end = i;
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        let name_start = if b.get(i) == Some(&b'%') { i + 1 } else { i };
        if !b.get(name_start).is_some_and(|&c| is_ident_start(c)) {
            return None;
        }
        Some((shape_end, i, self.ident_end(name_start)))
    }

    /// End offset of the last token consumed.
    pub fn prev_end(&self) -> usize {
        self.prev_end
    }

    /// The token after the next one.
    pub fn peek2(&mut self) -> Token {
        let mut copy = *self;
        copy.next();
        copy.peek()
    }

    /// Byte offset where the next token starts (after whitespace and comments).
    pub fn offset(&mut self) -> usize {
        self.peek().start
    }

    /// Un-peeks: the next scan starts at the peeked token's start (or the current
    /// position).
    fn rewind_peek(&mut self) {
        if let Some(t) = self.peeked.take() {
            self.pos = t.start;
        }
    }

    fn skip_trivia(&mut self) -> Result<(), usize> {
        loop {
            match self.bytes.get(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.pos += 1,
                Some(b'/') => match self.bytes.get(self.pos + 1) {
                    Some(b'*') => {
                        let start = self.pos;
                        match self.src[self.pos + 2..].find("*/") {
                            Some(i) => self.pos += 2 + i + 2,
                            None => {
                                self.error = "unterminated /* comment";
                                return Err(start);
                            }
                        }
                    }
                    // To the end of the line: `\n`, or `\r` alone (old Mac line ends).
                    Some(b'/') => {
                        self.pos = self.src[self.pos..]
                            .find(['\n', '\r'])
                            .map_or(self.bytes.len(), |i| self.pos + i);
                    }
                    _ => return Ok(()),
                },
                _ => return Ok(()),
            }
        }
    }

    fn lex(&mut self) -> Token {
        if let Err(start) = self.skip_trivia() {
            self.pos = self.bytes.len();
            return Token {
                kind: Tok::Error,
                start,
                end: start + 2,
            };
        }
        let start = self.pos;
        let Some(&b) = self.bytes.get(start) else {
            return Token {
                kind: Tok::Eof,
                start,
                end: start,
            };
        };
        let tok = |this: &mut Self, kind: Tok, len: usize| {
            this.pos = start + len;
            Token {
                kind,
                start,
                end: start + len,
            }
        };
        let at = |i: usize| self.bytes.get(start + i).copied();
        match b {
            b'{' => tok(self, Tok::LBrace, 1),
            b'}' => tok(self, Tok::RBrace, 1),
            b'(' => tok(self, Tok::LParen, 1),
            b')' => tok(self, Tok::RParen, 1),
            b'[' => tok(self, Tok::LSquare, 1),
            b']' => tok(self, Tok::RSquare, 1),
            b',' => tok(self, Tok::Comma, 1),
            b'=' => tok(self, Tok::Equal, 1),
            b':' => tok(self, Tok::Colon, 1),
            b'*' => tok(self, Tok::Star, 1),
            b'#' => tok(self, Tok::Hash, 1),
            b'+' => tok(self, Tok::Plus, 1),
            b'~' => tok(self, Tok::Tilde, 1),
            b'?' => tok(self, Tok::Question, 1),
            b'<' if at(1) == Some(b'=') => tok(self, Tok::Leq, 2),
            b'-' if at(1) == Some(b'>') => tok(self, Tok::Arrow, 2),
            b'.' if at(1) == Some(b'.') && at(2) == Some(b'.') => tok(self, Tok::Dots, 3),
            b'%' => {
                if at(1).is_some_and(is_ident_start) {
                    let end = self.ident_end(start + 1);
                    self.pos = end;
                    Token {
                        kind: Tok::Name,
                        start: start + 1,
                        end,
                    }
                } else {
                    self.error = "expected a name after '%'";
                    tok(self, Tok::Error, 1)
                }
            }
            b'"' | b'\'' => self.lex_string(start, b),
            b'-' if at(1).is_some_and(|c| c.is_ascii_alphabetic()) => {
                let end = self.ident_end(start + 1);
                let kind = match &self.src[start..end] {
                    "-inf" | "-nan" => Tok::Float,
                    _ => {
                        self.error = "unexpected '-'";
                        Tok::Error
                    }
                };
                self.pos = end;
                Token { kind, start, end }
            }
            b'-' | b'0'..=b'9' => self.lex_number(start),
            _ if is_ident_start(b) => {
                let end = self.ident_end(start);
                self.pos = end;
                Token {
                    kind: Tok::Ident,
                    start,
                    end,
                }
            }
            _ => {
                self.error = "unexpected character";
                let len = self.src[start..].chars().next().map_or(1, char::len_utf8);
                tok(self, Tok::Error, len)
            }
        }
    }

    /// End of an identifier starting at `i` (a `-` directly followed by `>` ends it).
    fn ident_end(&self, mut i: usize) -> usize {
        while let Some(&c) = self.bytes.get(i) {
            if !is_ident_char(c) || (c == b'-' && self.bytes.get(i + 1) == Some(&b'>')) {
                break;
            }
            i += 1;
        }
        i
    }

    fn digits_end(&self, mut i: usize) -> usize {
        while self.bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    }

    fn lex_number(&mut self, start: usize) -> Token {
        let mut i = start;
        if self.bytes[i] == b'-' {
            i += 1;
        }
        let digits_start = i;
        if self.bytes.get(i) == Some(&b'0') && matches!(self.bytes.get(i + 1), Some(b'x' | b'X')) {
            let mut j = i + 2;
            while self.bytes.get(j).is_some_and(u8::is_ascii_hexdigit) {
                j += 1;
            }
            if j > i + 2 {
                self.pos = j;
                return Token {
                    kind: Tok::Int,
                    start,
                    end: j,
                };
            }
        }
        i = self.digits_end(i);
        let mut float = false;
        if self.bytes.get(i) == Some(&b'.') && self.bytes.get(i + 1) != Some(&b'.') {
            float = true;
            i = self.digits_end(i + 1);
        }
        if i == digits_start || (float && i == digits_start + 1) {
            self.error = "expected a number";
            self.pos = i.max(start + 1);
            return Token {
                kind: Tok::Error,
                start,
                end: self.pos,
            };
        }
        if matches!(self.bytes.get(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(self.bytes.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if self.bytes.get(j).is_some_and(u8::is_ascii_digit) {
                float = true;
                i = self.digits_end(j);
            }
        }
        self.pos = i;
        Token {
            kind: if float { Tok::Float } else { Tok::Int },
            start,
            end: i,
        }
    }

    fn lex_string(&mut self, start: usize, quote: u8) -> Token {
        let mut i = start + 1;
        loop {
            match self.bytes.get(i) {
                None => {
                    self.error = "unterminated string";
                    self.pos = self.bytes.len();
                    return Token {
                        kind: Tok::Error,
                        start,
                        end: start + 1,
                    };
                }
                Some(b'\\') => i += 2,
                Some(&c) if c == quote => {
                    self.pos = i + 1;
                    return Token {
                        kind: Tok::Str,
                        start,
                        end: i + 1,
                    };
                }
                Some(_) => i += 1,
            }
        }
    }

    /// Scans a run of word characters (`[A-Za-z0-9_.?+-]` and `>` after `-`) at the next
    /// token position: the context-sensitive words `2x3`, `-1_1x0_0_2`, `b01f_01io->b01f`.
    pub fn word(&mut self) -> Token {
        self.rewind_peek();
        let _ = self.skip_trivia();
        let start = self.pos;
        let mut i = start;
        while let Some(&c) = self.bytes.get(i) {
            let ok = c.is_ascii_alphanumeric()
                || matches!(c, b'_' | b'.' | b'?' | b'+' | b'-')
                || (c == b'>' && i > start && self.bytes[i - 1] == b'-');
            if !ok {
                break;
            }
            i += 1;
        }
        self.pos = i;
        Token {
            kind: if i > start { Tok::Ident } else { Tok::Error },
            start,
            end: i,
        }
    }

    /// Scans one verbatim value: items (`{...}`, `(...)`, `[...]` balanced with strings
    /// skipped, quoted strings, or runs of other non-space characters) with no whitespace
    /// between them, stopping at whitespace, `,` or an unmatched closing bracket. Returns
    /// the span, or the offset of an unterminated bracket or string.
    pub fn raw_value(&mut self) -> Result<(usize, usize), usize> {
        self.rewind_peek();
        self.skip_trivia()?;
        let start = self.pos;
        let mut i = start;
        loop {
            match self.bytes.get(i) {
                Some(b'{' | b'(' | b'[') => i = self.balanced_end(i)?,
                Some(&q @ (b'"' | b'\'')) => i = self.string_end(i, q)?,
                Some(b' ' | b'\t' | b'\n' | b'\r' | b',' | b'}' | b')' | b']') | None => break,
                Some(_) => {
                    i += 1;
                    while let Some(&c) = self.bytes.get(i) {
                        if matches!(
                            c,
                            b' ' | b'\t'
                                | b'\n'
                                | b'\r'
                                | b','
                                | b'}'
                                | b')'
                                | b']'
                                | b'{'
                                | b'('
                                | b'['
                                | b'"'
                                | b'\''
                        ) {
                            break;
                        }
                        i += 1;
                    }
                }
            }
        }
        self.pos = i;
        if i == start {
            self.error = "expected a value";
            return Err(start);
        }
        Ok((start, i))
    }

    /// Scans a `{...}` dictionary (JSON or MLIR style) at the next token: braces balanced,
    /// quoted strings skipped. Returns the span including the braces.
    pub fn dict(&mut self) -> Result<(usize, usize), usize> {
        self.rewind_peek();
        self.skip_trivia()?;
        let start = self.pos;
        if self.bytes.get(start) != Some(&b'{') {
            self.error = "expected '{'";
            return Err(start);
        }
        let end = self.balanced_end(start)?;
        self.pos = end;
        Ok((start, end))
    }

    fn string_end(&mut self, start: usize, quote: u8) -> Result<usize, usize> {
        let mut i = start + 1;
        loop {
            match self.bytes.get(i) {
                None => {
                    self.error = "unterminated string";
                    return Err(start);
                }
                Some(b'\\') => i += 2,
                Some(&c) if c == quote => return Ok(i + 1),
                Some(_) => i += 1,
            }
        }
    }

    /// End (exclusive) of the bracket group opening at `start`; all three bracket kinds
    /// count, quoted strings are skipped. Iterative: nesting depth is unbounded.
    fn balanced_end(&mut self, start: usize) -> Result<usize, usize> {
        let mut depth = 0usize;
        let mut i = start;
        loop {
            match self.bytes.get(i) {
                None => {
                    self.error = "unbalanced bracket";
                    return Err(start);
                }
                Some(b'{' | b'(' | b'[') => {
                    depth += 1;
                    i += 1;
                }
                Some(b'}' | b')' | b']') => {
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        return Ok(i);
                    }
                }
                Some(&q @ b'"') => i = self.string_end(i, q)?,
                Some(_) => i += 1,
            }
        }
    }

    /// If the next bytes (no whitespace skipped) are `(0x<hex>)`, consumes them and returns
    /// the hex digits' span.
    pub fn nan_payload(&mut self) -> Option<(usize, usize)> {
        self.rewind_peek();
        let s = &self.bytes[self.pos..];
        if !s.starts_with(b"(0x") {
            return None;
        }
        let n = s[3..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if n == 0 || s.get(3 + n) != Some(&b')') {
            return None;
        }
        let span = (self.pos + 3, self.pos + 3 + n);
        self.pos += 3 + n + 1;
        Some(span)
    }

    /// True when the next byte (no whitespace skipped) is `c`.
    pub fn next_byte_is(&mut self, c: u8) -> bool {
        self.rewind_peek();
        self.bytes.get(self.pos) == Some(&c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(Tok, String)> {
        let mut l = Lexer::new(s);
        let mut out = Vec::new();
        loop {
            let t = l.next();
            if t.kind == Tok::Eof {
                return out;
            }
            out.push((t.kind, l.text(t).to_string()));
            if t.kind == Tok::Error {
                return out;
            }
        }
    }

    #[test]
    fn tokens() {
        use Tok::*;
        let k = kinds("%add.1 = f32[<=2,?]{0} add(-1, 2.5e-3), /*x*/ a-b->c // c\n \"s\\\"\" ...");
        let got: Vec<Tok> = k.iter().map(|x| x.0).collect();
        assert_eq!(
            got,
            vec![
                Name, Equal, Ident, LSquare, Leq, Int, Comma, Question, RSquare, LBrace, Int,
                RBrace, Ident, LParen, Int, Comma, Float, RParen, Comma, Ident, Arrow, Ident, Str,
                Dots
            ]
        );
        assert_eq!(k[0].1, "add.1");
        assert_eq!(kinds("-inf")[0], (Float, "-inf".into()));
        assert_eq!(kinds("0x1F")[0], (Int, "0x1F".into()));
        assert_eq!(kinds("/* open")[0].0, Error);
        assert_eq!(kinds("\"open")[0].0, Error);
        assert_eq!(kinds("@")[0].0, Error);
    }

    #[test]
    fn words_and_raw_values() {
        let mut l = Lexer::new(" b01f_01io->b01f, x");
        let t = l.word();
        assert_eq!(l.text(t), "b01f_01io->b01f");
        assert_eq!(l.next().kind, Tok::Comma);
        let mut l = Lexer::new("[2,2]<=[4]T(1,0), next");
        let (s, e) = l.raw_value().unwrap();
        assert_eq!(&"[2,2]<=[4]T(1,0), next"[s..e], "[2,2]<=[4]T(1,0)");
        let src = "{a=\"}\" b={c}}\n  x";
        let mut l = Lexer::new(src);
        let (s, e) = l.raw_value().unwrap();
        assert_eq!(&src[s..e], "{a=\"}\" b={c}}");
        assert!(Lexer::new("{{}").raw_value().is_err());
    }
}
