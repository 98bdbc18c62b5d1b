//! The summands of one result expression of an indexing map, each classified by how the
//! values it takes over an output tile depend on the tile sizes.
//!
//! A result is a sum `c + k1 * a1 + k2 * a2 + ...` ([`affine::linear::Linear`]); each atom
//! `a` must be one of
//! - an expression of runtime variables only: constant over a tile (part of the offset);
//! - a range variable `s in [lo, hi]`: `hi - lo + 1` consecutive values;
//! - a "digit" of one dimension `d` (tile size `t`, extent `D`): `d`, `d floordiv a`,
//!   `d mod c` or `(d floordiv a) mod c` with positive constants `a`, `c`.
//!
//! Over an aligned tile of `d` (`[p * t, p * t + t)`), a digit takes consecutive values,
//! as many as its size expression says, provided `t` is compatible with the digit's
//! boundaries (`t` divides `a` or `a` divides `t`; likewise for `a * c`): those are the
//! term's constraints. Anything else (products of variables, divisions of sums, min/max of
//! indices) has no exact tile.

use affine::linear::Linear;
use affine::{Expr, ExprKind, IndexingMap, VarKind};

use crate::constraint::{Constraint, ConstraintExpr};

/// Largest extent of a dimension or range variable a term may have (far above any tensor;
/// keeps every size and stride expression free of overflow).
const MAX_EXTENT: i64 = 1 << 40;

/// Which slice `[lo, hi)` of a dimension's mixed-radix digits a term reads: `d floordiv a`
/// reads `[a, inf)`, `d mod c` reads `[1, c)`, `(d floordiv a) mod c` reads `[a, a * c)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Digits {
    /// The dimension.
    pub dim: u32,
    /// Lowest place value read.
    pub lo: i64,
    /// Place value above the highest read (`None`: unbounded).
    pub hi: Option<i64>,
}

impl Digits {
    /// Whether two digit slices of the same dimension overlap.
    pub fn overlaps(&self, other: &Digits) -> bool {
        let below = |a: &Digits, b: &Digits| a.hi.is_some_and(|h| h <= b.lo);
        self.dim == other.dim && !below(self, other) && !below(other, self)
    }
}

/// One summand that varies over a tile: `coefficient * atom`.
#[derive(Clone, Debug)]
pub(crate) struct Term {
    /// The number of values the atom takes over a tile, over the tile sizes.
    pub size: Expr,
    /// The number of values the atom takes over the whole domain (the size of a tile that
    /// covers the dimension).
    pub full: i64,
    /// The coefficient of the atom.
    pub coefficient: i64,
    /// Constraints on the tile sizes under which the atom's values over every aligned tile
    /// are `size` consecutive integers.
    pub constraints: ConstraintExpr,
    /// The digits of a dimension it reads (none for a range variable).
    pub digits: Option<Digits>,
    /// The range variable it is (none for a digit).
    pub range_var: Option<u32>,
}

/// Splits result `e` of `map` into its varying terms; `Err(reason)` when some summand has
/// no exact tile. Summands over runtime variables only are left out (they are offsets).
pub(crate) fn terms_of(map: &IndexingMap, e: Expr) -> Result<Vec<Term>, String> {
    let lin = Linear::of(e).ok_or_else(|| format!("`{e}` overflows"))?;
    let mut out = Vec::new();
    for &(atom, k) in &lin.terms {
        if !atom.uses_kind(VarKind::Dim) && !atom.uses_kind(VarKind::Range) {
            continue;
        }
        out.push(classify(map, atom, k).ok_or_else(|| format!("no exact tile for `{atom}`"))?);
    }
    Ok(out)
}

/// `(dimension, a)` when `e` is `d` (`a` = 1) or `d floordiv a` with a positive `a`.
fn dim_over(e: Expr) -> Option<(u32, i64)> {
    match e.kind() {
        ExprKind::Var(v) if v.kind == VarKind::Dim => Some((v.index, 1)),
        ExprKind::FloorDiv(x, a) => {
            let v = x.as_var().filter(|v| v.kind == VarKind::Dim)?;
            let a = a.as_const().filter(|&a| a > 0 && a <= MAX_EXTENT)?;
            Some((v.index, a))
        }
        _ => None,
    }
}

/// `a mod t == 0 || t mod a == 0`: the tile size `t` and the boundary `a` divide one another.
fn compatible(t: Expr, a: i64) -> ConstraintExpr {
    if a == 1 {
        return ConstraintExpr::always();
    }
    let c = Expr::constant(a);
    ConstraintExpr::single(Constraint::new(c.modulo(t), 0, 0))
        .or(&ConstraintExpr::single(Constraint::new(t.modulo(c), 0, 0)))
}

