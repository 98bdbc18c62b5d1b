//! Parsing the text form of kernels ([`kernel_text`](super::kernel_text)) back into
//! [`Kernel`]s, so that tests can start from kernel IR text ("KIR in, C out").
//!
//! The syntax is exactly what the printer writes: a header line `kernel NAME blocks=N`
//! (with ` (VAR = block)` when the grid binds a variable), buffer lines
//! `bI ACCESS NAME: TY[dims]{minor_to_major}`, local lines `lI local NAME: TY[LEN]`, then
//! one statement a line (`//` comments, `for VAR in [LO, HI] {`, `let`/`var vN: TY = V`,
//! `vN = V`, `bind rtK = V`, `if GUARD {` ... `} else {` ... `}`, `bI[OFFSET] = V`,
//! `lI[OFFSET] = V`). Index expressions use `affine`'s expression syntax. Indentation is not
//! checked; blank lines are skipped.
//!
//! # The invariant
//!
//! The text form does not hold everything a [`Kernel`] does, so `parse(print(k)) == k`
//! cannot hold in general; what holds is `print(parse(print(k))) == print(k)`. Lost, and
//! rebuilt as follows:
//! - the bounds of the dimension and range variables ([`Kernel::dims`],
//!   [`Kernel::ranges`]): rebuilt from the loops over them (their union) and, for the
//!   block variable, `[0, blocks - 1]`; variables no loop binds get `[0, 0]`;
//! - the bounds of the runtime variables ([`Kernel::runtimes`]): the values of the type
//!   bound to them ([`ScalarType::index_range`]), as the emitters choose them;
//! - the types of scalar variables never declared by a `let`/`var` line: `s64`;
//! - a comment of several lines and several one-line comments print alike: consecutive
//!   comment lines of one block parse as one [`Stmt::Comment`] (the emitters' form);
//! - the sign and payload of a NaN constant (`NaN` parses as the default NaN).
//!
//! The access maps in a kernel's first comment are derived data kept only in the comment
//! text; they parse back as that text.
//!
//! Errors carry the 1-based line and column of the offending text; the parser never
//! panics.

use std::collections::BTreeMap;

use affine::parse::{parse_expr, Names};
use affine::{Expr, Interval, Var, VarKind};
use thiserror::Error;

use super::kernel::{Access, BufferParam, Grid, Kernel, Local, Stmt};
use super::types::ScalarType;
use super::value::{BinOp, CmpOp, Const, Guard, UnOp, Value, VarId};

/// A syntax or type error in kernel IR text, at a 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{line}:{column}: {message}")]
pub struct KirParseError {
    /// Line of the offending text, from 1.
    pub line: usize,
    /// Column of the offending text, from 1.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// Parses the text of exactly one kernel (see the module documentation).
pub fn parse_kernel(text: &str) -> Result<Kernel, KirParseError> {
    let mut ks = parse_kernels(text)?;
    match ks.len() {
        1 => Ok(ks.remove(0)),
        0 => Err(error_at(text, text.len(), "expected a kernel".into())),
        _ => {
            let pos = nth_kernel_offset(text, 1);
            Err(error_at(
                text,
                pos,
                "expected one kernel, found several".into(),
            ))
        }
    }
}

/// Parses the text of several kernels, one after the other (each starts with its
/// `kernel` line).
pub fn parse_kernels(text: &str) -> Result<Vec<Kernel>, KirParseError> {
    let lines = split_lines(text);
    let mut p = Parser {
        src: text,
        lines,
        next: 0,
    };
    let mut out = Vec::new();
    while p.peek().is_some() {
        out.push(p.kernel()?);
    }
    Ok(out)
}

fn nth_kernel_offset(text: &str, n: usize) -> usize {
    split_lines(text)
        .into_iter()
        .filter(|l| l.text.starts_with("kernel "))
        .nth(n)
        .map_or(0, |l| l.start)
}

/// Builds an error pointing at byte `pos` of `src`.
fn error_at(src: &str, pos: usize, message: String) -> KirParseError {
    let mut pos = pos.min(src.len());
    while !src.is_char_boundary(pos) {
        pos -= 1;
    }
    let before = &src[..pos];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = src[line_start..pos].chars().count() + 1;
    KirParseError {
        line,
        column,
        message,
    }
}

/// A non-blank line, trimmed, with the byte offset of its first character in the source.
#[derive(Clone, Copy)]
struct Line<'a> {
    text: &'a str,
    start: usize,
}

fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for raw in text.split('\n') {
        let l = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed_start = l.len() - l.trim_start().len();
        let t = l.trim();
        if !t.is_empty() {
            out.push(Line {
                text: t,
                start: offset + trimmed_start,
            });
        }
        offset += raw.len() + 1;
    }
    out
}

type PResult<T> = Result<T, KirParseError>;

struct Parser<'a> {
    src: &'a str,
    lines: Vec<Line<'a>>,
    next: usize,
}

/// The state of one kernel being parsed.
struct Ctx {
    buffers: Vec<BufferParam>,
    locals: Vec<Local>,
    vars: BTreeMap<u32, ScalarType>,
    dims: BTreeMap<u32, Interval>,
    ranges: BTreeMap<u32, Interval>,
    runtimes: BTreeMap<u32, Interval>,
}

impl Ctx {
    fn widen(&mut self, var: Var, iv: Interval) {
        let map = match var.kind {
            VarKind::Dim => &mut self.dims,
            VarKind::Range => &mut self.ranges,
            VarKind::Runtime => &mut self.runtimes,
        };
        map.entry(var.index)
            .and_modify(|old| *old = Interval::new(old.lo.min(iv.lo), old.hi.max(iv.hi)))
            .or_insert(iv);
    }
}

fn dense<T: Copy>(map: &BTreeMap<u32, T>, fill: T) -> Vec<T> {
    let n = map.keys().next_back().map_or(0, |&k| k as usize + 1);
    (0..n)
        .map(|i| map.get(&(i as u32)).copied().unwrap_or(fill))
        .collect()
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.next).copied()
    }

    fn err(&self, pos: usize, message: String) -> KirParseError {
        error_at(self.src, pos, message)
    }

    fn kernel(&mut self) -> PResult<Kernel> {
        let Some(line) = self.peek() else {
            return Err(self.err(self.src.len(), "expected a kernel".into()));
        };
        self.next += 1;
        let mut c = Cur::new(self, line);
        c.keyword("kernel ")?;
        let name = c.word()?.to_string();
        c.keyword(" blocks=")?;
        let blocks = c.int()?;
        if blocks < 1 {
            return Err(c.err_here("a kernel has at least one block".into()));
        }
        let mut block_var = None;
        if c.eat(" (") {
            block_var = Some(c.var()?);
            c.keyword(" = block)")?;
        }
        c.end()?;
        let mut ctx = Ctx {
            buffers: Vec::new(),
            locals: Vec::new(),
            vars: BTreeMap::new(),
            dims: BTreeMap::new(),
            ranges: BTreeMap::new(),
            runtimes: BTreeMap::new(),
        };
        if let Some(v) = block_var {
            if v.kind == VarKind::Runtime {
                return Err(self.err(
                    line.start,
                    "the block variable is a runtime variable".into(),
                ));
            }
            ctx.widen(v, Interval::new(0, blocks - 1));
        }
        // Buffers and locals.
        while let Some(line) = self.peek() {
            if is_buffer_line(line.text) {
                self.next += 1;
                let b = self.buffer(line, ctx.buffers.len())?;
                ctx.buffers.push(b);
            } else if is_local_line(line.text) {
                self.next += 1;
                let l = self.local(line, ctx.locals.len())?;
                ctx.locals.push(l);
            } else {
                break;
            }
        }
        let (body, closer) = self.block(&mut ctx)?;
        if let Some(l) = closer {
            return Err(self.err(l.start, "`}` without an open block".into()));
        }
        Ok(Kernel {
            name,
            buffers: ctx.buffers,
            grid: Grid { blocks, block_var },
            dims: dense(&ctx.dims, Interval::new(0, 0)),
            ranges: dense(&ctx.ranges, Interval::new(0, 0)),
            runtimes: dense(&ctx.runtimes, Interval::new(0, 0)),
            vars: dense(&ctx.vars, ScalarType::S64),
            locals: ctx.locals,
            body,
        })
    }

    fn buffer(&self, line: Line<'a>, index: usize) -> PResult<BufferParam> {
        let mut c = Cur::new(self, line);
        c.keyword("b")?;
        c.index_of("buffer", index)?;
        c.keyword(" ")?;
        let access = match c.word()? {
            "in" => Access::In,
            "out" => Access::Out,
            "inout" => Access::InOut,
            w => return Err(c.err_back(w, format!("unknown access `{w}`"))),
        };
        c.keyword(" ")?;
        let (name, ty_at) = c.name_before_type()?;
        c.pos = ty_at;
        let ty = c.ty()?;
        c.keyword("[")?;
        let dims = c.int_list(']')?;
        c.keyword("{")?;
        let minor_to_major = c.int_list('}')?;
        c.end()?;
        Ok(BufferParam {
            name,
            ty,
            dims,
            minor_to_major,
            access,
        })
    }

    fn local(&self, line: Line<'a>, index: usize) -> PResult<Local> {
        let mut c = Cur::new(self, line);
        c.keyword("l")?;
        c.index_of("local", index)?;
        c.keyword(" local ")?;
        let (name, ty_at) = c.name_before_type()?;
        c.pos = ty_at;
        let ty = c.ty()?;
        c.keyword("[")?;
        let len = c.int()?;
        c.keyword("]")?;
        c.end()?;
        Ok(Local { name, ty, len })
    }

    /// Statements up to a `}` line (returned) or the next kernel or the end (`None`).
    fn block(&mut self, ctx: &mut Ctx) -> PResult<(Vec<Stmt>, Option<Line<'a>>)> {
        let mut out: Vec<Stmt> = Vec::new();
        let mut last_was_comment = false;
        while let Some(line) = self.peek() {
            let t = line.text;
            if t.starts_with("kernel ") {
                return Ok((out, None));
            }
            self.next += 1;
            if t == "}" || t == "} else {" {
                return Ok((out, Some(line)));
            }
            if let Some(rest) = t.strip_prefix("//") {
                let text = rest.strip_prefix(' ').unwrap_or(rest);
                match out.last_mut() {
                    Some(Stmt::Comment(c)) if last_was_comment => {
                        c.push('\n');
                        c.push_str(text);
                    }
                    _ => out.push(Stmt::Comment(text.to_string())),
                }
                last_was_comment = true;
                continue;
            }
            last_was_comment = false;
            let s = self.stmt(line, ctx)?;
            out.push(s);
        }
        Ok((out, None))
    }

    /// The body of a `{` line: statements and the closing `}` (or `} else {`).
    fn nested(&mut self, open: Line<'a>, ctx: &mut Ctx) -> PResult<(Vec<Stmt>, Line<'a>)> {
        match self.block(ctx)? {
            (body, Some(close)) => Ok((body, close)),
            (_, None) => Err(self.err(open.start, "block is never closed with `}`".into())),
        }
    }

    fn stmt(&mut self, line: Line<'a>, ctx: &mut Ctx) -> PResult<Stmt> {
        let t = line.text;
        let mut c = Cur::new(self, line);
        if c.eat("for ") {
            let var = c.var()?;
            c.keyword(" in [")?;
            let lo = c.int()?;
            c.keyword(", ")?;
            let hi = c.int()?;
            c.keyword("] {")?;
            c.end()?;
            if lo > hi {
                return Err(self.err(line.start, format!("empty loop range [{lo}, {hi}]")));
            }
            if var.kind == VarKind::Runtime {
                return Err(self.err(line.start + 4, format!("loop over runtime variable {var}")));
            }
            ctx.widen(var, Interval::new(lo, hi));
            let (body, close) = self.nested(line, ctx)?;
            if close.text != "}" {
                return Err(self.err(close.start, "`else` after a loop".into()));
            }
            return Ok(Stmt::Loop { var, lo, hi, body });
        }
        if t.len() > 5 && t.starts_with("if ") && t.ends_with(" {") {
            c.keyword("if ")?;
            let guard = c.guard_until(line.start + t.len() - 2)?;
            let (body, close) = self.nested(line, ctx)?;
            let else_body = if close.text == "} else {" {
                let (else_body, close2) = self.nested(close, ctx)?;
                if close2.text != "}" {
                    return Err(self.err(close2.start, "a second `else`".into()));
                }
                if else_body.is_empty() {
                    return Err(self.err(close.start, "empty `else` block".into()));
                }
                else_body
            } else {
                Vec::new()
            };
            return Ok(Stmt::If {
                guard,
                body,
                else_body,
            });
        }
        if t.starts_with("let ") || t.starts_with("var ") {
            let is_let = c.eat("let ");
            if !is_let {
                c.keyword("var ")?;
            }
            let id_at = c.pos;
            let var = c.var_id()?;
            c.keyword(": ")?;
            let ty = c.ty()?;
            c.keyword(" = ")?;
            let value_at = c.pos;
            let value = c.value(ctx)?;
            c.end()?;
            if value.ty() != ty {
                return Err(self.err(
                    value_at,
                    format!(
                        "v{} declared {ty} but bound to a {} value",
                        var.0,
                        value.ty()
                    ),
                ));
            }
            match ctx.vars.get(&var.0) {
                Some(&old) if old != ty => {
                    return Err(self.err(
                        id_at,
                        format!("v{} declared {ty} here but {old} before", var.0),
                    ))
                }
                _ => {
                    ctx.vars.insert(var.0, ty);
                }
            }
            return Ok(if is_let {
                Stmt::Let { var, value }
            } else {
                Stmt::Decl { var, value }
            });
        }
        if c.eat("bind ") {
            let var_at = c.pos;
            let var = c.var()?;
            c.keyword(" = ")?;
            let value_at = c.pos;
            let value = c.value(ctx)?;
            c.end()?;
            if var.kind != VarKind::Runtime {
                return Err(self.err(var_at, format!("bind of {var}, not a runtime variable")));
            }
            let Some((lo, hi)) = value.ty().index_range() else {
                return Err(self.err(
                    value_at,
                    format!("index variable {var} bound to a {} value", value.ty()),
                ));
            };
            ctx.widen(var, Interval::new(lo, hi));
            return Ok(Stmt::BindIndex { var, value });
        }
        if t.starts_with('v') {
            let id_at = c.pos;
            let var = c.var_id()?;
            c.keyword(" = ")?;
            let value_at = c.pos;
            let value = c.value(ctx)?;
            c.end()?;
            let Some(&ty) = ctx.vars.get(&var.0) else {
                return Err(self.err(id_at, format!("assignment to undeclared v{}", var.0)));
            };
            if value.ty() != ty {
                return Err(self.err(
                    value_at,
                    format!("v{} is {ty} but assigned a {} value", var.0, value.ty()),
                ));
            }
            return Ok(Stmt::Assign { var, value });
        }
        if t.starts_with('b') || t.starts_with('l') {
            let is_buf = t.starts_with('b');
            let (index, ty, offset) = c.access(ctx)?;
            c.keyword(" = ")?;
            let value_at = c.pos;
            let value = c.value(ctx)?;
            c.end()?;
            if value.ty() != ty {
                let what = if is_buf { "buffer b" } else { "local l" };
                return Err(self.err(
                    value_at,
                    format!("store of a {} value into {ty} {what}{index}", value.ty()),
                ));
            }
            return Ok(if is_buf {
                Stmt::Store {
                    buf: index,
                    offset,
                    value,
                }
            } else {
                Stmt::LocalStore {
                    local: index,
                    offset,
                    value,
                }
            });
        }
        Err(self.err(line.start, "expected a statement".into()))
    }
}

