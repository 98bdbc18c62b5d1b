//! Parsing the text form of kernels ([`kernel_text`](super::kernel_text)) back into
//! [`Kernel`]s, so that tests can start from kernel IR text ("KIR in, C out").
//!
//! The syntax is exactly what the printer writes: a header line `kernel NAME blocks=N`
//! (with ` (VAR = block)` when the grid binds a variable), buffer lines
//! `bI ACCESS NAME: TY[dims]{minor_to_major}`, local lines `lI local NAME: TY[LEN]`, then
//! one statement a line (`//` comments, `for VAR in [LO, HI] {`, `let`/`var vN: TY = V`,
//! `vN = V`, `bind rtK = V`, `shuffle.down|xor vN: TY = V by OFFSET width W`, `if GUARD {` ... `} else {` ... `}`, `bI[OFFSET] = V`,
//! `lI[OFFSET] = V`, `atomic bI[OFFSET] as vN: TY = V` or, with a body, `atomic bI[OFFSET] as
//! vN: TY {` ... `} = V`). Index expressions use `affine`'s expression syntax. Indentation is not
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

use affine::{Interval, VarKind};

use crate::kir::kernel::{
    Access, BufferParam, Grid, Kernel, Local, LoopKind, MemorySpace, ShuffleKind, Stmt,
};
use crate::kir::types::ScalarType;

mod cursor;
mod names;
mod source;

pub use source::KirParseError;

use cursor::*;
use source::*;

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
        let mut threads = 1;
        if c.eat(" threads=") {
            threads = c.int()?;
            if threads < 2 {
                return Err(c.err_here(
                    "`threads=` is written only for blocks of two threads or more".into(),
                ));
            }
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
            grid: Grid {
                blocks,
                block_var,
                threads,
            },
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
        c.keyword(" ")?;
        let space = match c.word()? {
            "local" => MemorySpace::Private,
            "shared" => MemorySpace::Block,
            w => return Err(c.err_back(w, format!("unknown memory space `{w}`"))),
        };
        c.keyword(" ")?;
        let (name, ty_at) = c.name_before_type()?;
        c.pos = ty_at;
        let ty = c.ty()?;
        c.keyword("[")?;
        let len = c.int()?;
        c.keyword("]")?;
        c.end()?;
        Ok(Local {
            name,
            space,
            ty,
            len,
        })
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
            if t == "}" || t == "} else {" || t.starts_with("} = ") {
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
        let loop_kind = [LoopKind::Vectorized, LoopKind::Threads, LoopKind::Serial]
            .into_iter()
            .find(|k| t.starts_with(&format!("{} ", k.keyword())));
        if let Some(kind) = loop_kind {
            c.keyword(kind.keyword())?;
            c.keyword(" ")?;
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
            return Ok(Stmt::Loop {
                kind,
                var,
                lo,
                hi,
                body,
            });
        }
        if t == "barrier" {
            return Ok(Stmt::Barrier);
        }
        if t.len() > 5 && t.starts_with("if ") && t.ends_with(" {") {
            c.keyword("if ")?;
            let guard = c.guard_until(line.start + t.len() - 2)?;
            let (body, close) = self.nested(line, ctx)?;
            if close.text.starts_with("} = ") {
                return Err(self.err(close.start, "a value after an `if` block".into()));
            }
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
        if c.eat("shuffle.") {
            let kind = if c.eat("down ") {
                ShuffleKind::Down
            } else {
                c.keyword("xor ")?;
                ShuffleKind::Xor
            };
            let id_at = c.pos;
            let var = c.var_id()?;
            c.keyword(": ")?;
            let ty = c.ty()?;
            c.keyword(" = ")?;
            let value_at = c.pos;
            let value = c.value(ctx)?;
            c.keyword(" by ")?;
            let offset = c.int()?;
            c.keyword(" width ")?;
            let width = c.int()?;
            c.end()?;
            if value.ty() != ty {
                return Err(self.err(
                    value_at,
                    format!(
                        "v{} declared {ty} but shuffles a {} value",
                        var.0,
                        value.ty()
                    ),
                ));
            }
            if ctx.vars.get(&var.0).is_some_and(|&old| old != ty) {
                return Err(self.err(id_at, format!("v{} declared twice", var.0)));
            }
            ctx.vars.insert(var.0, ty);
            return Ok(Stmt::Shuffle {
                var,
                value,
                kind,
                offset,
                width,
            });
        }
        if t.starts_with("atomic ") {
            return self.atomic(line, ctx);
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

    /// `atomic bI[OFFSET] as vN: TY = V`, or `atomic bI[OFFSET] as vN: TY {` with the body
    /// and a closing `} = V` (after `atomic `, where `c` stands).
    fn atomic(&mut self, line: Line<'a>, ctx: &mut Ctx) -> PResult<Stmt> {
        let mut c = Cur::new(self, line);
        c.keyword("atomic ")?;
        let at = c.pos;
        if !c.rest().starts_with('b') {
            return Err(self.err(at, "an atomic update of something not a buffer".into()));
        }
        let (buf, buf_ty, offset) = c.access(ctx)?;
        c.keyword(" as ")?;
        let id_at = c.pos;
        let old = c.var_id()?;
        c.keyword(": ")?;
        let ty = c.ty()?;
        if ty != buf_ty {
            return Err(self.err(
                id_at,
                format!("v{} declared {ty} but updates a {buf_ty} buffer", old.0),
            ));
        }
        if ctx.vars.get(&old.0).is_some_and(|&t| t != ty) {
            return Err(self.err(id_at, format!("v{} declared twice", old.0)));
        }
        ctx.vars.insert(old.0, ty);
        let (body, value_at, value) = if c.eat(" {") {
            c.end()?;
            let (body, close) = self.nested(line, ctx)?;
            let Some(rest_at) = close.text.strip_prefix("} = ").map(|_| close.start + 4) else {
                return Err(self.err(close.start, "an atomic block closed without `} = V`".into()));
            };
            let mut cv = Cur::new(self, close);
            cv.keyword("} = ")?;
            let value = cv.value(ctx)?;
            cv.end()?;
            (body, rest_at, value)
        } else {
            c.keyword(" = ")?;
            let value_at = c.pos;
            let value = c.value(ctx)?;
            c.end()?;
            (Vec::new(), value_at, value)
        };
        if value.ty() != ty {
            return Err(self.err(
                value_at,
                format!("atomic update of a {ty} buffer to a {} value", value.ty()),
            ));
        }
        Ok(Stmt::Atomic {
            buf,
            offset,
            old,
            body,
            value,
        })
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
    // `lN SPACE name: type[len]`; a statement is `lN[...] = ...`.
    digits > 0 && rest[digits..].starts_with(' ')
}
