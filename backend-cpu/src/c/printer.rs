//! Kernels as C functions `void NAME(void *const *bufs, int64_t block_begin, int64_t
//! block_end)`, and one translation unit per module.

use std::collections::HashSet;
use std::fmt::Write as _;

use affine::{Expr, Var};
use codegen::kir::{
    binop_name, guard_text, Access, BinOp, CmpOp, Guard, Kernel, LoopKind, ScalarType, ShuffleKind,
    Stmt, UnOp, Value, VarId,
};

use super::scalars::{
    arith, bitcast_c, c_type, const_c, convert_c, expr_c, is_half, libm, narrow, reg_type, widen,
};

/// How a kernel's C computes transcendental functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathStyle {
    /// The prelude's vectorizable polynomial functions (`hloc_vexp_f32`, ...): for loops
    /// the C compiler vectorizes.
    Vector,
    /// A device target's own math library for every function (CUDA's `expf`, ...), and
    /// C++ without GNU statement expressions (bitcasts through `hloc_bitcast<T>`).
    Device,
    /// libm's scalar functions (`expf`, ...) for small kernels, which the C compiler does
    /// not vectorize (they compile at `-O1`): there the vector functions would cost their
    /// compile time (sin, cos, tan, pow, atan2 and cbrt compile as SIMD clones) and run
    /// slower than glibc's (scalar, measured per call: sin 16 vs 2.3 ns, pow 22 vs 3.1 ns,
    /// f64 log 21 vs 3.2 ns). tanh, expm1 and f32 erf keep the polynomial versions, about
    /// twice as fast as glibc's (tanh 3.9 vs 8.3 ns), and so does exp: glibc's `expf` of
    /// an argument below about -87 (a masked softmax's `exp(-1e9 - max)`) takes its
    /// underflow path, whose subnormal arithmetic costs ~100 ns a call (a GPT-2 decode
    /// step's [8,8,128] masked softmax: 1.87 ms a call with libm, 0.12 ms with the
    /// polynomial, which clamps first). libm is at least as exact.
    Libm,
}

/// The math style of kernel `k`: [`MathStyle::Libm`] for kernels touching fewer than
/// [`SMALL_KERNEL_ELEMENTS`] elements, else [`MathStyle::Vector`]. A kernel running its
/// rows as vector lanes is never small: `-O1` left its lanes' `exp` scalar (the wide
/// module's chains of 31 sums ran 4.6 us a kernel at `-O1`, 1.0 us at `-O2`).
pub fn math_style(k: &Kernel) -> MathStyle {
    math_style_called(k, 1)
}

/// [`math_style`] of kernel `k` called `calls` times a run: small is its elements times
/// its calls, so a small kernel in a hot loop (a scan's body) compiles for speed.
pub fn math_style_called(k: &Kernel, calls: u64) -> MathStyle {
    let work = k
        .touched_elements()
        .saturating_mul(i64::try_from(calls).unwrap_or(i64::MAX));
    if work < SMALL_KERNEL_ELEMENTS && !k.runs_rows_as_lanes() {
        MathStyle::Libm
    } else {
        MathStyle::Vector
    }
}

/// A call of transcendental function `name` (`exp`, `pow`, ...) of type `t` (`f32` or
/// `f64`) on the C arguments `args`, in style `m`.
fn transcendental(name: &str, t: ScalarType, m: MathStyle, args: &str) -> String {
    let glibc_slower = matches!(
        (name, t),
        ("tanh" | "expm1" | "exp", _) | ("erf", ScalarType::F32)
    );
    match m {
        MathStyle::Device => format!("{}({args})", libm(name, t)),
        MathStyle::Libm if !glibc_slower => format!("{}({args})", libm(name, t)),
        _ => format!("hloc_v{name}_{}({args})", t.name()),
    }
}

/// A value in C, of type `reg_type(v.ty())`, with the vectorizable transcendental functions.
pub fn value_c(v: &Value) -> String {
    value_in(v, MathStyle::Vector)
}

/// A value in C, of type `reg_type(v.ty())`, its transcendental functions in style `m`.
pub fn value_in(v: &Value, m: MathStyle) -> String {
    value_cx(
        v,
        Cx {
            m,
            carried: &HashSet::new(),
            d: &CpuDialect,
        },
    )
}

/// What printing a value needs beyond the value: the math style, the variables a loop
/// carries (declared mutable: accumulators), whose selects stay branches, and the dialect
/// (which prints index expressions).
#[derive(Clone, Copy)]
struct Cx<'a> {
    m: MathStyle,
    carried: &'a HashSet<VarId>,
    d: &'a dyn CDialect,
}

