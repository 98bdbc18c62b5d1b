//! Whether a CPU tile's innermost run crosses a division boundary of some tiled
//! instruction's index: the emitted kernel's innermost loop then computes a quotient or
//! remainder per element (`d1 floordiv 4096` for a `[128, 4096]` operand of a root
//! reshaped to `[16, 32768]` and tiled 8192 wide), which gcc does not vectorize. A run
//! that stays inside one quotient leaves an index affine in the loop variable.

use affine::linear::Linear;
use affine::{Expr, ExprKind, Var};
use tiling::SymbolicTileAnalysis;

/// Whether tiles `t` elements long along root dimension `minor` (the innermost loop of a
/// contiguous CPU tile, starting at multiples of `t`) make some instruction's index of
/// `analysis` divide or take the remainder of a value that changes inside one run.
pub(super) fn run_crosses_division(analysis: &SymbolicTileAnalysis, minor: usize, t: i64) -> bool {
    if t <= 1 {
        return false;
    }
    let d = Var::dim(minor as u32);
    analysis
        .instructions()
        .iter()
        .any(|ti| ti.map.map.results().iter().any(|&e| crosses(e, d, t)))
}

/// Whether `e` holds a division or remainder whose dividend changes inside a run of `t`
/// values of `d` starting at a multiple of `t` in a way that reaches another quotient.
fn crosses(e: Expr, d: Var, t: i64) -> bool {
    if !e.may_use(d) {
        return false;
    }
    if let ExprKind::FloorDiv(a, b) | ExprKind::CeilDiv(a, b) | ExprKind::Mod(a, b) = e.kind() {
        if a.may_use(d) && !stays_in_one_quotient(a, b, d, t) {
            return true;
        }
    }
    e.children()
        .is_some_and(|(a, b)| crosses(a, d, t) || crosses(b, d, t))
}

/// Whether `a` over a run `d in [k*t, k*t + t)` (the other variables fixed) never crosses
/// a multiple of the constant `b`: `a = c*d + rest` with `|c|*t` dividing `b` and every
/// other coefficient and the constant multiples of `|c|*t`, so the run's values of `a`
/// lie in one aligned block of `|c|*t` inside one block of `b`. Conservative: any other
/// form (a non-constant divisor, `d` under a nested operation) counts as crossing.
fn stays_in_one_quotient(a: Expr, b: Expr, d: Var, t: i64) -> bool {
    let Some(b) = b.as_const().filter(|&b| b > 0) else {
        return false;
    };
    let Some(lin) = Linear::of(a) else {
        return false;
    };
    let dim = Expr::var(d);
    let c = lin.coefficient(dim);
    let Some(step) = c.checked_abs().and_then(|c| c.checked_mul(t)) else {
        return false;
    };
    if step == 0 || b % step != 0 || lin.constant % step != 0 {
        return false;
    }
    lin.terms
        .iter()
        .filter(|(atom, _)| *atom != dim)
        .all(|&(atom, k)| !atom.may_use(d) && k % step == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_inside_one_quotient_does_not_cross() {
        let (d0, d1) = (Expr::dim(0), Expr::dim(1));
        let c = Expr::constant;
        let d = Var::dim(1);
        // d0 * 8 + d1 floordiv 4096: runs of 4096 (or 1024) stay in one quotient.
        let e = d0.mul(c(8)).add(d1.floor_div(c(4096)));
        assert!(!crosses(e, d, 4096));
        assert!(!crosses(e, d, 1024));
        assert!(crosses(e, d, 8192));
        // d1 mod 4096 likewise.
        assert!(!crosses(d1.modulo(c(4096)), d, 2048));
        assert!(crosses(d1.modulo(c(4096)), d, 8192));
        // A coefficient: (2 * d1) floordiv 8 stays for runs of 4, not 8.
        let e = d1.mul(c(2)).floor_div(c(8));
        assert!(!crosses(e, d, 4));
        assert!(crosses(e, d, 8));
        // An offset that is not a multiple of the run: (d1 + 3) floordiv 8 crosses.
        assert!(crosses(d1.add(c(3)).floor_div(c(8)), d, 8));
        // Another dimension's division is no concern of d1's runs.
        assert!(!crosses(d0.floor_div(c(3)), d, 8192));
        // A division of another dimension's term plus d1 crosses unless aligned.
        assert!(crosses(d0.add(d1).floor_div(c(16)), d, 8));
        assert!(!crosses(d0.mul(c(16)).add(d1).floor_div(c(16)), d, 8));
    }
}
