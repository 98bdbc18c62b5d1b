//! 32-bit index arithmetic where a kernel's ranges prove it exact. A GPU computes 32-bit
//! integers in one instruction where 64-bit ones take two or more (a 64-bit multiply is
//! several, a division by a constant a long sequence), and each 64-bit index holds two
//! registers. So every index variable whose values fit an `int32_t` is declared one (a
//! loop variable over its bounds, the block index over the grid, a runtime index over the
//! range of the value bound to it), and an index expression is computed in 32 bits when
//! all its variables are, and interval arithmetic bounds every sub-expression within
//! `±(2^31 - 1)` (no overflow, and a negation stays in range); otherwise it is computed
//! in 64 bits as before, its 32-bit variables widened first.
//!
//! In 32 bits, a floor division or modulo of a non-negative value by a positive constant
//! is an unsigned `/` or `%` (equal there, and a shift or a multiply-high where C's signed
//! ones need a sign fix-up); other cases call the prelude's `hloc_*32` helpers, which have
//! the 64-bit ones' floor semantics.
//!
//! How the 32-bit form is printed decides whether it pays (it first raised registers in
//! 386 of 449 corpus kernels). Measured with `tools/nvrtc_corpus.py` (benches/README.md,
//! issue 33, session 52), three rules make it lower them overall:
//! - a 32-bit offset into a global buffer or a shared array is widened once, as a byte
//!   offset added to the pointer (`hloc_at`): `b[i]` with a 32-bit `i` becomes a wide
//!   multiply-add whose 64-bit addend must sit in two registers per buffer, where a byte
//!   offset is added to the pointer held in the uniform registers;
//! - a thread loop still counts a 64-bit variable, narrowed at the top of the body (the
//!   printer's loop head): over a 32-bit counter NVRTC unrolls the loop by 4 and keeps
//!   every address as a pointer that the loop carries, for a loop that runs once or twice
//!   per thread;
//! - a thread's own arrays keep their index (they should stay in registers).

use std::collections::{HashMap, HashSet};

use affine::{Expr, ExprKind, Interval, Var};
use codegen::kir::{Const, Kernel, LoopKind, MemorySpace, ScalarType, Stmt, Value, VarId};

/// Values an `int32_t` index may take: symmetric, so that a negation stays in range.
const I32: Interval = Interval::new(-(i32::MAX as i64), i32::MAX as i64);

/// The widths of one kernel's index variables.
#[derive(Debug, Default)]
pub struct IndexWidths {
    /// Every index variable's bounds (the union over its bindings).
    bounds: HashMap<Var, Interval>,
    /// The variables declared `int32_t`.
    narrow: HashSet<Var>,
    /// The element width in bytes of each of the kernel's buffers.
    widths: Vec<u32>,
    /// The element width in bytes of each of the kernel's shared arrays (`None`: a
    /// thread's own array, left to its indexing so that it may live in registers).
    shared_widths: Vec<Option<u32>>,
}

impl IndexWidths {
    /// The widths of `k`'s index variables, with `threads` the block's threads (the step
    /// of its thread loops).
    pub fn of(k: &Kernel) -> IndexWidths {
        let mut w = Scan {
            bounds: HashMap::new(),
            steps: HashMap::new(),
            lets: HashMap::new(),
            threads: k.grid.threads.max(1),
        };
        if let Some(b) = k.grid.block_var {
            w.bind(b, Interval::new(0, k.grid.blocks.max(1) - 1), 1);
        }
        w.stmts(&k.body);
        let fits = |v: &Var, b: &Interval| {
            let step = w.steps.get(v).copied().unwrap_or(0);
            I32.contains_interval(*b) && b.hi.checked_add(step).is_some_and(|h| h <= I32.hi)
        };
        // All or nothing: mixing widths in one kernel (a 64-bit runtime index beside
        // 32-bit loops) made NVRTC spill in the merge passes' binary searches.
        let all = w.bounds.iter().all(|(v, b)| fits(v, b));
        let narrow = if all {
            w.bounds.keys().copied().collect()
        } else {
            HashSet::new()
        };
        IndexWidths {
            bounds: w.bounds,
            narrow,
            widths: k.buffers.iter().map(|b| b.ty.byte_width()).collect(),
            shared_widths: k
                .locals
                .iter()
                .map(|l| (l.space == MemorySpace::Block).then(|| l.ty.byte_width()))
                .collect(),
        }
    }