/// The variables `Stmt::Decl` declares anywhere in `body` (mutable: reduction
/// accumulators, the targets of branch assignments).
fn declared(body: &[Stmt], out: &mut HashSet<VarId>) {
    for s in body {
        match s {
            Stmt::Decl { var, .. } => {
                out.insert(*var);
            }
            Stmt::Loop { body, .. } => declared(body, out),
            Stmt::If {
                body, else_body, ..
            } => {
                declared(body, out);
                declared(else_body, out);
            }
            _ => {}
        }
    }
}

/// Whether `v` reads one of the variables in `set`.
fn reads_any(v: &Value, set: &HashSet<VarId>) -> bool {
    match v {
        Value::Var(id, _) => set.contains(id),
        Value::Const(..) | Value::Index(_) | Value::Load { .. } | Value::LocalLoad { .. } => false,
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
            reads_any(a, set)
        }
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => {
            reads_any(a, set) || reads_any(b, set)
        }
        Value::Select(p, a, b) => reads_any(p, set) || reads_any(a, set) || reads_any(b, set),
    }
}

fn value_cx(v: &Value, cx: Cx<'_>) -> String {
    let m = cx.m;
    let value_c = |v: &Value| value_cx(v, cx);
    match v {
        Value::Const(t, c) => const_c(*t, *c),
        Value::Var(id, _) => format!("v{}", id.0),
        Value::Index(e) => cx.d.index_value(*e),
        Value::Load { buf, offset, .. } => cx.d.element(*buf, *offset),
        Value::LocalLoad { local, offset, .. } => cx.d.local_element(*local, *offset),
        Value::Unary(op, a, t) => unary_c(*op, a, *t, cx),
        Value::Binary(op, a, b, t) => binary_c(*op, a, b, *t, cx),
        Value::Compare(op, total, a, b) => compare_c(*op, *total, a, b, cx),
        Value::Select(p, a, b) => {
            // A select on a loop-carried chain (argmax's accumulators) stays a branch:
            // such a loop is not vectorized anyway, and a predicted branch keeps the mask
            // off the chain (a blend made a row argmax 2.8x slower).
            let blend = m != MathStyle::Device && !reads_any(v, cx.carried);
            select_c(&value_c(p), &value_c(a), &value_c(b), a.ty(), blend)
        }
        Value::Cond(g, a, b) => {
            format!("({} ? {} : {})", guard_in(g, cx.d), value_c(a), value_c(b))
        }
        Value::Convert(a, t) => convert_c(&value_c(a), a.ty(), *t),
        Value::BitcastConvert(a, t) if m == MathStyle::Device => {
            format!("hloc_bitcast<{}>({})", c_type(*t), value_c(a))
        }
        Value::BitcastConvert(a, t) => bitcast_c(&value_c(a), a.ty(), *t),
    }
}

/// `Select(p, a, b)` in C: both arms are computed anyway (kir's `Select` has no side
/// effects and no load out of range in either arm), so the CPU's C blends them with a
/// mask (the prelude's `hloc_sel_*`, exact on the bits) instead of a `?:`, where gcc
/// moves an arm's computation (an inlined `log1p`) under a branch and then does not
/// vectorize the loop. Complex values and, without `blend`, device C (whose compilers
/// predicate a `?:` themselves, and whose prelude has no `hloc_sel_*`) and selects on
/// loop-carried variables keep the conditional expression.
fn select_c(p: &str, a: &str, b: &str, t: ScalarType, blend: bool) -> String {
    if !blend || t.is_complex() {
        return format!("({p} ? {a} : {b})");
    }
    let s = match reg_type(t) {
        "uint8_t" => "u8",
        "int8_t" => "s8",
        "int16_t" => "s16",
        "int32_t" => "s32",
        "int64_t" => "s64",
        "uint16_t" => "u16",
        "uint32_t" => "u32",
        "uint64_t" => "u64",
        "float" => "f32",
        "double" => "f64",
        _ => return format!("({p} ? {a} : {b})"),
    };
    format!("hloc_sel_{s}({p}, {a}, {b})")
}

