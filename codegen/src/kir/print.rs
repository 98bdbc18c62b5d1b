//! The stable text form of kernels (for tests and dumps).

use std::fmt::Write as _;

use super::kernel::{Kernel, Stmt};
use super::value::{BinOp, CmpOp, Const, Guard, UnOp, Value};

/// Name of a unary op in text and C helper names.
pub fn unop_name(op: UnOp) -> &'static str {
    match op {
        UnOp::Neg => "neg",
        UnOp::Abs => "abs",
        UnOp::Not => "not",
        UnOp::Exp => "exp",
        UnOp::Expm1 => "expm1",
        UnOp::Log => "log",
        UnOp::Log1p => "log1p",
        UnOp::Sqrt => "sqrt",
        UnOp::Rsqrt => "rsqrt",
        UnOp::Cbrt => "cbrt",
        UnOp::Sin => "sin",
        UnOp::Cos => "cos",
        UnOp::Tan => "tan",
        UnOp::Tanh => "tanh",
        UnOp::Logistic => "logistic",
        UnOp::Erf => "erf",
        UnOp::Floor => "floor",
        UnOp::Ceil => "ceil",
        UnOp::RoundAfz => "round_afz",
        UnOp::RoundEven => "round_even",
        UnOp::Sign => "sign",
        UnOp::Popcnt => "popcnt",
        UnOp::Clz => "clz",
        UnOp::IsFinite => "is_finite",
        UnOp::Real => "real",
        UnOp::Imag => "imag",
    }
}

/// Name of a binary op.
pub fn binop_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::Rem => "rem",
        BinOp::Max => "max",
        BinOp::Min => "min",
        BinOp::Pow => "pow",
        BinOp::Atan2 => "atan2",
        BinOp::And => "and",
        BinOp::Or => "or",
        BinOp::Xor => "xor",
        BinOp::Shl => "shl",
        BinOp::ShrLogical => "shr_logical",
        BinOp::ShrArith => "shr_arith",
        BinOp::Complex => "complex",
    }
}

/// Name of a comparison.
pub fn cmp_name(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "eq",
        CmpOp::Ne => "ne",
        CmpOp::Lt => "lt",
        CmpOp::Le => "le",
        CmpOp::Gt => "gt",
        CmpOp::Ge => "ge",
    }
}

/// A guard as text: `lo <= e <= hi && ...`.
pub fn guard_text(g: &Guard) -> String {
    if g.conds.is_empty() {
        return "true".into();
    }
    g.conds
        .iter()
        .map(|(e, lo, hi)| format!("{e} in [{lo}, {hi}]"))
        .collect::<Vec<_>>()
        .join(" && ")
}

/// A value as text.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Const(t, c) => match c {
            Const::Bool(b) => format!("{b}:{t}"),
            Const::Int(i) => format!("{i}:{t}"),
            Const::Float(f) => format!("{f:?}:{t}"),
            Const::Complex(re, im) => format!("({re:?}, {im:?}):{t}"),
        },
        Value::Var(id, _) => format!("v{}", id.0),
        Value::Index(e) => format!("index({e})"),
        Value::Load { buf, offset, .. } => format!("b{buf}[{offset}]"),
        Value::LocalLoad { local, offset, .. } => format!("l{local}[{offset}]"),
        Value::Unary(op, a, _) => format!("{}({})", unop_name(*op), value_text(a)),
        Value::Binary(op, a, b, _) => {
            format!("{}({}, {})", binop_name(*op), value_text(a), value_text(b))
        }
        Value::Compare(op, total, a, b) => format!(
            "{}{}({}, {})",
            cmp_name(*op),
            if *total { ".total" } else { "" },
            value_text(a),
            value_text(b)
        ),
        Value::Select(p, a, b) => format!(
            "select({}, {}, {})",
            value_text(p),
            value_text(a),
            value_text(b)
        ),
        Value::Cond(g, a, b) => format!(
            "if {} then {} else {}",
            guard_text(g),
            value_text(a),
            value_text(b)
        ),
        Value::Convert(a, t) => format!("convert.{t}({})", value_text(a)),
        Value::BitcastConvert(a, t) => format!("bitcast.{t}({})", value_text(a)),
    }
}

