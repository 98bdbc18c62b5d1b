//! A cursor over one line: words, numbers, types, variables, accesses, guards and
//! values.

use affine::parse::{parse_expr, Names};
use affine::{Expr, Var};

use crate::kir::types::ScalarType;
use crate::kir::value::{BinOp, Const, Guard, Value, VarId};

use super::names::*;
use super::source::*;

/// Values nest at most this deep (the parser recurses once a level).
const MAX_VALUE_DEPTH: usize = 256;

/// A cursor over one line; `pos` is a byte offset into the whole source.
pub(super) struct Cur<'p, 'a> {
    pub(super) p: &'p Parser<'a>,
    pub(super) pos: usize,
    pub(super) end: usize,
    pub(super) depth: usize,
}

impl<'p, 'a> Cur<'p, 'a> {
    pub(super) fn new(p: &'p Parser<'a>, line: Line<'a>) -> Cur<'p, 'a> {
        Cur {
            p,
            pos: line.start,
            end: line.start + line.text.len(),
            depth: 0,
        }
    }

    pub(super) fn rest(&self) -> &'a str {
        &self.p.src[self.pos..self.end]
    }

    pub(super) fn err_here(&self, message: String) -> KirParseError {
        self.p.err(self.pos, message)
    }

    /// An error at the start of `word`, just read.
    pub(super) fn err_back(&self, word: &str, message: String) -> KirParseError {
        self.p.err(self.pos - word.len(), message)
    }

    pub(super) fn eat(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    pub(super) fn keyword(&mut self, s: &str) -> PResult<()> {
        if self.eat(s) {
            Ok(())
        } else {
            let found = self
                .rest()
                .chars()
                .next()
                .map_or_else(|| "the end of the line".to_string(), |ch| format!("`{ch}`"));
            Err(self.err_here(format!("expected `{}`, found {found}", s.trim())))
        }
    }

    pub(super) fn end(&self) -> PResult<()> {
        if self.rest().is_empty() {
            Ok(())
        } else {
            Err(self.err_here(format!("unexpected `{}`", self.rest())))
        }
    }

    /// A word of letters, digits, `_`, `.` and `-` (names of kernels and buffers).
    pub(super) fn word(&mut self) -> PResult<&'a str> {
        let r = self.rest();
        let n = r
            .find(|ch: char| !(ch.is_alphanumeric() || matches!(ch, '_' | '.' | '-')))
            .unwrap_or(r.len());
        if n == 0 {
            return Err(self.err_here("expected a name".into()));
        }
        self.pos += n;
        Ok(&r[..n])
    }

    /// An identifier of lowercase letters, digits and `_`.
    pub(super) fn ident(&mut self) -> &'a str {
        let r = self.rest();
        let n = r
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
            .unwrap_or(r.len());
        self.pos += n;
        &r[..n]
    }

    pub(super) fn int(&mut self) -> PResult<i64> {
        let r = self.rest();
        let neg = usize::from(r.starts_with('-'));
        let n = neg + r[neg..].bytes().take_while(u8::is_ascii_digit).count();
        if n == neg {
            return Err(self.err_here("expected an integer".into()));
        }
        let v = r[..n]
            .parse::<i64>()
            .map_err(|_| self.err_here(format!("integer `{}` out of range", &r[..n])))?;
        self.pos += n;
        Ok(v)
    }

    /// Checks the digits after a `b`/`l` prefix are `expected`.
    pub(super) fn index_of(&mut self, what: &str, expected: usize) -> PResult<()> {
        let at = self.pos;
        let i = self.int()?;
        if usize::try_from(i).ok() != Some(expected) {
            return Err(self
                .p
                .err(at, format!("{what} {i} out of order: expected {expected}")));
        }
        Ok(())
    }

    /// Comma-separated integers up to `close` (consumed).
    pub(super) fn int_list(&mut self, close: char) -> PResult<Vec<i64>> {
        let mut out = Vec::new();
        if self.rest().starts_with(close) {
            self.pos += 1;
            return Ok(out);
        }
        loop {
            out.push(self.int()?);
            if self.eat(",") {
                continue;
            }
            let mut buf = [0; 4];
            self.keyword(close.encode_utf8(&mut buf))?;
            return Ok(out);
        }
    }

    /// `NAME: TY...`: the name (up to the last `: `) and the offset of the type.
    pub(super) fn name_before_type(&mut self) -> PResult<(String, usize)> {
        let r = self.rest();
        match r.rfind(": ") {
            Some(i) if i > 0 => Ok((r[..i].to_string(), self.pos + i + 2)),
            _ => Err(self.err_here("expected `NAME: TYPE`".into())),
        }
    }

    pub(super) fn ty(&mut self) -> PResult<ScalarType> {
        let at = self.pos;
        let w = self.ident();
        scalar_type(w).ok_or_else(|| {
            if w.is_empty() {
                self.p.err(at, "expected a type".into())
            } else {
                self.p.err(at, format!("unknown type `{w}`"))
            }
        })
    }

    /// A loop, block or runtime variable name (`d0`, `s1`, `rt2`).
    pub(super) fn var(&mut self) -> PResult<Var> {
        let at = self.pos;
        let w = self.ident();
        parse_expr(w, &Names::canonical())
            .ok()
            .and_then(Expr::as_var)
            .ok_or_else(|| {
                self.p
                    .err(at, format!("expected an index variable, found `{w}`"))
            })
    }

    /// `vN`.
    pub(super) fn var_id(&mut self) -> PResult<VarId> {
        let at = self.pos;
        let w = self.ident();
        w.strip_prefix('v')
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u32>().ok())
            .map(VarId)
            .ok_or_else(|| {
                self.p
                    .err(at, format!("expected a scalar variable `vN`, found `{w}`"))
            })
    }

    /// An index expression in `[start, stop)` of the source.
    pub(super) fn expr_in(&self, start: usize, stop: usize) -> PResult<Expr> {
        let text = &self.p.src[start..stop];
        parse_expr(text, &Names::canonical()).map_err(|e| {
            let byte = text
                .char_indices()
                .nth(e.column.saturating_sub(1))
                .map_or(text.len(), |(i, _)| i);
            self.p.err(start + byte, e.message)
        })
    }

    /// `bI[OFFSET]` or `lI[OFFSET]`: the index, the element type and the offset.
    pub(super) fn access(&mut self, ctx: &Ctx) -> PResult<(usize, ScalarType, Expr)> {
        let at = self.pos;
        let w = self.ident();
        let (is_buf, digits) = if let Some(d) = w.strip_prefix('b') {
            (true, d)
        } else if let Some(d) = w.strip_prefix('l') {
            (false, d)
        } else {
            return Err(self
                .p
                .err(at, format!("expected a buffer or local, found `{w}`")));
        };
        let index = digits.parse::<usize>().map_err(|_| {
            self.p
                .err(at, format!("expected a buffer or local, found `{w}`"))
        })?;
        let ty = if is_buf {
            ctx.buffers.get(index).map(|b| b.ty)
        } else {
            ctx.locals.get(index).map(|l| l.ty)
        }
        .ok_or_else(|| {
            let what = if is_buf { "buffer" } else { "local" };
            self.p.err(at, format!("unknown {what} `{w}`"))
        })?;
        self.keyword("[")?;
        let start = self.pos;
        let Some(n) = self.rest().find(']') else {
            return Err(self.err_here("`[` without `]`".into()));
        };
        let offset = self.expr_in(start, start + n)?;
        self.pos = start + n + 1;
        Ok((index, ty, offset))
    }

    /// A guard in `[pos, stop)`: `true` or `E in [LO, HI] && ...`; leaves `pos` at `stop`.
    pub(super) fn guard_until(&mut self, stop: usize) -> PResult<Guard> {
        let text = &self.p.src[self.pos..stop];
        let base = self.pos;
        self.pos = stop;
        if text == "true" {
            return Ok(Guard::default());
        }
        let mut conds = Vec::new();
        let mut offset = 0;
        for part in text.split(" && ") {
            let start = base + offset;
            offset += part.len() + 4;
            let Some(i) = part.rfind(" in [") else {
                return Err(self.p.err(start, "expected `EXPR in [LO, HI]`".into()));
            };
            let e = self.expr_in(start, start + i)?;
            let mut c = Cur {
                p: self.p,
                pos: start + i + 5,
                end: start + part.len(),
                depth: 0,
            };
            let lo = c.int()?;
            c.keyword(", ")?;
            let hi = c.int()?;
            c.keyword("]")?;
            c.end()?;
            conds.push((e, lo, hi));
        }
        Ok(Guard { conds })
    }

    pub(super) fn value(&mut self, ctx: &Ctx) -> PResult<Value> {
        self.depth += 1;
        if self.depth > MAX_VALUE_DEPTH {
            return Err(self.err_here("value nested too deeply".into()));
        }
        let v = self.value_inner(ctx);
        self.depth -= 1;
        v
    }

    pub(super) fn same_types(&self, at: usize, what: &str, a: &Value, b: &Value) -> PResult<()> {
        if a.ty() != b.ty() {
            return Err(self
                .p
                .err(at, format!("{what} of a {} and a {} value", a.ty(), b.ty())));
        }
        Ok(())
    }

    pub(super) fn value_inner(&mut self, ctx: &Ctx) -> PResult<Value> {
        let at = self.pos;
        let r = self.rest();
        let first = r.chars().next().unwrap_or(' ');
        // Constants.
        if first == '(' {
            self.pos += 1;
            let re = self.float()?;
            self.keyword(",")?;
            self.eat(" ");
            let im = self.float()?;
            self.keyword("):")?;
            let t = self.ty()?;
            if !t.is_complex() {
                return Err(self.p.err(at, format!("complex constant of type {t}")));
            }
            return Ok(Value::Const(t, Const::Complex(re, im)));
        }
        if first.is_ascii_digit()
            || first == '-'
            || r.starts_with("NaN")
            || r.starts_with("inf")
            || r.starts_with("true:")
            || r.starts_with("false:")
        {
            let n = r.find(':').unwrap_or(r.len());
            let lit = &r[..n];
            self.pos += n;
            self.keyword(":")?;
            let t = self.ty()?;
            let c = if lit == "true" || lit == "false" {
                Const::Bool(lit == "true")
            } else if lit.contains(['.', 'e', 'E', 'N', 'i']) {
                Const::Float(
                    lit.parse::<f64>()
                        .map_err(|_| self.p.err(at, format!("bad float `{lit}`")))?,
                )
            } else {
                Const::Int(
                    lit.parse::<i128>()
                        .map_err(|_| self.p.err(at, format!("bad integer `{lit}`")))?,
                )
            };
            return Ok(Value::Const(t, c));
        }
        if r.starts_with("if ") {
            self.pos += 3;
            let Some(n) = self.rest().find(" then ") else {
                return Err(self.err_here("`if` without `then`".into()));
            };
            let guard = self.guard_until(self.pos + n)?;
            self.keyword(" then ")?;
            let a = self.value(ctx)?;
            self.keyword(" else ")?;
            let b = self.value(ctx)?;
            self.same_types(at, "`if` choosing", &a, &b)?;
            return Ok(Value::Cond(guard, Box::new(a), Box::new(b)));
        }
        let w = self.ident();
        if w.is_empty() {
            return Err(self.p.err(at, "expected a value".into()));
        }
        // Variables, loads.
        if let Some(d) = w
            .strip_prefix('v')
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
        {
            if !d.is_empty() {
                let id = d
                    .parse::<u32>()
                    .map_err(|_| self.p.err(at, format!("bad variable `{w}`")))?;
                let Some(&t) = ctx.vars.get(&id) else {
                    return Err(self.p.err(at, format!("v{id} used before its declaration")));
                };
                return Ok(Value::Var(VarId(id), t));
            }
        }
        if self.rest().starts_with('[') && (w.starts_with('b') || w.starts_with('l')) {
            self.pos = at;
            let (index, ty, offset) = self.access(ctx)?;
            return Ok(if w.starts_with('b') {
                Value::Load {
                    buf: index,
                    offset,
                    ty,
                }
            } else {
                Value::LocalLoad {
                    local: index,
                    offset,
                    ty,
                }
            });
        }
        if w == "index" {
            self.keyword("(")?;
            let start = self.pos;
            let mut depth = 1usize;
            let mut stop = None;
            for (i, ch) in self.rest().char_indices() {
                match ch {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            stop = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(n) = stop else {
                return Err(self.err_here("`index(` without `)`".into()));
            };
            let e = self.expr_in(start, start + n)?;
            self.pos = start + n + 1;
            return Ok(Value::Index(e));
        }
        if w == "convert" || w == "bitcast" {
            self.keyword(".")?;
            let t = self.ty()?;
            self.keyword("(")?;
            let a = self.value(ctx)?;
            self.keyword(")")?;
            return Ok(if w == "convert" {
                Value::Convert(Box::new(a), t)
            } else {
                Value::BitcastConvert(Box::new(a), t)
            });
        }
        if w == "select" {
            self.keyword("(")?;
            let p = self.value(ctx)?;
            self.keyword(", ")?;
            let a = self.value(ctx)?;
            self.keyword(", ")?;
            let b = self.value(ctx)?;
            self.keyword(")")?;
            if p.ty() != ScalarType::Pred {
                return Err(self
                    .p
                    .err(at, format!("select on a {} value, not pred", p.ty())));
            }
            self.same_types(at, "select", &a, &b)?;
            return Ok(Value::Select(Box::new(p), Box::new(a), Box::new(b)));
        }
        if let Some(op) = cmpop(w) {
            let total = self.eat(".total");
            self.keyword("(")?;
            let a = self.value(ctx)?;
            self.keyword(", ")?;
            let b = self.value(ctx)?;
            self.keyword(")")?;
            self.same_types(at, "comparison", &a, &b)?;
            return Ok(Value::Compare(op, total, Box::new(a), Box::new(b)));
        }
        if let Some(op) = unop(w) {
            self.keyword("(")?;
            let a = self.value(ctx)?;
            self.keyword(")")?;
            let t = unop_type(op, a.ty());
            return Ok(Value::Unary(op, Box::new(a), t));
        }
        if let Some(op) = binop(w) {
            self.keyword("(")?;
            let a = self.value(ctx)?;
            self.keyword(", ")?;
            let b = self.value(ctx)?;
            self.keyword(")")?;
            self.same_types(at, w, &a, &b)?;
            let t = if op == BinOp::Complex {
                match a.ty() {
                    ScalarType::F32 => ScalarType::C64,
                    ScalarType::F64 => ScalarType::C128,
                    t => {
                        return Err(self.p.err(at, format!("complex of {t} parts")));
                    }
                }
            } else {
                a.ty()
            };
            return Ok(Value::Binary(op, Box::new(a), Box::new(b), t));
        }
        Err(self.p.err(at, format!("unknown value `{w}`")))
    }

    pub(super) fn float(&mut self) -> PResult<f64> {
        let r = self.rest();
        let n = r.find([',', ')']).unwrap_or(r.len());
        let lit = &r[..n];
        let v = lit
            .parse::<f64>()
            .map_err(|_| self.err_here(format!("bad float `{lit}`")))?;
        self.pos += n;
        Ok(v)
    }
}