fn unary_c(op: UnOp, a: &Value, t: ScalarType, cx: Cx<'_>) -> String {
    let m = cx.m;
    let at = a.ty();
    let x = value_cx(a, cx);
    if at.is_complex() {
        let s = at.name();
        return match op {
            UnOp::Real => format!("({x}).re"),
            UnOp::Imag => format!("({x}).im"),
            UnOp::Abs => format!("(({})hloc_abs_{s}({x}))", c_type(t)),
            UnOp::Neg => format!("hloc_neg_{s}({x})"),
            UnOp::Exp => format!("hloc_exp_{s}({x})"),
            UnOp::Log => format!("hloc_log_{s}({x})"),
            UnOp::Sqrt => format!("hloc_sqrt_{s}({x})"),
            UnOp::Sign => format!("hloc_sign_{s}({x})"),
            _ => format!("/* invalid */ {x}"),
        };
    }
    if op == UnOp::IsFinite {
        return format!("((int32_t)isfinite({}))", widen(at, x));
    }
    if at.is_float() {
        if is_half(at) && matches!(op, UnOp::Neg | UnOp::Abs) {
            // Exact on the bits (keeps NaN payloads).
            let (sign, ct) = if at.byte_width() == 1 {
                ("0x80u", "uint8_t")
            } else {
                ("0x8000u", "uint16_t")
            };
            return match op {
                UnOp::Neg => format!("(({ct})({x} ^ {sign}))"),
                _ => format!("(({ct})({x} & ~{sign}))"),
            };
        }
        let ct = arith(at);
        let w = widen(at, x);
        let s = ct.name();
        let r = match op {
            UnOp::Neg => format!("(-{w})"),
            UnOp::Abs => format!("{}({w})", libm("fabs", ct)),
            UnOp::Exp => transcendental("exp", ct, m, &w),
            UnOp::Expm1 => transcendental("expm1", ct, m, &w),
            UnOp::Log => transcendental("log", ct, m, &w),
            UnOp::Log1p => transcendental("log1p", ct, m, &w),
            UnOp::Sqrt => format!("{}({w})", libm("sqrt", ct)),
            UnOp::Rsqrt => format!("(({})1 / {}({w}))", c_type(ct), libm("sqrt", ct)),
            UnOp::Cbrt => transcendental("cbrt", ct, m, &w),
            UnOp::Sin => transcendental("sin", ct, m, &w),
            UnOp::Cos => transcendental("cos", ct, m, &w),
            UnOp::Tan => transcendental("tan", ct, m, &w),
            UnOp::Tanh => transcendental("tanh", ct, m, &w),
            UnOp::Erf => transcendental("erf", ct, m, &w),
            UnOp::Floor => format!("{}({w})", libm("floor", ct)),
            UnOp::Ceil => format!("{}({w})", libm("ceil", ct)),
            UnOp::RoundAfz => format!("{}({w})", libm("round", ct)),
            UnOp::RoundEven => format!("{}({w})", libm("rint", ct)),
            UnOp::Logistic if m != MathStyle::Vector => format!("hloc_logistic_{s}({w})"),
            UnOp::Logistic => format!("hloc_vlogistic_{s}({w})"),
            UnOp::Sign => format!("hloc_sign_{s}({w})"),
            UnOp::Not | UnOp::Popcnt | UnOp::Clz | UnOp::IsFinite | UnOp::Real | UnOp::Imag => {
                format!("/* invalid */ {w}")
            }
        };
        return narrow(t, r);
    }
    if at == ScalarType::Pred {
        return match op {
            UnOp::Not => format!("((int32_t)!{x})"),
            _ => x,
        };
    }
    let s = at.name();
    match op {
        UnOp::Neg => format!("hloc_neg_{s}({x})"),
        UnOp::Abs => format!("hloc_abs_{s}({x})"),
        UnOp::Not => format!("(({})~{x})", c_type(at)),
        UnOp::Sign => format!("hloc_sign_{s}({x})"),
        UnOp::Popcnt => format!("hloc_popcnt_{s}({x})"),
        UnOp::Clz => format!("hloc_clz_{s}({x})"),
        _ => format!("/* invalid */ {x}"),
    }
}