    /// Whether variable `v` is declared `int32_t`.
    pub fn is_narrow(&self, v: Var) -> bool {
        self.narrow.contains(&v)
    }

    /// Whether the variable named `name` (`d0`, `s3`, `rt1`) is declared `int32_t`.
    pub fn is_narrow_named(&self, name: &str) -> bool {
        self.narrow.iter().any(|v| v.to_string() == name)
    }

    /// The range of `e` where it and every sub-expression fit [`I32`] and every variable
    /// is 32-bit, else `None`.
    fn narrow_range(&self, e: Expr) -> Option<Interval> {
        let r = match e.kind() {
            ExprKind::Const(c) => Interval::point(c),
            ExprKind::Var(v) => {
                if !self.is_narrow(v) {
                    return None;
                }
                *self.bounds.get(&v)?
            }
            ExprKind::Add(a, b) => self.narrow_range(a)?.add(self.narrow_range(b)?),
            ExprKind::Mul(a, b) => self.narrow_range(a)?.mul(self.narrow_range(b)?),
            ExprKind::FloorDiv(a, b) => self.narrow_range(a)?.floor_div(self.nonzero(b)?),
            ExprKind::CeilDiv(a, b) => self.narrow_range(a)?.ceil_div(self.nonzero(b)?),
            ExprKind::Mod(a, b) => self.narrow_range(a)?.modulo(self.nonzero(b)?),
            ExprKind::Min(a, b) => self.narrow_range(a)?.min(self.narrow_range(b)?),
            ExprKind::Max(a, b) => self.narrow_range(a)?.max(self.narrow_range(b)?),
        };
        (!r.is_empty() && I32.contains_interval(r)).then_some(r)
    }

    /// The range of divisor `e` where it is 32-bit and excludes 0 and -1 (whose quotient
    /// of the smallest value overflows).
    fn nonzero(&self, e: Expr) -> Option<Interval> {
        let r = self.narrow_range(e)?;
        (r.lo > 0 || r.hi < -1).then_some(r)
    }

    /// Index expression `e` in C: 32-bit where [`Self::narrow_range`] proves it, else
    /// 64-bit.
    pub fn expr(&self, e: Expr) -> String {
        if self.narrow_range(e).is_some() {
            self.narrow_c(e)
        } else {
            self.wide_c(e)
        }
    }

    /// Element `e` of buffer `b{buf}`: through a 32-bit byte offset where `e` is 32-bit,
    /// non-negative and its byte offset fits a `uint32_t`, else by a 64-bit index.
    pub fn element(&self, buf: usize, e: Expr) -> String {
        let width = self.widths.get(buf).copied();
        self.element_of(&format!("b{buf}"), width, e)
    }

    /// Element `e` of local array `l{local}`: through a byte offset as [`Self::element`]
    /// where the array is shared (a 64-bit-free address, not a pointer that the loop
    /// carries), by its index where it is a thread's own.
    pub fn local_element(&self, local: usize, e: Expr) -> String {
        let width = self.shared_widths.get(local).copied().flatten();
        self.element_of(&format!("l{local}"), width, e)
    }

    /// Element `e` of array `name` of `width`-byte elements (`None`: by its index).
    fn element_of(&self, name: &str, width: Option<u32>, e: Expr) -> String {
        match (width, self.narrow_range(e)) {
            (Some(w), Some(r)) if r.lo >= 0 && r.hi.saturating_mul(w.into()) <= u32::MAX.into() => {
                format!("hloc_at({name}, {})", self.narrow_c(e))
            }
            _ => format!("{name}[{}]", self.expr(e)),
        }
    }