/// `ceil(t / a)` as `(t + a - 1) floordiv a`.
fn ceil_over(t: Expr, a: i64) -> Expr {
    if a == 1 {
        t
    } else {
        (t + (a - 1)).floor_div(Expr::constant(a))
    }
}

fn classify(map: &IndexingMap, atom: Expr, k: i64) -> Option<Term> {
    if let Some(v) = atom.as_var().filter(|v| v.kind == VarKind::Range) {
        let b = map.ranges().get(v.index as usize)?;
        let n =
            b.hi.checked_sub(b.lo)?
                .checked_add(1)
                .filter(|&n| n <= MAX_EXTENT)?;
        return Some(Term {
            size: Expr::constant(n),
            full: n,
            coefficient: k,
            constraints: ConstraintExpr::always(),
            digits: None,
            range_var: Some(v.index),
        });
    }
    let (dim, a, modulus) = match atom.kind() {
        ExprKind::Mod(x, c) => {
            let (dim, a) = dim_over(x)?;
            (
                dim,
                a,
                Some(c.as_const().filter(|&c| c > 0 && c <= MAX_EXTENT)?),
            )
        }
        _ => {
            let (dim, a) = dim_over(atom)?;
            (dim, a, None)
        }
    };
    let bounds = map.dims().get(dim as usize)?;
    let extent = bounds.hi.checked_add(1).filter(|&e| e <= MAX_EXTENT)?;
    let t = Expr::dim(dim);
    // Values of `d floordiv a` over an aligned tile and over the whole dimension.
    let quotient = ceil_over(t, a);
    let quotient_full = extent.checked_add(a - 1)? / a;
    let mut constraints = compatible(t, a);
    let (size, full, hi) = match modulus {
        None => (quotient, quotient_full, None),
        Some(c) => {
            // n - ((n - 1) floordiv c) * c: n when n divides c, c when c divides n.
            let size = quotient - (quotient - 1).floor_div(Expr::constant(c)) * c;
            constraints = constraints.and(&compatible(quotient, c));
            (size, c, Some(a.checked_mul(c)?))
        }
    };
    Some(Term {
        size,
        full,
        coefficient: k,
        constraints,
        digits: Some(Digits { dim, lo: a, hi }),
        range_var: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The terms of the first result of `map`, as `size/full/coefficient` strings, or the
    /// reason there are none.
    fn check(map: &str, expect: &str) {
        let m: IndexingMap = map.parse().unwrap();
        let got = match terms_of(&m, m.results()[0]) {
            Ok(ts) => ts
                .iter()
                .map(|t| format!("{}/{}/{}", t.size, t.full, t.coefficient))
                .collect::<Vec<_>>()
                .join(", "),
            Err(e) => e,
        };
        assert_eq!(got, expect, "{map}");
    }

    #[test]
    fn classifies_atoms() {
        check(
            "(d0, d1) -> (d0 * 4 + d1 + 3), domain: d0 in [0, 5], d1 in [0, 3]",
            "d0/6/4, d1/4/1",
        );
        check(
            "(d0)[s0] -> (s0 * 2), domain: d0 in [0, 5], s0 in [1, 3]",
            "3/3/2",
        );
        check(
            "(d0){rt0} -> (d0 + rt0), domain: d0 in [0, 5], rt0 in [0, 3]",
            "d0/6/1",
        );
        check(
            "(d0) -> (d0 floordiv 4), domain: d0 in [0, 9]",
            "(d0 + 3) floordiv 4/3/1",
        );
        check(
            "(d0, d1) -> (d0 * d1), domain: d0 in [0, 5], d1 in [0, 5]",
            "no exact tile for `d0 * d1`",
        );
        check(
            "(d0) -> (d0 floordiv -2), domain: d0 in [0, 5]",
            "no exact tile for `d0 floordiv (-2)`",
        );
    }

    #[test]
    fn digits_overlap() {
        let d = |lo, hi| Digits { dim: 0, lo, hi };
        assert!(!d(1, Some(4)).overlaps(&d(4, None)));
        assert!(d(1, Some(8)).overlaps(&d(4, None)));
        assert!(d(1, None).overlaps(&d(4, Some(16))));
        assert!(!d(1, None).overlaps(&Digits {
            dim: 1,
            lo: 1,
            hi: None
        }));
    }
}