fn binary_c(op: BinOp, a: &Value, b: &Value, t: ScalarType, cx: Cx<'_>) -> String {
    let m = cx.m;
    let (x, y) = (value_cx(a, cx), value_cx(b, cx));
    if op == BinOp::Complex {
        return format!("hloc_mk_{}({x}, {y})", t.name());
    }
    if t.is_complex() {
        let s = t.name();
        return match op {
            BinOp::Add => format!("hloc_add_{s}({x}, {y})"),
            BinOp::Sub => format!("hloc_sub_{s}({x}, {y})"),
            BinOp::Mul => format!("hloc_mul_{s}({x}, {y})"),
            BinOp::Div => format!("hloc_div_{s}({x}, {y})"),
            _ => format!("/* invalid {} */ {x}", binop_name(op)),
        };
    }
    if t.is_float() {
        let ct = arith(t);
        let (x, y) = (widen(t, x), widen(t, y));
        let s = ct.name();
        let r = match op {
            BinOp::Add => format!("({x} + {y})"),
            BinOp::Sub => format!("({x} - {y})"),
            BinOp::Mul => format!("({x} * {y})"),
            BinOp::Div => format!("({x} / {y})"),
            BinOp::Rem => format!("{}({x}, {y})", libm("fmod", ct)),
            BinOp::Max => format!("hloc_max_{s}({x}, {y})"),
            BinOp::Min => format!("hloc_min_{s}({x}, {y})"),
            BinOp::Pow => transcendental("pow", ct, m, &format!("{x}, {y}")),
            BinOp::Atan2 => transcendental("atan2", ct, m, &format!("{x}, {y}")),
            _ => format!("/* invalid {} */ {x}", binop_name(op)),
        };
        return narrow(t, r);
    }
    if t == ScalarType::Pred {
        return match op {
            BinOp::Add | BinOp::Or | BinOp::Max => format!("((int32_t)({x} | {y}))"),
            BinOp::Sub | BinOp::Xor => format!("((int32_t)({x} ^ {y}))"),
            BinOp::Mul | BinOp::And | BinOp::Min => format!("((int32_t)({x} & {y}))"),
            _ => format!("/* invalid {} */ {x}", binop_name(op)),
        };
    }
    let s = t.name();
    let ct = c_type(t);
    match op {
        BinOp::Add => format!("hloc_add_{s}({x}, {y})"),
        BinOp::Sub => format!("hloc_sub_{s}({x}, {y})"),
        BinOp::Mul => format!("hloc_mul_{s}({x}, {y})"),
        BinOp::Div => format!("hloc_div_{s}({x}, {y})"),
        BinOp::Rem => format!("hloc_rem_{s}({x}, {y})"),
        BinOp::Max => format!("hloc_max_{s}({x}, {y})"),
        BinOp::Min => format!("hloc_min_{s}({x}, {y})"),
        BinOp::Pow => format!("hloc_pow_{s}({x}, {y})"),
        BinOp::And => format!("(({ct})({x} & {y}))"),
        BinOp::Or => format!("(({ct})({x} | {y}))"),
        BinOp::Xor => format!("(({ct})({x} ^ {y}))"),
        BinOp::Shl => format!("hloc_shl_{s}({x}, {y})"),
        BinOp::ShrLogical => format!("hloc_shrl_{s}({x}, {y})"),
        BinOp::ShrArith => format!("hloc_shra_{s}({x}, {y})"),
        BinOp::Atan2 => format!("/* invalid atan2 */ {x}"),
        BinOp::Complex => format!("/* invalid complex */ {x}"),
    }
}

fn compare_c(op: CmpOp, total: bool, a: &Value, b: &Value, cx: Cx<'_>) -> String {
    let t = a.ty();
    let value_c = |v: &Value| value_cx(v, cx);
    if t.is_complex() {
        let (x, y) = (value_c(a), value_c(b));
        let eq = format!("hloc_eq_{}({x}, {y})", t.name());
        return match op {
            CmpOp::Ne => format!("((int32_t)!{eq})"),
            _ => eq,
        };
    }
    let (mut x, mut y) = (widen(t, value_c(a)), widen(t, value_c(b)));
    if total {
        let s = arith(t).name();
        x = format!("hloc_total_{s}({x})");
        y = format!("hloc_total_{s}({y})");
    }
    let o = match op {
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    };
    format!("((int32_t)({x} {o} {y}))")
}