fn is_buffer_line(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('b') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0
        && ["in ", "out ", "inout "].iter().any(|a| {
            rest[digits..]
                .strip_prefix(' ')
                .is_some_and(|r| r.starts_with(a))
        })
}

fn is_local_line(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('l') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(" local ")
}

fn scalar_type(name: &str) -> Option<ScalarType> {
    use ScalarType as T;
    Some(match name {
        "pred" => T::Pred,
        "s8" => T::S8,
        "s16" => T::S16,
        "s32" => T::S32,
        "s64" => T::S64,
        "u8" => T::U8,
        "u16" => T::U16,
        "u32" => T::U32,
        "u64" => T::U64,
        "f16" => T::F16,
        "bf16" => T::BF16,
        "f32" => T::F32,
        "f64" => T::F64,
        "f8e4m3fn" => T::F8E4M3FN,
        "f8e5m2" => T::F8E5M2,
        "c64" => T::C64,
        "c128" => T::C128,
        _ => return None,
    })
}

fn unop(name: &str) -> Option<UnOp> {
    use UnOp as U;
    Some(match name {
        "neg" => U::Neg,
        "abs" => U::Abs,
        "not" => U::Not,
        "exp" => U::Exp,
        "expm1" => U::Expm1,
        "log" => U::Log,
        "log1p" => U::Log1p,
        "sqrt" => U::Sqrt,
        "rsqrt" => U::Rsqrt,
        "cbrt" => U::Cbrt,
        "sin" => U::Sin,
        "cos" => U::Cos,
        "tan" => U::Tan,
        "tanh" => U::Tanh,
        "logistic" => U::Logistic,
        "erf" => U::Erf,
        "floor" => U::Floor,
        "ceil" => U::Ceil,
        "round_afz" => U::RoundAfz,
        "round_even" => U::RoundEven,
        "sign" => U::Sign,
        "popcnt" => U::Popcnt,
        "clz" => U::Clz,
        "is_finite" => U::IsFinite,
        "real" => U::Real,
        "imag" => U::Imag,
        _ => return None,
    })
}

