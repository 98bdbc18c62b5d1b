//! The canonical text form, in XLA's syntax.
//!
//! Expressions: `d0 * 8 + d1 - 3`, `(d0 * 8 + d1) floordiv 16`, `-d1 + 16`, `min(d0, 4)`.
//! A sum prints its left spine flat; a negative coefficient or constant after the first
//! summand prints as subtraction; any operand of `*`, `floordiv`, `ceildiv`, `mod` or unary
//! minus that is not a variable or a non-negative constant is parenthesized. Maps:
//! `(d0, d1)[s0]{rt0} -> (d0 floordiv 8, d1 + s0), domain: d0 in [0, 31], ..., d1 + s0 in [0, 9]`,
//! or `KNOWN EMPTY`, or `UNDEFINED`. The parser reads this form back to the same value.

use std::fmt::{self, Write};

use crate::{Expr, ExprKind, IndexingMap, MapForm, VarKind};

fn is_atomic(e: Expr) -> bool {
    match e.kind() {
        ExprKind::Var(_) | ExprKind::Min(..) | ExprKind::Max(..) => true,
        ExprKind::Const(c) => c >= 0,
        _ => false,
    }
}

fn operand(f: &mut fmt::Formatter<'_>, e: Expr) -> fmt::Result {
    if is_atomic(e) {
        write!(f, "{e}")
    } else {
        write!(f, "({e})")
    }
}

/// Splits a summand into (is_negative, positive form printer) when it can print as `- x`.
fn negated(e: Expr) -> Option<Negated> {
    match e.kind() {
        ExprKind::Const(c) if c < 0 && c != i64::MIN => Some(Negated::Const(-c)),
        ExprKind::Mul(x, k) => match k.as_const() {
            Some(-1) => Some(Negated::Term(x, 1)),
            Some(c) if c < 0 && c != i64::MIN => Some(Negated::Term(x, -c)),
            _ => None,
        },
        _ => None,
    }
}

enum Negated {
    Const(i64),
    Term(Expr, i64),
}

fn summands(e: Expr, out: &mut Vec<Expr>) {
    match e.kind() {
        ExprKind::Add(a, b) => {
            summands(a, out);
            out.push(b);
        }
        _ => out.push(e),
    }
}

fn summand(f: &mut fmt::Formatter<'_>, e: Expr, first: bool) -> fmt::Result {
    if !first {
        if let Some(n) = negated(e) {
            f.write_str(" - ")?;
            return match n {
                Negated::Const(c) => write!(f, "{c}"),
                Negated::Term(x, 1) if matches!(x.kind(), ExprKind::Add(..)) => write!(f, "({x})"),
                Negated::Term(x, 1) => write!(f, "{x}"),
                Negated::Term(x, k) => {
                    operand(f, x)?;
                    write!(f, " * {k}")
                }
            };
        }
        f.write_str(" + ")?;
        // A right-nested sum keeps its parentheses so that it parses back to the same tree.
        if matches!(e.kind(), ExprKind::Add(..)) {
            return write!(f, "({e})");
        }
    }
    write!(f, "{e}")
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            ExprKind::Const(c) => write!(f, "{c}"),
            ExprKind::Var(v) => write!(f, "{v}"),
            ExprKind::Add(..) => {
                let mut parts = Vec::new();
                summands(*self, &mut parts);
                for (i, p) in parts.iter().enumerate() {
                    summand(f, *p, i == 0)?;
                }
                Ok(())
            }
            ExprKind::Mul(x, k) if k.as_const() == Some(-1) => {
                f.write_str("-")?;
                operand(f, x)
            }
            ExprKind::Mul(a, b) => {
                operand(f, a)?;
                f.write_str(" * ")?;
                match b.as_const() {
                    // A negative constant factor reads unambiguously: `d0 * -2`.
                    Some(c) => write!(f, "{c}"),
                    None => operand(f, b),
                }
            }
            ExprKind::FloorDiv(a, b) | ExprKind::CeilDiv(a, b) | ExprKind::Mod(a, b) => {
                let op = match self.kind() {
                    ExprKind::FloorDiv(..) => " floordiv ",
                    ExprKind::CeilDiv(..) => " ceildiv ",
                    _ => " mod ",
                };
                operand(f, a)?;
                f.write_str(op)?;
                operand(f, b)
            }
            ExprKind::Min(a, b) => write!(f, "min({a}, {b})"),
            ExprKind::Max(a, b) => write!(f, "max({a}, {b})"),
        }
    }
}