fn stmts(out: &mut String, k: &Kernel, body: &[Stmt], depth: usize) {
    let pad = "  ".repeat(depth);
    for s in body {
        match s {
            Stmt::Comment(c) => {
                for line in c.lines() {
                    let _ = writeln!(out, "{pad}// {line}");
                }
            }
            Stmt::Loop {
                kind,
                var,
                lo,
                hi,
                body,
            } => {
                let _ = writeln!(out, "{pad}{} {var} in [{lo}, {hi}] {{", kind.keyword());
                stmts(out, k, body, depth + 1);
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::Let { var, value } | Stmt::Decl { var, value } => {
                let kw = if matches!(s, Stmt::Let { .. }) {
                    "let"
                } else {
                    "var"
                };
                let ty = k
                    .vars
                    .get(var.0 as usize)
                    .map_or("?".to_string(), |t| t.to_string());
                let _ = writeln!(out, "{pad}{kw} v{}: {ty} = {}", var.0, value_text(value));
            }
            Stmt::Assign { var, value } => {
                let _ = writeln!(out, "{pad}v{} = {}", var.0, value_text(value));
            }
            Stmt::BindIndex { var, value } => {
                let _ = writeln!(out, "{pad}bind {var} = {}", value_text(value));
            }
            Stmt::Shuffle {
                var,
                value,
                kind,
                offset,
                width,
            } => {
                let ty = k
                    .vars
                    .get(var.0 as usize)
                    .map_or("?".to_string(), |t| t.to_string());
                let _ = writeln!(
                    out,
                    "{pad}shuffle.{} v{}: {ty} = {} by {offset} width {width}",
                    kind.name(),
                    var.0,
                    value_text(value)
                );
            }
            Stmt::If {
                guard,
                body,
                else_body,
            } => {
                let _ = writeln!(out, "{pad}if {} {{", guard_text(guard));
                stmts(out, k, body, depth + 1);
                if !else_body.is_empty() {
                    let _ = writeln!(out, "{pad}}} else {{");
                    stmts(out, k, else_body, depth + 1);
                }
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::Barrier => {
                let _ = writeln!(out, "{pad}barrier");
            }
            Stmt::Store { buf, offset, value } => {
                let _ = writeln!(out, "{pad}b{buf}[{offset}] = {}", value_text(value));
            }
            Stmt::Atomic {
                buf,
                offset,
                old,
                body,
                value,
            } => {
                let ty = k
                    .vars
                    .get(old.0 as usize)
                    .map_or("?".to_string(), |t| t.to_string());
                let head = format!("{pad}atomic b{buf}[{offset}] as v{}: {ty}", old.0);
                if body.is_empty() {
                    let _ = writeln!(out, "{head} = {}", value_text(value));
                } else {
                    let _ = writeln!(out, "{head} {{");
                    stmts(out, k, body, depth + 1);
                    let _ = writeln!(out, "{pad}}} = {}", value_text(value));
                }
            }
            Stmt::LocalStore {
                local,
                offset,
                value,
            } => {
                let _ = writeln!(out, "{pad}l{local}[{offset}] = {}", value_text(value));
            }
        }
    }
}

/// The kernel as text: a header with the grid and buffers, then the body.
pub fn kernel_text(k: &Kernel) -> String {
    let mut out = String::new();
    let block = k
        .grid
        .block_var
        .map(|v| format!(" ({v} = block)"))
        .unwrap_or_default();
    let threads = if k.grid.threads > 1 {
        format!(" threads={}", k.grid.threads)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "kernel {} blocks={}{threads}{block}",
        k.name, k.grid.blocks
    );
    for (i, b) in k.buffers.iter().enumerate() {
        let dims: Vec<String> = b.dims.iter().map(i64::to_string).collect();
        let m2m: Vec<String> = b.minor_to_major.iter().map(i64::to_string).collect();
        let _ = writeln!(
            out,
            "  b{i} {} {}: {}[{}]{{{}}}",
            b.access.name(),
            b.name,
            b.ty,
            dims.join(","),
            m2m.join(",")
        );
    }
    for (i, l) in k.locals.iter().enumerate() {
        let _ = writeln!(
            out,
            "  l{i} {} {}: {}[{}]",
            l.space.keyword(),
            l.name,
            l.ty,
            l.len
        );
    }
    stmts(&mut out, k, &k.body, 1);
    out
}
