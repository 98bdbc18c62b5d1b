//! Parsing the text form of expressions and indexing maps (XLA's syntax).
//!
//! Maps: `(d0, d1)[s0]{rt0} -> (d0 floordiv 8, d1 + s0), domain: d0 in [0, 31], d1 in [0, 7],
//! s0 in [0, 3], rt0 in [0, 9], d1 + s0 in [0, 9]`, or `KNOWN EMPTY`, or `UNDEFINED`.
//!
//! - Whitespace, including newlines, may appear between any two tokens. Domain items are
//!   separated by commas or by line breaks, so both the one-line form of [`IndexingMap`]'s
//!   `Display` and XLA's multi-line layout (`domain:` and each item on its own line) parse.
//! - The header declares variable names: the i-th name of the `(...)`, `[...]` and `{...}`
//!   lists is dimension, range variable and runtime variable i. Names are usually `d0`, `s0`,
//!   `rt0`, but any identifier works (`(bl_x, th_x)[s0]`); a canonical-looking name must sit at
//!   its own position (`(d1, d0)` is an error). The `[...]` and `{...}` lists are optional.
//! - Every declared variable needs exactly one bounds entry `name in [lo, hi]`; any other
//!   `expr in [lo, hi]` is a constraint. Intervals are closed; XLA's older half-open form
//!   `[lo, hi)` is accepted too. An empty interval makes the map KNOWN EMPTY. An
//!   `is_simplified: true|false` item (printed by some XLA versions) is ignored.
//!
//! Expressions, by increasing precedence: `+` and `-`; `*`, `floordiv` (or `/`), `ceildiv` and
//! `mod` (left-associative); unary `-`; integers, variables, `(expr)`, `min(a, b)`, `max(a, b)`.
//! A `-` directly before an integer literal makes a negative literal, so `i64::MIN` is
//! writable; out-of-range literals are errors. As in hand-written maps, a coefficient may be
//! written before a variable without `*` (`16 d0` is `16 * d0`).
//!
//! Expressions are built with the folding builders ([`Expr::add`], [`Expr::mul`], ...), so
//! printing a parsed map and parsing the text again gives the same map. The parser never panics
//! and bounds its recursion ([`MAX_NESTING`]) and the depth of the trees it builds
//! ([`MAX_TREE_DEPTH`]).

use std::str::FromStr;

use rustc_hash::FxHashMap;

use crate::{Expr, IndexingMap, Interval, Var, VarKind};

/// Most levels of parentheses, `min`/`max` calls and unary minus an expression may nest.
pub const MAX_NESTING: usize = 128;

/// Most levels of operators in one parsed expression tree (a long sum counts one per term).
pub const MAX_TREE_DEPTH: u32 = 1000;

/// Words that cannot name variables.
const KEYWORDS: &[&str] = &[
    "floordiv",
    "ceildiv",
    "mod",
    "min",
    "max",
    "in",
    "is_simplified",
];

mod error;
mod lexer;
#[cfg(test)]
mod tests;

pub use error::ParseError;
use error::{err, PResult, Pos, RawError};
use lexer::{Lexer, Tok, Token};

/// Which identifiers name which variables, for [`parse_expr`].
#[derive(Clone, Debug, Default)]
pub struct Names {
    declared: FxHashMap<String, Var>,
    canonical: bool,
}

impl Names {
    /// No names at all; add some with [`Names::declare`] or [`Names::with`].
    pub fn new() -> Names {
        Names::default()
    }
    /// Accepts the canonical names `dN`, `sN` and `rtN` for every `N` (plus any declared).
    pub fn canonical() -> Names {
        Names {
            declared: FxHashMap::default(),
            canonical: true,
        }
    }
    /// Makes `name` stand for `var` (replacing an earlier declaration of `name`).
    pub fn declare(&mut self, name: impl Into<String>, var: Var) -> &mut Names {
        self.declared.insert(name.into(), var);
        self
    }
    /// [`Names::declare`], by value.
    pub fn with(mut self, name: impl Into<String>, var: Var) -> Names {
        self.declare(name, var);
        self
    }
    /// The variable `name` stands for: a declared name first, then a canonical one if enabled.
    pub fn lookup(&self, name: &str) -> Option<Var> {
        if let Some(v) = self.declared.get(name) {
            return Some(*v);
        }
        if self.canonical {
            canonical_var(name)
        } else {
            None
        }
    }
}