fn binop(name: &str) -> Option<BinOp> {
    use BinOp as B;
    Some(match name {
        "add" => B::Add,
        "sub" => B::Sub,
        "mul" => B::Mul,
        "div" => B::Div,
        "rem" => B::Rem,
        "max" => B::Max,
        "min" => B::Min,
        "pow" => B::Pow,
        "atan2" => B::Atan2,
        "and" => B::And,
        "or" => B::Or,
        "xor" => B::Xor,
        "shl" => B::Shl,
        "shr_logical" => B::ShrLogical,
        "shr_arith" => B::ShrArith,
        "complex" => B::Complex,
        _ => return None,
    })
}

fn cmpop(name: &str) -> Option<CmpOp> {
    Some(match name {
        "eq" => CmpOp::Eq,
        "ne" => CmpOp::Ne,
        "lt" => CmpOp::Lt,
        "le" => CmpOp::Le,
        "gt" => CmpOp::Gt,
        "ge" => CmpOp::Ge,
        _ => return None,
    })
}

/// The result type of a unary operation on a value of type `a` (as the emitters build
/// them and the verifier accepts them).
fn unop_type(op: UnOp, a: ScalarType) -> ScalarType {
    match op {
        UnOp::Real | UnOp::Imag => a.component(),
        UnOp::Abs if a.is_complex() => a.component(),
        UnOp::IsFinite => ScalarType::Pred,
        _ => a,
    }
}

