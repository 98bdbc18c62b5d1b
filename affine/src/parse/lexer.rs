//! The lexer: integers, identifiers, punctuation and `->`, each with its position and
//! whether a line break precedes it (domain items may be separated by line breaks).

use super::error::{err, PResult, Pos};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    /// Decimal digits (not yet converted: the sign decides the range).
    Int(&'a str),
    Ident(&'a str),
    /// One of `( ) [ ] { } , : + - * /`.
    Punct(char),
    Arrow,
    Eof,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Token<'a> {
    pub(super) tok: Tok<'a>,
    pub(super) pos: Pos,
    /// A line break separates this token from the previous one.
    pub(super) newline_before: bool,
}

impl Token<'_> {
    pub(super) fn describe(&self) -> String {
        match self.tok {
            Tok::Int(s) | Tok::Ident(s) => format!("`{s}`"),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::Arrow => "`->`".to_string(),
            Tok::Eof => "end of input".to_string(),
        }
    }
    pub(super) fn is_ident(&self, word: &str) -> bool {
        self.tok == Tok::Ident(word)
    }
    pub(super) fn is_punct(&self, c: char) -> bool {
        self.tok == Tok::Punct(c)
    }
}

pub(super) struct Lexer<'a> {
    pub(super) src: &'a str,
    /// Byte offset of the next character.
    pub(super) offset: usize,
    pub(super) pos: Pos,
    /// Where the last token ended (end-of-input errors point there).
    pub(super) last_end: Pos,
}

pub(super) fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}
pub(super) fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'a> Lexer<'a> {
    pub(super) fn new(src: &'a str) -> Lexer<'a> {
        let start = Pos { line: 1, column: 1 };
        Lexer {
            src,
            offset: 0,
            pos: start,
            last_end: start,
        }
    }

    pub(super) fn peek_char(&self) -> Option<char> {
        self.src[self.offset..].chars().next()
    }

    pub(super) fn bump_char(&mut self) {
        if let Some(c) = self.peek_char() {
            self.offset += c.len_utf8();
            if c == '\n' {
                self.pos.line += 1;
                self.pos.column = 1;
            } else {
                self.pos.column += 1;
            }
        }
    }

    /// Consumes characters while `f` holds and returns them.
    pub(super) fn take_while(&mut self, f: fn(char) -> bool) -> &'a str {
        let start = self.offset;
        while self.peek_char().is_some_and(f) {
            self.bump_char();
        }
        &self.src[start..self.offset]
    }

    pub(super) fn next_token(&mut self) -> PResult<Token<'a>> {
        let mut newline_before = false;
        while let Some(c) = self.peek_char().filter(|c| c.is_whitespace()) {
            newline_before |= c == '\n';
            self.bump_char();
        }
        let pos = self.pos;
        let token = |tok| Token {
            tok,
            pos,
            newline_before,
        };
        let Some(c) = self.peek_char() else {
            return Ok(Token {
                tok: Tok::Eof,
                pos: self.last_end,
                newline_before,
            });
        };
        let tok = if c.is_ascii_digit() {
            let text = self.take_while(is_ident_char);
            if !text.bytes().all(|b| b.is_ascii_digit()) {
                return err(pos, format!("invalid integer literal `{text}`"));
            }
            Tok::Int(text)
        } else if is_ident_start(c) {
            Tok::Ident(self.take_while(is_ident_char))
        } else if c == '-' && self.src[self.offset..].starts_with("->") {
            self.bump_char();
            self.bump_char();
            Tok::Arrow
        } else if "()[]{},:+-*/".contains(c) {
            self.bump_char();
            Tok::Punct(c)
        } else {
            return err(pos, format!("unexpected character `{}`", c.escape_debug()));
        };
        self.last_end = self.pos;
        Ok(token(tok))
    }
}