/// `d3` → dimension 3, `s0` → range variable 0, `rt1` → runtime variable 1 (no leading zeros).
fn canonical_var(name: &str) -> Option<Var> {
    let (kind, digits) = if let Some(d) = name.strip_prefix("rt") {
        (VarKind::Runtime, d)
    } else if let Some(d) = name.strip_prefix('d') {
        (VarKind::Dim, d)
    } else if let Some(d) = name.strip_prefix('s') {
        (VarKind::Range, d)
    } else {
        return None;
    };
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    let index = digits.parse::<u32>().ok()?;
    Some(Var { kind, index })
}

/// Parses an indexing map (see the module documentation for the syntax).
pub fn parse_map(text: &str) -> Result<IndexingMap, ParseError> {
    let mut p = Parser::new(text);
    p.map().map_err(|e| e.finish(text))
}

/// Parses one expression whose variables are named by `names`.
pub fn parse_expr(text: &str, names: &Names) -> Result<Expr, ParseError> {
    let mut p = Parser::new(text);
    p.names = names.clone();
    let result = (|| {
        let e = p.sum()?;
        p.expect_eof()?;
        Ok(e.expr)
    })();
    result.map_err(|e: RawError| e.finish(text))
}

impl FromStr for IndexingMap {
    type Err = ParseError;
    /// [`parse_map`].
    fn from_str(s: &str) -> Result<IndexingMap, ParseError> {
        parse_map(s)
    }
}

impl FromStr for Expr {
    type Err = ParseError;
    /// [`parse_expr`] with [`Names::canonical`].
    fn from_str(s: &str) -> Result<Expr, ParseError> {
        parse_expr(s, &Names::canonical())
    }
}

/// A parsed expression and an upper bound on the depth of its tree.
#[derive(Clone, Copy)]
struct Parsed {
    expr: Expr,
    depth: u32,
}

/// A declared variable of a map header.
struct Decl<'a> {
    name: &'a str,
    pos: Pos,
    bounds: Option<Interval>,
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    /// The lookahead token.
    tok: Token<'a>,
    /// A lexing error met while reading the lookahead, reported when the lookahead is needed.
    pending: Option<RawError>,
    names: Names,
    nesting: usize,
}