/// Values nest at most this deep (the parser recurses once a level).
const MAX_VALUE_DEPTH: usize = 256;

/// A cursor over one line; `pos` is a byte offset into the whole source.
struct Cur<'p, 'a> {
    p: &'p Parser<'a>,
    pos: usize,
    end: usize,
    depth: usize,
}

impl<'p, 'a> Cur<'p, 'a> {
    fn new(p: &'p Parser<'a>, line: Line<'a>) -> Cur<'p, 'a> {
        Cur {
            p,
            pos: line.start,
            end: line.start + line.text.len(),
            depth: 0,
        }
    }

    fn rest(&self) -> &'a str {
        &self.p.src[self.pos..self.end]
    }

    fn err_here(&self, message: String) -> KirParseError {
        self.p.err(self.pos, message)
    }

    /// An error at the start of `word`, just read.
    fn err_back(&self, word: &str, message: String) -> KirParseError {
        self.p.err(self.pos - word.len(), message)
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn keyword(&mut self, s: &str) -> PResult<()> {
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

    fn end(&self) -> PResult<()> {
        if self.rest().is_empty() {
            Ok(())
        } else {
            Err(self.err_here(format!("unexpected `{}`", self.rest())))
        }
    }

    /// A word of letters, digits, `_`, `.` and `-` (names of kernels and buffers).
    fn word(&mut self) -> PResult<&'a str> {
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
    fn ident(&mut self) -> &'a str {
        let r = self.rest();
        let n = r
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
            .unwrap_or(r.len());
        self.pos += n;
        &r[..n]
    }

    fn int(&mut self) -> PResult<i64> {
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
    fn index_of(&mut self, what: &str, expected: usize) -> PResult<()> {
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
    fn int_list(&mut self, close: char) -> PResult<Vec<i64>> {
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
    fn name_before_type(&mut self) -> PResult<(String, usize)> {
        let r = self.rest();
        match r.rfind(": ") {
            Some(i) if i > 0 => Ok((r[..i].to_string(), self.pos + i + 2)),
            _ => Err(self.err_here("expected `NAME: TYPE`".into())),
        }
    }

    fn ty(&mut self) -> PResult<ScalarType> {
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
    fn var(&mut self) -> PResult<Var> {
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
    fn var_id(&mut self) -> PResult<VarId> {
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
    fn expr_in(&self, start: usize, stop: usize) -> PResult<Expr> {
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
    fn access(&mut self, ctx: &Ctx) -> PResult<(usize, ScalarType, Expr)> {
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
    fn guard_until(&mut self, stop: usize) -> PResult<Guard> {
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

    fn value(&mut self, ctx: &Ctx) -> PResult<Value> {
        self.depth += 1;
        if self.depth > MAX_VALUE_DEPTH {
            return Err(self.err_here("value nested too deeply".into()));
        }
        let v = self.value_inner(ctx);
        self.depth -= 1;
        v
    }

    fn same_types(&self, at: usize, what: &str, a: &Value, b: &Value) -> PResult<()> {
        if a.ty() != b.ty() {
            return Err(self
                .p
                .err(at, format!("{what} of a {} and a {} value", a.ty(), b.ty())));
        }
        Ok(())
    }

    fn value_inner(&mut self, ctx: &Ctx) -> PResult<Value> {
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

    fn float(&mut self) -> PResult<f64> {
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
