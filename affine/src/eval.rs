//! Exact evaluation of expressions at a point, with overflow and division by zero reported.

use thiserror::Error;

use crate::arith;
use crate::{Expr, ExprKind, Var, VarKind};

/// Why an expression could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EvalError {
    /// An intermediate value does not fit in `i64`.
    #[error("arithmetic overflow while evaluating `{0}`")]
    Overflow(String),
    /// A floordiv, ceildiv or mod by zero.
    #[error("division by zero while evaluating `{0}`")]
    DivisionByZero(String),
    /// The point gives no value for a variable the expression uses.
    #[error("no value given for variable {0}")]
    MissingVariable(Var),
}

/// Values for the variables of a point: dimensions, range variables and runtime variables.
#[derive(Clone, Copy, Debug, Default)]
pub struct Point<'a> {
    /// Values of `d0, d1, ...`.
    pub dims: &'a [i64],
    /// Values of `s0, s1, ...`.
    pub ranges: &'a [i64],
    /// Values of `rt0, rt1, ...`.
    pub runtimes: &'a [i64],
}

impl Point<'_> {
    /// The value of `v`, if the point has one.
    pub fn get(&self, v: Var) -> Option<i64> {
        let values = match v.kind {
            VarKind::Dim => self.dims,
            VarKind::Range => self.ranges,
            VarKind::Runtime => self.runtimes,
        };
        values.get(v.index as usize).copied()
    }
}

impl Expr {
    /// Evaluates the expression at `point` with exact floor semantics.
    pub fn eval(self, point: &Point<'_>) -> Result<i64, EvalError> {
        let binary = |a: Expr, b: Expr| -> Result<(i64, i64), EvalError> {
            Ok((a.eval(point)?, b.eval(point)?))
        };
        let overflow = || EvalError::Overflow(self.to_string());
        let div_zero = || EvalError::DivisionByZero(self.to_string());
        match self.kind() {
            ExprKind::Const(c) => Ok(c),
            ExprKind::Var(v) => point.get(v).ok_or(EvalError::MissingVariable(v)),
            ExprKind::Add(a, b) => {
                let (x, y) = binary(a, b)?;
                x.checked_add(y).ok_or_else(overflow)
            }
            ExprKind::Mul(a, b) => {
                let (x, y) = binary(a, b)?;
                x.checked_mul(y).ok_or_else(overflow)
            }
            ExprKind::FloorDiv(a, b) | ExprKind::CeilDiv(a, b) | ExprKind::Mod(a, b) => {
                let (x, y) = binary(a, b)?;
                if y == 0 {
                    return Err(div_zero());
                }
                let r = match self.kind() {
                    ExprKind::FloorDiv(..) => arith::floor_div(x, y),
                    ExprKind::CeilDiv(..) => arith::ceil_div(x, y),
                    _ => arith::floor_mod(x, y),
                };
                r.ok_or_else(overflow)
            }
            ExprKind::Min(a, b) => {
                let (x, y) = binary(a, b)?;
                Ok(x.min(y))
            }
            ExprKind::Max(a, b) => {
                let (x, y) = binary(a, b)?;
                Ok(x.max(y))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_with_floor_semantics() {
        let d0 = Expr::dim(0);
        let e = (d0 * -1 + 3).floor_div(Expr::constant(2));
        let p = Point {
            dims: &[10],
            ..Point::default()
        };
        assert_eq!(e.eval(&p), Ok(-4), "(-7) floordiv 2 is -4");
        let m = (d0 * -1).modulo(Expr::constant(4));
        assert_eq!(m.eval(&p), Ok(2), "(-10) mod 4 is 2");
    }

    #[test]
    fn reports_errors_instead_of_wrapping() {
        let d0 = Expr::dim(0);
        let p = Point {
            dims: &[i64::MAX],
            ..Point::default()
        };
        assert!(matches!((d0 + 1).eval(&p), Err(EvalError::Overflow(_))));
        let z = d0.floor_div(Expr::dim(1));
        let p = Point {
            dims: &[1, 0],
            ..Point::default()
        };
        assert!(matches!(z.eval(&p), Err(EvalError::DivisionByZero(_))));
        assert_eq!(
            Expr::range(2).eval(&Point::default()),
            Err(EvalError::MissingVariable(Var::range(2)))
        );
    }
}