    /// Index expression `e` as an `int64_t` value.
    pub fn value(&self, e: Expr) -> String {
        if self.narrow_range(e).is_some() {
            format!("((int64_t){})", self.narrow_c(e))
        } else {
            self.wide_c(e)
        }
    }

    /// `e` in 32-bit arithmetic (every sub-expression fits).
    fn narrow_c(&self, e: Expr) -> String {
        let f = |a: Expr, b: Expr, name: &str| {
            format!("hloc_{name}32({}, {})", self.narrow_c(a), self.narrow_c(b))
        };
        // A non-negative dividend and a positive constant divisor: unsigned division.
        let plain = |a: Expr, b: Expr| match b.kind() {
            ExprKind::Const(c) if c > 0 && self.narrow_range(a).is_some_and(|r| r.lo >= 0) => {
                Some(c)
            }
            _ => None,
        };
        match e.kind() {
            ExprKind::Const(c) if c < 0 => format!("({c})"),
            ExprKind::Const(c) => c.to_string(),
            ExprKind::Var(v) => v.to_string(),
            ExprKind::Add(a, b) => format!("({} + {})", self.narrow_c(a), self.narrow_c(b)),
            ExprKind::Mul(a, b) => format!("({} * {})", self.narrow_c(a), self.narrow_c(b)),
            ExprKind::FloorDiv(a, b) => match plain(a, b) {
                Some(c) => format!("((int32_t)((uint32_t){} / {c}u))", self.narrow_c(a)),
                None => f(a, b, "floordiv"),
            },
            ExprKind::Mod(a, b) => match plain(a, b) {
                Some(c) => format!("((int32_t)((uint32_t){} % {c}u))", self.narrow_c(a)),
                None => f(a, b, "mod"),
            },
            ExprKind::CeilDiv(a, b) => f(a, b, "ceildiv"),
            ExprKind::Min(a, b) => f(a, b, "imin"),
            ExprKind::Max(a, b) => f(a, b, "imax"),
        }
    }

    /// `e` in 64-bit arithmetic, its 32-bit variables widened.
    fn wide_c(&self, e: Expr) -> String {
        let f = |a: Expr, b: Expr, name: &str| {
            format!("hloc_{name}({}, {})", self.wide_c(a), self.wide_c(b))
        };
        match e.kind() {
            ExprKind::Var(v) if self.is_narrow(v) => format!("((int64_t){v})"),
            ExprKind::Const(_) | ExprKind::Var(_) => backend_cpu::c::expr_c(e),
            ExprKind::Add(a, b) => format!("({} + {})", self.wide_c(a), self.wide_c(b)),
            ExprKind::Mul(a, b) => format!("({} * {})", self.wide_c(a), self.wide_c(b)),
            ExprKind::FloorDiv(a, b) => f(a, b, "floordiv"),
            ExprKind::CeilDiv(a, b) => f(a, b, "ceildiv"),
            ExprKind::Mod(a, b) => f(a, b, "mod"),
            ExprKind::Min(a, b) => f(a, b, "imin"),
            ExprKind::Max(a, b) => f(a, b, "imax"),
        }
    }
}

/// The walk collecting bounds: each variable's bounds, the step past its last value a
/// loop takes before it exits, and the immutable scalars' values.
struct Scan<'k> {
    bounds: HashMap<Var, Interval>,
    steps: HashMap<Var, i64>,
    lets: HashMap<VarId, &'k Value>,
    threads: i64,
}

impl<'k> Scan<'k> {
    fn bind(&mut self, v: Var, r: Interval, step: i64) {
        let b = self.bounds.entry(v).or_insert(r);
        *b = b.union(r);
        let s = self.steps.entry(v).or_insert(step);
        *s = (*s).max(step);
    }