fn kind_name(kind: VarKind) -> &'static str {
    match kind {
        VarKind::Dim => "dimension",
        VarKind::Range => "range variable",
        VarKind::Runtime => "runtime variable",
    }
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Parser<'a> {
        let mut lexer = Lexer::new(src);
        let (tok, pending) = match lexer.next_token() {
            Ok(t) => (t, None),
            Err(e) => (eof_token(e.pos), Some(e)),
        };
        Parser {
            lexer,
            tok,
            pending,
            names: Names::new(),
            nesting: 0,
        }
    }

    /// The lookahead token (or the lexing error that stands in its place).
    fn peek(&mut self) -> PResult<Token<'a>> {
        match self.pending.take() {
            Some(e) => Err(e),
            None => Ok(self.tok),
        }
    }

    /// Consumes the lookahead token and returns it.
    fn bump(&mut self) -> PResult<Token<'a>> {
        let t = self.peek()?;
        match self.lexer.next_token() {
            Ok(next) => self.tok = next,
            Err(e) => {
                self.tok = eof_token(e.pos);
                self.pending = Some(e);
            }
        }
        Ok(t)
    }

    fn expected<T>(&mut self, what: &str) -> PResult<T> {
        let t = self.peek()?;
        err(t.pos, format!("expected {what}, found {}", t.describe()))
    }

    fn expect_punct(&mut self, c: char, what: &str) -> PResult<Token<'a>> {
        if self.peek()?.is_punct(c) {
            self.bump()
        } else {
            self.expected(what)
        }
    }

    fn expect_eof(&mut self) -> PResult<()> {
        if self.peek()?.tok == Tok::Eof {
            Ok(())
        } else {
            self.expected("end of input")
        }
    }

    /// Enters one level of syntactic nesting at `pos`.
    fn enter(&mut self, pos: Pos) -> PResult<()> {
        if self.nesting >= MAX_NESTING {
            return err(
                pos,
                format!("expression nested too deeply (more than {MAX_NESTING} levels)"),
            );
        }
        self.nesting += 1;
        Ok(())
    }
    fn leave(&mut self) {
        self.nesting -= 1;
    }

    // --- expressions ---

    /// Combines two operands, checking the depth of the resulting tree.
    fn combine(
        &self,
        a: Parsed,
        b: Parsed,
        pos: Pos,
        f: fn(Expr, Expr) -> Expr,
    ) -> PResult<Parsed> {
        let depth = a.depth.max(b.depth) + 1;
        if depth > MAX_TREE_DEPTH {
            return err(
                pos,
                format!("expression too deep (more than {MAX_TREE_DEPTH} nested operations)"),
            );
        }
        Ok(Parsed {
            expr: f(a.expr, b.expr),
            depth,
        })
    }

    /// sum := term (('+' | '-') term)*
    fn sum(&mut self) -> PResult<Parsed> {
        let mut acc = self.term()?;
        loop {
            let t = self.peek()?;
            let f: fn(Expr, Expr) -> Expr = match t.tok {
                Tok::Punct('+') => Expr::add,
                Tok::Punct('-') => Expr::sub,
                _ => return Ok(acc),
            };
            self.bump()?;
            let rhs = self.term()?;
            acc = self.combine(acc, rhs, t.pos, f)?;
        }
    }

    /// term := unary (('*' | 'floordiv' | '/' | 'ceildiv' | 'mod') unary)*, plus `16 d0`.
    fn term(&mut self) -> PResult<Parsed> {
        let (mut acc, mut only_literal) = self.unary()?;
        loop {
            let t = self.peek()?;
            let f: fn(Expr, Expr) -> Expr = match t.tok {
                Tok::Punct('*') => Expr::mul,
                Tok::Punct('/') => Expr::floor_div,
                Tok::Ident("floordiv") => Expr::floor_div,
                Tok::Ident("ceildiv") => Expr::ceil_div,
                Tok::Ident("mod") => Expr::modulo,
                // A coefficient written before a variable: `16 d0`, `-11 d0`, `2 min(d0, 1)`.
                Tok::Ident(name)
                    if only_literal
                        && (!KEYWORDS.contains(&name) || matches!(name, "min" | "max")) =>
                {
                    let rhs = self.unary()?.0;
                    acc = self.combine(acc, rhs, t.pos, Expr::mul)?;
                    only_literal = false;
                    continue;
                }
                _ => return Ok(acc),
            };
            self.bump()?;
            let rhs = self.unary()?.0;
            // `x floordiv 0` and `x mod 0` have no value anywhere: reject, never keep them.
            if !t.is_punct('*') && rhs.expr.as_const() == Some(0) {
                return err(t.pos, "division by zero");
            }
            acc = self.combine(acc, rhs, t.pos, f)?;
            only_literal = false;
        }
    }

    /// unary := '-' unary | primary; a `-` before an integer literal makes a negative literal.
    /// Also says whether the operand is an integer literal.
    fn unary(&mut self) -> PResult<(Parsed, bool)> {
        let t = self.peek()?;
        if !t.is_punct('-') {
            return self.primary();
        }
        self.bump()?;
        if let Tok::Int(digits) = self.peek()?.tok {
            self.bump()?;
            let value = match digits.parse::<u64>() {
                Ok(v) if v <= 1u64 << 63 => (v as i128).wrapping_neg() as i64,
                _ => return err(t.pos, "integer literal out of range"),
            };
            return Ok((leaf(Expr::constant(value)), true));
        }
        self.enter(t.pos)?;
        let (operand, _) = self.unary()?;
        self.leave();
        let r = Parsed {
            expr: operand.expr.neg(),
            depth: operand.depth + 1,
        };
        if r.depth > MAX_TREE_DEPTH {
            return err(t.pos, "expression too deep");
        }
        Ok((r, false))
    }

    /// primary := integer | identifier | '(' sum ')' | ('min' | 'max') '(' sum ',' sum ')'
    fn primary(&mut self) -> PResult<(Parsed, bool)> {
        let t = self.peek()?;
        match t.tok {
            Tok::Int(digits) => {
                let value = match digits.parse::<i64>() {
                    Ok(v) => v,
                    Err(_) => return err(t.pos, "integer literal out of range"),
                };
                self.bump()?;
                Ok((leaf(Expr::constant(value)), true))
            }
            Tok::Ident(name @ ("min" | "max")) => {
                self.bump()?;
                self.expect_punct('(', &format!("`(` after `{name}`"))?;
                self.enter(t.pos)?;
                let a = self.sum()?;
                self.expect_punct(',', "`,` or an operator")?;
                let b = self.sum()?;
                self.expect_punct(')', "`)` or an operator")?;
                self.leave();
                let f = if name == "min" { Expr::min } else { Expr::max };
                Ok((self.combine(a, b, t.pos, f)?, false))
            }
            Tok::Ident(name) if KEYWORDS.contains(&name) => self.expected("an expression"),
            Tok::Ident(name) => match self.names.lookup(name) {
                Some(v) => {
                    self.bump()?;
                    Ok((leaf(Expr::var(v)), false))
                }
                None => err(t.pos, format!("unknown variable `{name}`")),
            },
            Tok::Punct('(') => {
                self.bump()?;
                self.enter(t.pos)?;
                let e = self.sum()?;
                self.expect_punct(')', "`)` or an operator")?;
                self.leave();
                Ok((e, false))
            }
            _ => self.expected("an expression"),
        }
    }

    // --- maps ---

    fn map(&mut self) -> PResult<IndexingMap> {
        let t = self.peek()?;
        match t.tok {
            Tok::Ident("KNOWN") => {
                self.bump()?;
                if !self.peek()?.is_ident("EMPTY") {
                    return self.expected("`EMPTY` after `KNOWN`");
                }
                self.bump()?;
                self.expect_eof()?;
                return Ok(IndexingMap::known_empty());
            }
            Tok::Ident("UNDEFINED") => {
                self.bump()?;
                self.expect_eof()?;
                return Ok(IndexingMap::undefined());
            }
            Tok::Punct('(') => {}
            _ => return self.expected("a map"),
        }
        // Header.
        let mut decls: [Vec<Decl<'a>>; 3] = Default::default();
        let mut last = 0;
        for (slot, (kind, open, close)) in [
            (VarKind::Dim, '(', ')'),
            (VarKind::Range, '[', ']'),
            (VarKind::Runtime, '{', '}'),
        ]
        .into_iter()
        .enumerate()
        {
            if slot > 0 && !self.peek()?.is_punct(open) {
                continue;
            }
            self.bump()?;
            decls[slot] = self.declarations(kind, close)?;
            last = slot;
        }
        if self.peek()?.tok != Tok::Arrow {
            return self.expected(["`[`, `{` or `->`", "`{` or `->`", "`->`"][last]);
        }
        self.bump()?;
        // Results.
        self.expect_punct('(', "`(`")?;
        let mut results = Vec::new();
        if self.peek()?.is_punct(')') {
            self.bump()?;
        } else {
            loop {
                results.push(self.sum()?.expr);
                let t = self.peek()?;
                if t.is_punct(',') {
                    self.bump()?;
                } else if t.is_punct(')') {
                    self.bump()?;
                    break;
                } else {
                    return self.expected("`)` or `,`");
                }
            }
        }
        // Domain.
        let constraints = self.domain(&mut decls)?;
        let mut bounds: [Vec<Interval>; 3] = Default::default();
        for (slot, list) in decls.iter().enumerate() {
            for d in list {
                match d.bounds {
                    Some(b) => bounds[slot].push(b),
                    None => return err(d.pos, format!("missing bounds for `{}`", d.name)),
                }
            }
        }
        let [dims, ranges, runtimes] = bounds;
        IndexingMap::new(dims, ranges, runtimes, results, constraints)
            .or_else(|e| err(Pos { line: 1, column: 1 }, format!("invalid map: {e}")))
    }

    /// Names up to `close`, declaring each as the next variable of `kind`.
    fn declarations(&mut self, kind: VarKind, close: char) -> PResult<Vec<Decl<'a>>> {
        let mut out: Vec<Decl<'a>> = Vec::new();
        if self.peek()?.is_punct(close) {
            self.bump()?;
            return Ok(out);
        }
        loop {
            let t = self.peek()?;
            let name = match t.tok {
                Tok::Ident(name) if !KEYWORDS.contains(&name) => name,
                Tok::Ident(name) => {
                    return err(t.pos, format!("`{name}` is a keyword, not a variable name"))
                }
                _ => return self.expected("a variable name"),
            };
            let var = Var {
                kind,
                index: out.len() as u32,
            };
            if self.names.lookup(name).is_some() {
                return err(t.pos, format!("variable `{name}` declared twice"));
            }
            if let Some(c) = canonical_var(name).filter(|c| *c != var) {
                return err(
                    t.pos,
                    format!(
                        "`{name}` names {} {}, not {} {}",
                        kind_name(c.kind),
                        c.index,
                        kind_name(kind),
                        var.index
                    ),
                );
            }
            self.bump()?;
            self.names.declare(name, var);
            out.push(Decl {
                name,
                pos: t.pos,
                bounds: None,
            });
            let t = self.peek()?;
            if t.is_punct(',') {
                self.bump()?;
            } else if t.is_punct(close) {
                self.bump()?;
                return Ok(out);
            } else {
                return self.expected(&format!("`{close}` or `,`"));
            }
        }
    }

    /// Everything after the results: `, domain: item, item, ...` (commas or line breaks
    /// between items). Records bounds in `decls` and returns the other constraints.
    fn domain(&mut self, decls: &mut [Vec<Decl<'a>>; 3]) -> PResult<Vec<(Expr, Interval)>> {
        let mut constraints = Vec::new();
        let t = self.peek()?;
        if t.tok == Tok::Eof {
            return Ok(constraints);
        }
        if t.is_punct(',') {
            self.bump()?;
        } else if !t.newline_before {
            return self.expected("`,` or end of input");
        }
        let t = self.peek()?;
        if t.is_ident("domain") {
            self.bump()?;
            self.expect_punct(':', "`:` after `domain`")?;
        } else if !t.is_ident("is_simplified") {
            return self.expected("`domain:`");
        }
        loop {
            let t = self.peek()?;
            if t.tok == Tok::Eof {
                return Ok(constraints);
            }
            self.item(t, decls, &mut constraints)?;
            let t = self.peek()?;
            if t.is_punct(',') {
                self.bump()?;
            } else if t.tok != Tok::Eof && !t.newline_before {
                return self.expected("`,` or end of input");
            }
        }
    }

    /// One domain item: `is_simplified: true|false`, `name in [lo, hi]` or `expr in [lo, hi]`.
    fn item(
        &mut self,
        start: Token<'a>,
        decls: &mut [Vec<Decl<'a>>; 3],
        constraints: &mut Vec<(Expr, Interval)>,
    ) -> PResult<()> {
        if start.is_ident("is_simplified") {
            self.bump()?;
            self.expect_punct(':', "`:` after `is_simplified`")?;
            let t = self.peek()?;
            if t.is_ident("true") || t.is_ident("false") {
                self.bump()?;
                return Ok(());
            }
            return self.expected("`true` or `false`");
        }
        let e = self.sum()?.expr;
        if !self.peek()?.is_ident("in") {
            return self.expected("`in` or an operator");
        }
        self.bump()?;
        let interval = self.interval()?;
        match e.as_var() {
            Some(v) => {
                let slot = match v.kind {
                    VarKind::Dim => 0,
                    VarKind::Range => 1,
                    VarKind::Runtime => 2,
                };
                // Every variable the parser builds is declared, so the lookup succeeds.
                if let Some(d) = decls[slot].get_mut(v.index as usize) {
                    if d.bounds.is_some() {
                        return err(
                            start.pos,
                            format!("domain entry for `{}` given twice", d.name),
                        );
                    }
                    d.bounds = Some(interval);
                }
            }
            None => constraints.push((e, interval)),
        }
        Ok(())
    }

    /// `[lo, hi]`, or the half-open `[lo, hi)` of older XLA versions.
    fn interval(&mut self) -> PResult<Interval> {
        self.expect_punct('[', "`[`")?;
        let lo = self.integer()?;
        self.expect_punct(',', "`,`")?;
        let hi = self.integer()?;
        let t = self.peek()?;
        if t.is_punct(']') {
            self.bump()?;
            Ok(Interval::new(lo, hi))
        } else if t.is_punct(')') {
            self.bump()?;
            match hi.checked_sub(1) {
                Some(h) => Ok(Interval::new(lo, h)),
                None => err(t.pos, "half-open interval bound out of range"),
            }
        } else {
            self.expected("`]`")
        }
    }

    /// An integer literal, possibly negative.
    fn integer(&mut self) -> PResult<i64> {
        let t = self.peek()?;
        let negative = t.is_punct('-');
        if negative {
            self.bump()?;
        }
        let Tok::Int(digits) = self.peek()?.tok else {
            return self.expected("an integer");
        };
        self.bump()?;
        let value = digits.parse::<u64>().ok().and_then(|v| {
            if negative {
                (v <= 1u64 << 63).then(|| (v as i128).wrapping_neg() as i64)
            } else {
                i64::try_from(v).ok()
            }
        });
        match value {
            Some(v) => Ok(v),
            None => err(t.pos, "integer literal out of range"),
        }
    }
}

fn leaf(expr: Expr) -> Parsed {
    Parsed { expr, depth: 0 }
}

fn eof_token<'a>(pos: Pos) -> Token<'a> {
    Token {
        tok: Tok::Eof,
        pos,
        newline_before: false,
    }
}