/// What a C-family printer prints differently for its target, as TVM's `CodeGenCUDA`
/// overrides `CodeGenC`: the CPU's C ([`CpuDialect`]) and CUDA C (in `backend-cuda`).
pub trait CDialect {
    /// How kernel `k` computes transcendental functions.
    fn math(&self, k: &Kernel) -> MathStyle;
    /// The head of a loop of kind `kind` over `var` in `[lo, hi]`, without its `{`.
    fn loop_head(&self, kind: LoopKind, var: &str, lo: i64, hi: i64) -> String;
    /// The first statement of the body of a loop of kind `kind` over `var`, where its
    /// head counts another variable from which `var` is derived.
    fn loop_prologue(&self, _kind: LoopKind, _var: &str) -> Option<String> {
        None
    }
    /// The statement of a barrier.
    fn barrier(&self) -> &'static str;
    /// The value of a warp shuffle of `value` (C text of type `t`), or `None` where the
    /// dialect has no warps.
    fn shuffle(
        &self,
        _t: ScalarType,
        _kind: ShuffleKind,
        _value: &str,
        _offset: i64,
        _width: i64,
    ) -> Option<String> {
        None
    }
    /// The statement (without `;`) updating the element at `addr` (a C pointer to a `t`)
    /// to `op(element, x)` in one atomic instruction, or `None` where the dialect has
    /// none for `(t, op)` (the update then takes a compare-and-swap loop).
    fn atomic_binary(&self, _t: ScalarType, _op: BinOp, _addr: &str, _x: &str) -> Option<String> {
        None
    }
    /// An atomic load of the `uint32_t` or `uint64_t` (`word`) at `ptr`.
    fn atomic_load(&self, word: &str, ptr: &str) -> String {
        let _ = word;
        format!("__atomic_load_n({ptr}, __ATOMIC_RELAXED)")
    }
    /// An atomic compare-and-swap of the `word` at `ptr` from `expected` to `desired`,
    /// whose value is the word found there (the swap happened when it is `expected`).
    fn atomic_cas(&self, word: &str, ptr: &str, expected: &str, desired: &str) -> String {
        format!(
            "({{ {word} hloc_e_ = {expected}; __atomic_compare_exchange_n({ptr}, &hloc_e_, \
             {desired}, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); hloc_e_; }})"
        )
    }
    /// An index expression (an offset, a guard's operand), in 64-bit arithmetic.
    fn index(&self, e: Expr) -> String {
        expr_c(e)
    }
    /// Element `e` of the kernel's buffer `b{buf}`, as an lvalue.
    fn element(&self, buf: usize, e: Expr) -> String {
        format!("b{buf}[{}]", self.index(e))
    }
    /// Element `e` of the kernel's local array `l{local}`, as an lvalue.
    fn local_element(&self, local: usize, e: Expr) -> String {
        format!("l{local}[{}]", self.index(e))
    }
    /// An index expression as an `int64_t` value (`Value::Index`).
    fn index_value(&self, e: Expr) -> String {
        expr_c(e)
    }
    /// The declaration of runtime index variable `var` bound to the C integer `value`.
    fn bind_index(&self, var: Var, value: &str) -> String {
        format!("const int64_t {var} = (int64_t)({value});")
    }
}

/// A guard as a C condition (`1` when it has none), its expressions printed by `d`.
fn guard_in(g: &Guard, d: &dyn CDialect) -> String {
    if g.conds.is_empty() {
        return "1".into();
    }
    g.conds
        .iter()
        .map(|(e, lo, hi)| {
            let x = d.index(*e);
            format!(
                "({x} >= {} && {x} <= {})",
                d.index(Expr::constant(*lo)),
                d.index(Expr::constant(*hi))
            )
        })
        .collect::<Vec<_>>()
        .join(" && ")
}

/// The CPU's C: a block's threads run one after another, so every loop is a plain loop and
/// a barrier is nothing.
pub struct CpuDialect;

impl CDialect for CpuDialect {
    fn math(&self, k: &Kernel) -> MathStyle {
        math_style(k)
    }

    fn loop_head(&self, _kind: LoopKind, var: &str, lo: i64, hi: i64) -> String {
        format!("for (int64_t {var} = {lo}; {var} <= {hi}; ++{var})")
    }

    fn barrier(&self) -> &'static str {
        "// barrier"
    }
}

/// [`CpuDialect`] with a math style chosen by the caller ([`math_style_called`]).
struct CpuDialectIn(MathStyle);

impl CDialect for CpuDialectIn {
    fn math(&self, _k: &Kernel) -> MathStyle {
        self.0
    }

    fn loop_head(&self, kind: LoopKind, var: &str, lo: i64, hi: i64) -> String {
        CpuDialect.loop_head(kind, var, lo, hi)
    }

    fn barrier(&self) -> &'static str {
        CpuDialect.barrier()
    }
}

/// The statements `body` of kernel `k` at indent `depth`, in `dialect`.
pub fn stmts_c(out: &mut String, k: &Kernel, body: &[Stmt], depth: usize, dialect: &dyn CDialect) {
    let mut carried = HashSet::new();
    declared(&k.body, &mut carried);
    let cx = Cx {
        m: dialect.math(k),
        carried: &carried,
        d: dialect,
    };
    stmts_cx(out, k, body, depth, dialect, cx);
}