fn var_list(out: &mut String, kind: VarKind, count: usize, open: char, close: char) {
    out.push(open);
    for i in 0..count {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}{}", kind.prefix(), i);
    }
    out.push(close);
}

impl fmt::Display for IndexingMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.form {
            MapForm::KnownEmpty => return f.write_str("KNOWN EMPTY"),
            MapForm::Undefined => return f.write_str("UNDEFINED"),
            MapForm::Normal => {}
        }
        let mut out = String::new();
        var_list(&mut out, VarKind::Dim, self.dims.len(), '(', ')');
        if !self.ranges.is_empty() {
            var_list(&mut out, VarKind::Range, self.ranges.len(), '[', ']');
        }
        if !self.runtimes.is_empty() {
            var_list(&mut out, VarKind::Runtime, self.runtimes.len(), '{', '}');
        }
        out.push_str(" -> (");
        for (i, r) in self.results.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{r}");
        }
        out.push(')');
        let mut first = true;
        let mut item = |out: &mut String, text: std::fmt::Arguments<'_>| {
            out.push_str(if first { ", domain: " } else { ", " });
            first = false;
            let _ = out.write_fmt(text);
        };
        for kind in [VarKind::Dim, VarKind::Range, VarKind::Runtime] {
            for (i, b) in self.vars_of(kind).iter().enumerate() {
                item(&mut out, format_args!("{}{} in {}", kind.prefix(), i, b));
            }
        }
        for c in &self.constraints {
            item(&mut out, format_args!("{} in {}", c.expr, c.interval));
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Expr, IndexingMap, Interval};

    #[test]
    fn prints_expressions_in_xla_syntax() {
        let (d0, d1, d2) = (Expr::dim(0), Expr::dim(1), Expr::dim(2));
        let c = Expr::constant;
        assert_eq!((d0 * 8 + d1).to_string(), "d0 * 8 + d1");
        assert_eq!((d1 * -1 + 16).to_string(), "-d1 + 16");
        assert_eq!((d1 - 50).to_string(), "d1 - 50");
        assert_eq!((d0 - d1 * 2).to_string(), "d0 - d1 * 2");
        assert_eq!(
            (d0 * 8 + d1).floor_div(c(16)).to_string(),
            "(d0 * 8 + d1) floordiv 16"
        );
        assert_eq!(
            (d0 * 2 + (d1 * 4 + d2).floor_div(c(8))).to_string(),
            "d0 * 2 + (d1 * 4 + d2) floordiv 8"
        );
        assert_eq!(d0.modulo(c(8)).to_string(), "d0 mod 8");
        assert_eq!(d0.ceil_div(c(8)).to_string(), "d0 ceildiv 8");
        assert_eq!(
            (-(d0.floor_div(c(11))) + 9).to_string(),
            "-(d0 floordiv 11) + 9"
        );
        assert_eq!(d0.min(c(4)).max(d1).to_string(), "max(min(d0, 4), d1)");
        assert_eq!((d0 * -2).to_string(), "d0 * -2");
        assert_eq!((d0 - (d1 + d2)).to_string(), "d0 - (d1 + d2)");
        assert_eq!(
            d0.floor_div(c(2)).mul(c(3)).to_string(),
            "(d0 floordiv 2) * 3"
        );
    }

    #[test]
    fn prints_maps_in_xla_syntax() {
        let (d0, d1, s0) = (Expr::dim(0), Expr::dim(1), Expr::range(0));
        let m = IndexingMap::new(
            vec![Interval::new(0, 31), Interval::new(0, 7)],
            vec![Interval::new(0, 3)],
            vec![Interval::new(0, 9)],
            vec![d0.floor_div(Expr::constant(8)), d1 + s0],
            vec![(d1 + s0, Interval::new(0, 9))],
        )
        .unwrap();
        assert_eq!(
            m.to_string(),
            "(d0, d1)[s0]{rt0} -> (d0 floordiv 8, d1 + s0), domain: d0 in [0, 31], \
             d1 in [0, 7], s0 in [0, 3], rt0 in [0, 9], d1 + s0 in [0, 9]"
        );
        assert_eq!(IndexingMap::known_empty().to_string(), "KNOWN EMPTY");
        assert_eq!(IndexingMap::undefined().to_string(), "UNDEFINED");
        let scalar = IndexingMap::new(vec![], vec![], vec![], vec![], vec![]).unwrap();
        assert_eq!(scalar.to_string(), "() -> ()");
    }
}
