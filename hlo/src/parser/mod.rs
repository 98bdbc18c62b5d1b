//! The HLO text parser: a lexer and a recursive-descent parser with a depth limit.
//!
//! Entry points: [`parse_module`], [`parse_module_with`], [`parse_shape`].

mod attrs;
mod debug_attrs;
mod instr;
mod lexer;
mod literal;
mod module;
mod shape;

use crate::error::{LineCursor, Location, ParseError, ParseWarning};
use crate::ir::{CompId, Computation, InstrId, Module};
use crate::shape::Shape;
pub use crate::source_map::{LineIndex, Parsed, SourceMap};
use crate::text::PrintOptions;
use lexer::{Lexer, Tok, Token};

/// Options of [`parse_module_with`].
#[derive(Clone, Debug)]
pub struct ParseOptions {
    /// File name shown in error messages.
    pub file_name: Option<String>,
    /// Deepest nesting (tuple shapes, tuple literals, inline computations) accepted.
    pub max_depth: usize,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions {
            file_name: None,
            max_depth: 128,
        }
    }
}

/// Parses HLO module text (with or without `%` sigils, with or without an `HloModule`
/// header). Warnings are dropped; use [`parse_module_with`] to see them.
pub fn parse_module(text: &str) -> Result<Module, ParseError> {
    parse_module_with(text, &ParseOptions::default()).map(|p| p.module)
}

/// Parses HLO module text with options, returning the module and the warnings.
pub fn parse_module_with(text: &str, options: &ParseOptions) -> Result<Parsed, ParseError> {
    let mut p = Parser::new(text, options);
    let module = p.parse_module()?;
    Ok(Parsed {
        module,
        warnings: p.warnings,
        source_map: p.source_map,
    })
}

/// Parses one shape (`f32[2,3]{1,0}`, `(s32[], pred[])`), with nothing after it.
pub fn parse_shape(text: &str) -> Result<Shape, ParseError> {
    let options = ParseOptions::default();
    let mut p = Parser::new(text, &options);
    let s = p.parse_shape()?;
    p.expect(Tok::Eof, "expected the end of the shape")?;
    Ok(s)
}

/// Hash map for name tables (fast on short strings; never iterated for output).
pub(crate) type FxMap<K, V> = rustc_hash::FxHashMap<K, V>;

/// Parser state.
pub(crate) struct Parser<'a> {
    src: &'a str,
    lex: Lexer<'a>,
    file: Option<String>,
    max_depth: usize,
    depth: usize,
    pub(crate) warnings: Vec<ParseWarning>,
    /// Finished computations, in text order (generated ones just before their caller).
    comps: Vec<Computation>,
    /// Named (declared) computations.
    comp_names: FxMap<&'a str, CompId>,
    /// Computations the parser created (short async forms, inline computations), whose
    /// names are made unique at the end.
    generated: Vec<CompId>,
    /// Conventions seen in the text; `None` until first seen.
    style: StyleSeen,
    /// Result shapes parsed so far, by their text.
    shapes: FxMap<&'a str, std::sync::Arc<Shape>>,
    /// Locates warnings incrementally.
    line_cursor: LineCursor,
    /// Reused buffer for an instruction's attributes.
    attr_scratch: Vec<crate::attrs::Attribute>,
    /// Reused buffer for metadata entries.
    meta_scratch: Vec<(std::borrow::Cow<'static, str>, crate::ir::MetaValue)>,
    /// Offsets of the instructions of finished computations.
    source_map: SourceMap,
    /// Names given to instructions written inline as operands (`add.anon`, ...).
    anon_names: std::collections::HashSet<String>,
    /// Set while the operand list of a single instruction parsed on its own is next: its
    /// operands become parameters.
    implicit_operands: bool,
    /// Parameters created for such operands so far.
    implicit_params: usize,
    /// The get-tuple-elements made for `%p#N` operands, with the names they ask for
    /// (`p_N`), given at the end once every written name is known.
    tuple_elements: Vec<(CompId, InstrId, String)>,
}

#[derive(Default, Clone, Copy)]
struct StyleSeen {
    sigils: Option<bool>,
    operand_shapes: Option<bool>,
    index_comments: Option<bool>,
    signatures: Option<bool>,
}

impl StyleSeen {
    fn options(self) -> PrintOptions {
        let d = PrintOptions::default();
        let operand_shapes = self.operand_shapes.unwrap_or(d.operand_shapes);
        PrintOptions {
            sigils: self.sigils.unwrap_or(d.sigils),
            operand_shapes,
            index_comments: self.index_comments.unwrap_or(operand_shapes),
            signatures: self.signatures.unwrap_or(d.signatures),
        }
    }
}

/// One computation being parsed: its instructions and their names.
pub(crate) struct Scope<'a> {
    pub builder: crate::ir::ComputationBuilder,
    pub names: FxMap<&'a str, InstrId>,
    pub root: Option<InstrId>,
    /// Source text of each instruction's result shape, by id: an operand whose declared
    /// shape is the same text needs no parsing.
    pub shape_text: Vec<&'a str>,
    /// Byte offset of the instruction being parsed, and of each one added.
    pub at: usize,
    pub offsets: Vec<usize>,
    /// The get-tuple-element made for each `#N` step of an operand (`%p#1#0`), by the
    /// tuple value and the index: later uses of the same path share it.
    pub steps: FxMap<(InstrId, usize), InstrId>,
    /// Those get-tuple-elements in the order made, with the names they ask for.
    pub step_names: Vec<(InstrId, String)>,
}

impl<'a> Scope<'a> {
    /// Adds an instruction whose result shape was written as `shape_text`.
    pub fn add(&mut self, instr: crate::ir::Instruction, shape_text: &'a str) -> InstrId {
        self.shape_text.push(shape_text);
        self.offsets.push(self.at);
        self.builder.add(instr)
    }
}