    fn stmts(&mut self, body: &'k [Stmt]) {
        for s in body {
            match s {
                Stmt::Loop {
                    kind,
                    var,
                    lo,
                    hi,
                    body,
                } => {
                    let step = if *kind == LoopKind::Threads {
                        self.threads
                    } else {
                        1
                    };
                    self.bind(*var, Interval::new(*lo, (*hi).max(*lo)), step);
                    self.stmts(body);
                }
                Stmt::Let { var, value } => {
                    self.lets.insert(*var, value);
                }
                Stmt::BindIndex { var, value } => {
                    let r = self.value_range(value, 0);
                    self.bind(*var, r, 0);
                }
                Stmt::If {
                    body, else_body, ..
                } => {
                    self.stmts(body);
                    self.stmts(else_body);
                }
                Stmt::Atomic { body, .. } => self.stmts(body),
                _ => {}
            }
        }
    }

    /// A sound range of integer value `v` (its type's where nothing tighter is known).
    fn value_range(&self, v: &Value, depth: usize) -> Interval {
        let t = v.ty();
        let whole = type_range(t);
        if depth > 32 {
            return whole;
        }
        let r = match v {
            Value::Const(_, Const::Int(c)) => {
                i64::try_from(*c).map_or(Interval::FULL, Interval::point)
            }
            Value::Const(_, Const::Bool(b)) => Interval::point(i64::from(*b)),
            Value::Index(e) => self.expr_range(*e),
            Value::Var(id, _) => match self.lets.get(id) {
                Some(x) => self.value_range(x, depth + 1),
                None => whole,
            },
            Value::Convert(a, _) if !a.ty().is_float() && !a.ty().is_complex() => {
                self.value_range(a, depth + 1)
            }
            Value::Binary(op, a, b, _) if !t.is_float() && !t.is_complex() => {
                let (x, y) = (
                    self.value_range(a, depth + 1),
                    self.value_range(b, depth + 1),
                );
                match op {
                    codegen::kir::BinOp::Min => x.min(y),
                    codegen::kir::BinOp::Max => x.max(y),
                    codegen::kir::BinOp::Add => x.add(y),
                    codegen::kir::BinOp::Sub => x.sub(y),
                    codegen::kir::BinOp::Mul => x.mul(y),
                    _ => whole,
                }
            }
            Value::Select(_, a, b) | Value::Cond(_, a, b) => self
                .value_range(a, depth + 1)
                .union(self.value_range(b, depth + 1)),
            _ => whole,
        };
        // Arithmetic past its type wraps: then only the type's range holds.
        if whole.contains_interval(r) {
            r
        } else {
            whole
        }
    }

    /// A sound range of `e` over the bounds so far (every `i64` where a variable has none).
    fn expr_range(&self, e: Expr) -> Interval {
        match e.kind() {
            ExprKind::Const(c) => Interval::point(c),
            ExprKind::Var(v) => self.bounds.get(&v).copied().unwrap_or(Interval::FULL),
            ExprKind::Add(a, b) => self.expr_range(a).add(self.expr_range(b)),
            ExprKind::Mul(a, b) => self.expr_range(a).mul(self.expr_range(b)),
            ExprKind::FloorDiv(a, b) => self.expr_range(a).floor_div(self.expr_range(b)),
            ExprKind::CeilDiv(a, b) => self.expr_range(a).ceil_div(self.expr_range(b)),
            ExprKind::Mod(a, b) => self.expr_range(a).modulo(self.expr_range(b)),
            ExprKind::Min(a, b) => self.expr_range(a).min(self.expr_range(b)),
            ExprKind::Max(a, b) => self.expr_range(a).max(self.expr_range(b)),
        }
    }
}

/// Every value of integer type `t` (every `i64` for 64-bit and non-integer types).
fn type_range(t: ScalarType) -> Interval {
    use ScalarType as T;
    match t {
        T::Pred => Interval::new(0, 1),
        T::S8 => Interval::new(i8::MIN.into(), i8::MAX.into()),
        T::U8 => Interval::new(0, u8::MAX.into()),
        T::S16 => Interval::new(i16::MIN.into(), i16::MAX.into()),
        T::U16 => Interval::new(0, u16::MAX.into()),
        T::S32 => Interval::new(i32::MIN.into(), i32::MAX.into()),
        T::U32 => Interval::new(0, u32::MAX.into()),
        _ => Interval::FULL,
    }
}
