//! Substitution of index variables throughout a statement tree (loop tiling rewrites a
//! kernel's dimension variables as `tile * size + offset`).

use affine::{Expr, Var};

use super::kernel::Stmt;
use super::value::{Guard, Value};

/// Replaces every index variable `v` for which `f(v)` is `Some(e)` by `e`, in every index
/// expression of `stmts` (offsets, guards, index values); loop bounds are constants and
/// stay as they are.
pub fn substitute_stmts(stmts: &mut [Stmt], f: &mut dyn FnMut(Var) -> Option<Expr>) {
    rewrite_exprs(stmts, &mut |e| e.substitute(f));
}

/// Replaces every index expression `e` of `stmts` (offsets, guards, index values) by
/// `f(e)`; loop bounds are constants and stay as they are.
pub fn rewrite_exprs(stmts: &mut [Stmt], f: &mut dyn FnMut(Expr) -> Expr) {
    for s in stmts {
        match s {
            Stmt::Comment(_) | Stmt::Barrier => {}
            Stmt::Loop { body, .. } => rewrite_exprs(body, f),
            Stmt::Let { value, .. }
            | Stmt::Decl { value, .. }
            | Stmt::Assign { value, .. }
            | Stmt::Shuffle { value, .. }
            | Stmt::BindIndex { value, .. } => rewrite_value(value, f),
            Stmt::If {
                guard,
                body,
                else_body,
            } => {
                rewrite_guard(guard, f);
                rewrite_exprs(body, f);
                rewrite_exprs(else_body, f);
            }
            Stmt::Store { offset, value, .. } | Stmt::LocalStore { offset, value, .. } => {
                *offset = f(*offset);
                rewrite_value(value, f);
            }
            Stmt::Atomic {
                offset,
                body,
                value,
                ..
            } => {
                *offset = f(*offset);
                rewrite_exprs(body, f);
                rewrite_value(value, f);
            }
        }
    }
}

fn rewrite_guard(g: &mut Guard, f: &mut dyn FnMut(Expr) -> Expr) {
    for (e, _, _) in &mut g.conds {
        *e = f(*e);
    }
}

fn rewrite_value(v: &mut Value, f: &mut dyn FnMut(Expr) -> Expr) {
    match v {
        Value::Const(..) | Value::Var(..) => {}
        Value::Index(e) => *e = f(*e),
        Value::Load { offset, .. } | Value::LocalLoad { offset, .. } => *offset = f(*offset),
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
            rewrite_value(a, f)
        }
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) => {
            rewrite_value(a, f);
            rewrite_value(b, f);
        }
        Value::Select(p, a, b) => {
            rewrite_value(p, f);
            rewrite_value(a, f);
            rewrite_value(b, f);
        }
        Value::Cond(g, a, b) => {
            rewrite_guard(g, f);
            rewrite_value(a, f);
            rewrite_value(b, f);
        }
    }
}

/// Calls `visit` on the offset of every load of a buffer in `stmts` (with the buffer).
pub fn for_each_load(stmts: &[Stmt], visit: &mut dyn FnMut(usize, Expr)) {
    for s in stmts {
        match s {
            Stmt::Comment(_) | Stmt::Barrier => {}
            Stmt::Loop { body, .. } => for_each_load(body, visit),
            Stmt::Let { value, .. }
            | Stmt::Decl { value, .. }
            | Stmt::Assign { value, .. }
            | Stmt::BindIndex { value, .. }
            | Stmt::Shuffle { value, .. }
            | Stmt::Store { value, .. }
            | Stmt::LocalStore { value, .. } => value_loads(value, visit),
            Stmt::If {
                body, else_body, ..
            } => {
                for_each_load(body, visit);
                for_each_load(else_body, visit);
            }
            // The atomic's own read of its element is not a load of the value form.
            Stmt::Atomic { body, value, .. } => {
                for_each_load(body, visit);
                value_loads(value, visit);
            }
        }
    }
}

fn value_loads(v: &Value, visit: &mut dyn FnMut(usize, Expr)) {
    match v {
        Value::Load { buf, offset, .. } => visit(*buf, *offset),
        Value::Const(..) | Value::Var(..) | Value::Index(_) | Value::LocalLoad { .. } => {}
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
            value_loads(a, visit)
        }
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => {
            value_loads(a, visit);
            value_loads(b, visit);
        }
        Value::Select(p, a, b) => {
            value_loads(p, visit);
            value_loads(a, visit);
            value_loads(b, visit);
        }
    }
}
