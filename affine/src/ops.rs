//! Operator overloading so that expressions read as they print: `d0 * 8 + d1`.
//!
//! `i64` operands become constants. Constant folding is checked: an overflowing fold keeps the
//! node unfolded (evaluation then reports the overflow) instead of wrapping.

use std::ops::{Add, Mul, Neg, Sub};

use crate::Expr;

macro_rules! binary_op {
    ($trait:ident, $method:ident, $build:ident) => {
        impl $trait<Expr> for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::$build(self, rhs)
            }
        }
        impl $trait<i64> for Expr {
            type Output = Expr;
            fn $method(self, rhs: i64) -> Expr {
                Expr::$build(self, Expr::constant(rhs))
            }
        }
        impl $trait<Expr> for i64 {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::$build(Expr::constant(self), rhs)
            }
        }
    };
}

binary_op!(Add, add, add);
binary_op!(Sub, sub, sub);
binary_op!(Mul, mul, mul);

impl Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::neg(self)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Expr, ExprKind};

    #[test]
    fn operators_build_the_expected_tree() {
        let d0 = Expr::dim(0);
        let d1 = Expr::dim(1);
        let e = d0 * 8 + d1;
        assert_eq!(e, (d0 * 8) + d1, "hash-consing makes equal trees identical");
        match e.kind() {
            ExprKind::Add(a, b) => {
                assert_eq!(b, d1);
                assert_eq!(a.kind(), ExprKind::Mul(d0, Expr::constant(8)));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(2 * d0, d0 * 2, "constant factors go to the right");
        assert_eq!((d0 - 3).kind(), ExprKind::Add(d0, Expr::constant(-3)));
        assert_eq!(-d0, d0 * -1);
    }

    #[test]
    #[allow(clippy::erasing_op, clippy::identity_op)] // Folding of `x * 0` and `x * 1` is the point.
    fn folding_is_checked_never_wrapping() {
        let big = Expr::constant(i64::MAX);
        let e = big + 1;
        assert!(e.as_const().is_none(), "overflowing fold stays a node");
        assert_eq!(Expr::constant(3) * 4, Expr::constant(12));
        assert_eq!(Expr::dim(0) * 0, Expr::constant(0));
    }
}