fn stmts_cx(
    out: &mut String,
    k: &Kernel,
    body: &[Stmt],
    depth: usize,
    dialect: &dyn CDialect,
    cx: Cx<'_>,
) {
    let pad = "  ".repeat(depth);
    let value_c = |v: &Value| value_cx(v, cx);
    for s in body {
        match s {
            Stmt::Comment(c) => {
                for line in c.lines() {
                    let _ = writeln!(out, "{pad}// {line}");
                }
            }
            Stmt::Barrier => {
                let _ = writeln!(out, "{pad}{}", dialect.barrier());
            }
            Stmt::Loop {
                kind,
                var,
                lo,
                hi,
                body,
            } => {
                let head = dialect.loop_head(*kind, &var.to_string(), *lo, *hi);
                let _ = writeln!(out, "{pad}{head} {{");
                if let Some(first) = dialect.loop_prologue(*kind, &var.to_string()) {
                    let _ = writeln!(out, "{pad}  {first}");
                }
                stmts_cx(out, k, body, depth + 1, dialect, cx);
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::Let { var, value } => {
                let t = k
                    .vars
                    .get(var.0 as usize)
                    .copied()
                    .unwrap_or(ScalarType::F32);
                let _ = writeln!(
                    out,
                    "{pad}const {} v{} = {};",
                    reg_type(t),
                    var.0,
                    value_c(value)
                );
            }
            Stmt::Decl { var, value } => {
                let t = k
                    .vars
                    .get(var.0 as usize)
                    .copied()
                    .unwrap_or(ScalarType::F32);
                let _ = writeln!(out, "{pad}{} v{} = {};", reg_type(t), var.0, value_c(value));
            }
            Stmt::Assign { var, value } => {
                let _ = writeln!(out, "{pad}v{} = {};", var.0, value_c(value));
            }
            Stmt::BindIndex { var, value } => {
                let _ = writeln!(out, "{pad}{}", dialect.bind_index(*var, &value_c(value)));
            }
            Stmt::Shuffle {
                var,
                value,
                kind,
                offset,
                width,
            } => {
                let t = k
                    .vars
                    .get(var.0 as usize)
                    .copied()
                    .unwrap_or(ScalarType::F32);
                // Only the GPU emitters write shuffles: a CPU kernel with one is a
                // compiler bug, which the C compiler then reports.
                match dialect.shuffle(t, *kind, &value_c(value), *offset, *width) {
                    Some(v) => {
                        let _ = writeln!(out, "{pad}const {} v{} = {v};", c_type(t), var.0);
                    }
                    None => {
                        let _ = writeln!(out, "#error \"hloc: a warp shuffle in a CPU kernel\"");
                    }
                }
            }
            Stmt::If {
                guard,
                body,
                else_body,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}if ({}) {{ // {}",
                    guard_in(guard, dialect),
                    guard_text(guard)
                );
                stmts_cx(out, k, body, depth + 1, dialect, cx);
                if !else_body.is_empty() {
                    let _ = writeln!(out, "{pad}}} else {{");
                    stmts_cx(out, k, else_body, depth + 1, dialect, cx);
                }
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::Store { buf, offset, value } => {
                let _ = writeln!(
                    out,
                    "{pad}{} = {};",
                    dialect.element(*buf, *offset),
                    value_c(value)
                );
            }
            Stmt::LocalStore {
                local,
                offset,
                value,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{} = {};",
                    dialect.local_element(*local, *offset),
                    value_c(value)
                );
            }
            Stmt::Atomic {
                buf,
                offset,
                old,
                body,
                value,
            } => {
                let t = k.buffers.get(*buf).map_or(ScalarType::F32, |b| b.ty);
                let addr = format!("&{}", dialect.element(*buf, *offset));
                let native = codegen::kir::atomic_binary(*old, body, value)
                    .and_then(|(op, x)| dialect.atomic_binary(t, op, &addr, &value_c(x)));
                match native {
                    Some(line) => {
                        let _ = writeln!(out, "{pad}{line}; // atomic {}", binop_name_of(value));
                    }
                    None => atomic_cas_c(out, k, s, depth, dialect, cx),
                }
            }
        }
    }
}

/// The name of a binary value's operation (for the comment of a one-instruction atomic).
fn binop_name_of(v: &Value) -> &'static str {
    match v {
        Value::Binary(op, ..) => binop_name(*op),
        _ => "update",
    }
}