type PResult<T> = Result<T, ParseError>;

impl<'a> Parser<'a> {
    fn new(src: &'a str, options: &ParseOptions) -> Parser<'a> {
        Parser {
            src,
            lex: Lexer::new(src),
            file: options.file_name.clone(),
            max_depth: options.max_depth,
            depth: 0,
            warnings: Vec::new(),
            comps: Vec::new(),
            comp_names: FxMap::default(),
            generated: Vec::new(),
            style: StyleSeen::default(),
            shapes: FxMap::default(),
            line_cursor: LineCursor::default(),
            attr_scratch: Vec::new(),
            meta_scratch: Vec::new(),
            source_map: SourceMap::default(),
            anon_names: std::collections::HashSet::new(),
            implicit_operands: false,
            implicit_params: 0,
            tuple_elements: Vec::new(),
        }
    }

    /// An error at byte `offset`.
    fn error_at(&self, offset: usize, message: impl Into<String>) -> ParseError {
        ParseError {
            file: self.file.clone(),
            location: Location::of_offset(self.src, offset),
            message: message.into(),
        }
    }

    /// An error at the next token; reports the lexer's message for bad bytes.
    fn error_here(&mut self, message: impl Into<String>) -> ParseError {
        let t = self.lex.peek();
        self.error_token(t, message)
    }

    /// An error at token `t` (the lexer's message for an `Error` token).
    fn error_token(&self, t: Token, message: impl Into<String>) -> ParseError {
        if t.kind == Tok::Error {
            let m = self.lex.error_message();
            let bad = self.lex.text(t);
            return match m {
                "unexpected character" | "unexpected '-'" => {
                    self.error_at(t.start, format!("{m} `{bad}`"))
                }
                _ => self.error_at(t.start, m),
            };
        }
        let mut m = message.into();
        match t.kind {
            Tok::Eof => m.push_str(", found the end of the input"),
            _ => {
                let text = self.lex.text(t);
                let shown: String = text.chars().take(40).collect();
                m.push_str(&format!(", found `{shown}`"));
            }
        }
        self.error_at(t.start, m)
    }

    fn warn_at(&mut self, offset: usize, message: impl Into<String>) {
        let (line, column) = self.line_cursor.locate(self.src, offset);
        self.warnings.push(ParseWarning {
            line,
            column,
            message: message.into(),
        });
    }

    /// Consumes a token of `kind` or fails with `what` (e.g. "expected '('").
    fn expect(&mut self, kind: Tok, what: &str) -> PResult<Token> {
        let t = self.lex.peek();
        if t.kind == kind {
            Ok(self.lex.next())
        } else {
            Err(self.error_token(t, what))
        }
    }

    /// Consumes the next token if it has `kind`.
    fn eat(&mut self, kind: Tok) -> bool {
        if self.lex.peek().kind == kind {
            self.lex.next();
            true
        } else {
            false
        }
    }

    /// True when the next token is the identifier `word`.
    fn at_ident(&mut self, word: &str) -> bool {
        let t = self.lex.peek();
        t.kind == Tok::Ident && self.lex.text(t) == word
    }

    /// Enters one nesting level at `offset`, failing past the depth limit.
    fn descend(&mut self, offset: usize) -> PResult<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(self.error_at(
                offset,
                format!("nesting deeper than {} levels", self.max_depth),
            ));
        }
        Ok(())
    }

    fn ascend(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// A name: `%name` or a bare identifier.
    fn parse_name(&mut self, what: &str) -> PResult<(&'a str, usize)> {
        let t = self.lex.peek();
        match t.kind {
            Tok::Name | Tok::Ident => {
                self.lex.next();
                Ok((self.lex.text(t), t.start))
            }
            _ => Err(self.error_token(t, format!("expected {what}"))),
        }
    }

    /// An instruction's name (defined or used), as [`Self::parse_name`] but, as in XLA's
    /// lexer, a bare word spelled like an element type (`s2`, `u4`, `f8e4m3`, `token`)
    /// is that type, never a name, unless a `:` follows at once.
    fn parse_instr_name(&mut self, what: &str) -> PResult<(&'a str, usize)> {
        let t = self.lex.peek();
        let text = self.lex.text(t);
        if t.kind == Tok::Ident
            && self.src.as_bytes().get(t.end) != Some(&b':')
            && text.parse::<crate::shape::ElementType>().is_ok()
        {
            return Err(self.error_at(
                t.start,
                format!(
                    "expected {what}, but `{text}` is an element type (write `%{text}` to use it as a name)"
                ),
            ));
        }
        self.parse_name(what)
    }

    /// An integer token as `i64` (decimal or `0x` hex).
    fn parse_i64(&mut self) -> PResult<i64> {
        let t = self.lex.peek();
        if t.kind != Tok::Int {
            return Err(self.error_token(t, "expected an integer"));
        }
        self.lex.next();
        let v = parse_int_text(self.lex.text(t))
            .and_then(|v| i64::try_from(v).ok())
            .ok_or_else(|| self.error_at(t.start, "integer out of range for a 64-bit integer"))?;
        Ok(v)
    }
}

/// Parses an integer token's text (decimal or `0x` hex, optional `-`).
pub(crate) fn parse_int_text(s: &str) -> Option<i128> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    // Fast path: short decimal numbers (nearly all of them).
    if digits.len() <= 18 && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        let v = digits
            .bytes()
            .fold(0i64, |acc, b| acc * 10 + i64::from(b - b'0'));
        return Some(i128::from(if neg { -v } else { v }));
    }
    let v = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(h) => i128::from_str_radix(h, 16).ok()?,
        None => digits.parse::<i128>().ok()?,
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests;
