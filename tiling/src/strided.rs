//! Combining the terms of one result into a size, a stride and the constraints under which
//! the result's values over a tile are `offset + k * stride` for `k < size`.
//!
//! Sort the terms by decreasing `|coefficient|`. The values form one arithmetic progression
//! exactly when the sizes follow the pattern `1* partial? full* 1*`: every term before the
//! partial one covers a single value, every term after it up to some point covers all its
//! values (`size == full`) and its coefficient times `full` is the previous coefficient (same
//! sign), and the remaining terms cover a single value. The disjunction over every such
//! pattern is the constraint; the stride is the coefficient of the last term covering more than
//! one value (0 when none does; a lone term's coefficient, whatever its size), and the size is
//! the product of the terms' sizes.

use affine::{Expr, Interval};

use crate::constraint::{Constraint, ConstraintExpr};
use crate::terms::Term;

/// The size, stride and constraints of one result.
#[derive(Clone, Debug)]
pub(crate) struct Strided {
    /// Number of values over a tile.
    pub size: Expr,
    /// Distance between consecutive values.
    pub stride: Expr,
    /// When the two above are exact.
    pub constraints: ConstraintExpr,
}

/// `if e != 1 { then } else { otherwise }` for `e` in `[1, max]`, as an affine expression:
/// `(max + 1 - e) floordiv max` is 1 exactly when `e` is 1, else 0.
fn if_neq_one(e: Expr, then: Expr, otherwise: Expr, max: i64) -> Expr {
    let is_one = (Expr::constant(max + 1) - e).floor_div(Expr::constant(max.max(1)));
    is_one.mul(otherwise) + (Expr::constant(1) - is_one).mul(then)
}

/// The conjunction for one pattern: terms before `partial` of size 1, `partial` free, the
/// next `full` terms covering all their values, the rest of size 1. `None` when the
/// coefficients do not chain.
fn pattern(terms: &[Term], partial: usize, full: usize) -> Option<ConstraintExpr> {
    let mut cs = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        if i < partial || i > partial + full {
            cs.push(Constraint::new(t.size, 1, 1));
        } else if i > partial {
            let prev = terms[i - 1].coefficient;
            let chained = t.coefficient.checked_mul(t.full) == Some(prev);
            if !chained {
                return None;
            }
            cs.push(Constraint::new(t.size, t.full, t.full));
        }
    }
    Some(ConstraintExpr::all_of(cs))
}

/// Combines the varying terms of one result (see the module documentation).
pub(crate) fn combine(mut terms: Vec<Term>) -> Strided {
    let mut constraints = ConstraintExpr::always();
    for t in &terms {
        constraints = constraints.and(&t.constraints);
    }
    terms.sort_by_key(|t| std::cmp::Reverse(t.coefficient.unsigned_abs()));
    let size = terms
        .iter()
        .fold(Expr::constant(1), |acc, t| acc.mul(t.size));
    // A lone term's stride is its coefficient (irrelevant when it covers one value).
    let stride = match terms.as_slice() {
        [t] => Expr::constant(t.coefficient),
        _ => terms.iter().fold(Expr::constant(0), |acc, t| {
            if_neq_one(t.size, Expr::constant(t.coefficient), acc, t.full)
        }),
    };
    if terms.len() > 1 {
        let mut any = ConstraintExpr::never();
        for partial in 0..terms.len() {
            for full in 0..terms.len() - partial {
                if let Some(p) = pattern(&terms, partial, full) {
                    any = any.or(&p);
                }
            }
        }
        constraints = constraints.and(&any);
    }
    Strided {
        size,
        stride,
        constraints,
    }
}

/// The tile-size bounds `[1, D]` of a map's dimensions `[0, D - 1]`.
pub(crate) fn size_bounds(dims: &[Interval]) -> Vec<Interval> {
    dims.iter()
        .map(|b| Interval::new(1, b.hi.saturating_add(1).max(1)))
        .collect()
}