/// An atomic update ([`Stmt::Atomic`] `s`) as a compare-and-swap loop on the word holding
/// the element (the element itself for 4- and 8-byte types, the aligned 4-byte word
/// around it for narrower ones): read the word, compute the new element from the old one,
/// and swap the word if no other thread changed it meanwhile, else retry with the word
/// found. An update that leaves the word as it is writes nothing.
fn atomic_cas_c(
    out: &mut String,
    k: &Kernel,
    s: &Stmt,
    depth: usize,
    dialect: &dyn CDialect,
    cx: Cx<'_>,
) {
    let Stmt::Atomic {
        buf,
        offset,
        old,
        body,
        value,
    } = s
    else {
        return;
    };
    let pad = "  ".repeat(depth);
    let t = k.buffers.get(*buf).map_or(ScalarType::F32, |b| b.ty);
    let ct = c_type(t);
    let addr = format!("&{}", dialect.element(*buf, *offset));
    let width = t.byte_width();
    let word = if width == 8 { "uint64_t" } else { "uint32_t" };
    let wt = if width == 8 {
        ScalarType::U64
    } else {
        ScalarType::U32
    };
    let _ = writeln!(out, "{pad}{{ // atomic b{buf}[{offset}]");
    let narrow_word = width < 4;
    if narrow_word {
        // The element's byte lanes within its aligned word (little-endian, as on x86 and
        // NVIDIA GPUs).
        let ut = if width == 1 { "uint8_t" } else { "uint16_t" };
        let mask = if width == 1 { "0xffu" } else { "0xffffu" };
        let _ = writeln!(
            out,
            "{pad}  uint32_t *hloc_w = (uint32_t *)((unsigned long long)({addr}) & ~3ULL);\n\
             {pad}  const uint32_t hloc_sh = (uint32_t)(((unsigned long long)({addr}) & 3ULL) * 8ULL);\n\
             {pad}  const uint32_t hloc_keep = ~((uint32_t){mask} << hloc_sh);"
        );
        let _ = writeln!(
            out,
            "{pad}  uint32_t hloc_seen = {};\n{pad}  for (;;) {{\n\
             {pad}    const {ct} v{} = ({ct})({ut})(hloc_seen >> hloc_sh);",
            dialect.atomic_load(word, "hloc_w"),
            old.0
        );
    } else {
        let from_word = if t == wt {
            "hloc_seen".to_string()
        } else if cx.m == MathStyle::Device {
            format!("hloc_bitcast<{ct}>(hloc_seen)")
        } else {
            bitcast_c("hloc_seen", wt, t)
        };
        let _ = writeln!(
            out,
            "{pad}  {word} *hloc_w = ({word} *)({addr});\n\
             {pad}  {word} hloc_seen = {};\n{pad}  for (;;) {{\n\
             {pad}    const {ct} v{} = {from_word};",
            dialect.atomic_load(word, "hloc_w"),
            old.0
        );
    }
    stmts_cx(out, k, body, depth + 2, dialect, cx);
    let new = value_cx(value, cx);
    let next = if narrow_word {
        let ut = if width == 1 { "uint8_t" } else { "uint16_t" };
        format!("(hloc_seen & hloc_keep) | ((uint32_t)({ut})hloc_new << hloc_sh)")
    } else if t == wt {
        "hloc_new".to_string()
    } else if cx.m == MathStyle::Device {
        format!("hloc_bitcast<{word}>(hloc_new)")
    } else {
        bitcast_c("hloc_new", t, wt)
    };
    let cas = dialect.atomic_cas(word, "hloc_w", "hloc_seen", "hloc_next");
    let _ = writeln!(
        out,
        "{pad}    const {ct} hloc_new = {new};\n\
         {pad}    const {word} hloc_next = {next};\n\
         {pad}    if (hloc_next == hloc_seen) break;\n\
         {pad}    const {word} hloc_found = {cas};\n\
         {pad}    if (hloc_found == hloc_seen) break;\n\
         {pad}    hloc_seen = hloc_found;\n\
         {pad}  }}\n{pad}}}"
    );
}

/// Kernels touching fewer elements than this compile at `-O1` (a function attribute):
/// they run in microseconds either way, and the C compiler's `-O2` pipeline costs it
/// several milliseconds per function, most of a small module's compile time. (The
/// command line's `-ftree-vectorize` still holds for them: a whole unit at `-O1` without
/// it compiled 30% faster but ran small corpus kernels up to 2x slower.) They also call
/// libm's transcendental functions where glibc's are as fast ([`MathStyle::Libm`]): most
/// modules of small kernels then compile without the vectorizable ones.
pub const SMALL_KERNEL_ELEMENTS: i64 = 16384;

/// One kernel as two C functions: `NAME(void *const *bufs, block_begin, block_end)`, the
/// entry point the runtime calls, which passes each buffer to `NAME_body` as a parameter
/// of its own. GCC honours `restrict` on parameters but not on local pointers loaded from
/// `bufs[i]`: with locals, a loop that gathers (`x[d floordiv 8]`) or mixes several
/// buffers is left scalar for fear of aliasing (GroupNorm's epilogue ran 8x slower).
/// The body is `noinline` so that the parameters stay parameters.
///
/// Every pointer is `restrict`: the plan binds no input over a written buffer's bytes, and
/// an in-place kernel loads and stores the bytes its output shares with an operand through
/// the operand's one pointer (`plan::memory::one_pointer`), so GCC needs no overlap check
/// (with two pointers at one address its check failed and the scalar loop ran:
/// moco_infonce_queue's GEMM-lhs kernel 2x slower). Only an in-place kernel the plan could
/// not fold ([`plan::memory::one_pointer::may_alias`]) declares its written pointers
/// without `restrict`, keeping it on its inputs.
pub fn kernel_c(k: &Kernel) -> String {
    kernel_c_called(k, 1)
}

/// [`kernel_c`] of a kernel called `calls` times a run (the `-O1` rule weighs its
/// elements by them: [`math_style_called`]).
pub fn kernel_c_called(k: &Kernel, calls: u64) -> String {
    let mut out = String::new();
    let style = math_style_called(k, calls);
    let quick = if style == MathStyle::Libm {
        "__attribute__((optimize(\"O1\"))) "
    } else if k.runs_rows_as_lanes() {
        // Rows as lanes keep their accumulators in local arrays, where GCC fuses a
        // product into the sum (an FMA, one rounding fewer); the same chain on a scalar
        // accumulator stays unfused. Off here, each row's steps round as they did.
        "__attribute__((optimize(\"fp-contract=off\"))) "
    } else {
        ""
    };
    let aliased = plan::memory::one_pointer::may_alias(k);
    let mut params = Vec::with_capacity(k.buffers.len());
    let mut args = Vec::with_capacity(k.buffers.len());
    for (i, b) in k.buffers.iter().enumerate() {
        let ct = c_type(b.ty);
        let cq = if b.access == Access::In { "const " } else { "" };
        let restrict = if aliased && b.access != Access::In {
            ""
        } else {
            "restrict "
        };
        params.push(format!(
            "\n    {cq}{ct} *{restrict}b{i} /* {} {} */",
            b.access.name(),
            b.name.replace("*/", "* /")
        ));
        args.push(format!("({cq}{ct} *)bufs[{i}]"));
    }
    params.push("\n    int64_t block_begin, int64_t block_end".to_string());
    let _ = writeln!(
        out,
        "static {quick}__attribute__((noinline)) void {}_body({}) {{",
        k.name,
        params.join(",")
    );
    for (i, l) in k.locals.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {} l{i}[{}] __attribute__((aligned(64))); // local {}",
            c_type(l.ty),
            l.len,
            l.name
        );
    }
    let var = k
        .grid
        .block_var
        .map_or_else(|| "hloc_block".to_string(), |v| v.to_string());
    let _ = writeln!(
        out,
        "  for (int64_t {var} = block_begin; {var} < block_end; ++{var}) {{"
    );
    stmts_c(&mut out, k, &k.body, 2, &CpuDialectIn(style));
    if k.grid.block_var.is_none() {
        let _ = writeln!(out, "    (void)hloc_block;");
    }
    let _ = writeln!(out, "  }}");
    let _ = writeln!(out, "}}");
    // A kernel calling a SIMD-cloned function prefers the clones' vector width.
    if super::vecmath::SIMD_CLONED.iter().any(|f| out.contains(f)) {
        out = out.replacen(
            "__attribute__((noinline)) void",
            "HLOC_VM_WIDE __attribute__((noinline)) void",
            1,
        );
    }
    args.push("block_begin".to_string());
    args.push("block_end".to_string());
    let _ = writeln!(
        out,
        "void {}(void *const *bufs, int64_t block_begin, int64_t block_end) {{\n  {}_body({});\n}}",
        k.name,
        k.name,
        args.join(", ")
    );
    out
}
