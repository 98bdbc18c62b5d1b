//! Bottom-up rewriting of one expression to a fixpoint under a [`Ctx`].
//!
//! Children are simplified first; then the node's rules are tried in a fixed order, and a
//! rewritten node is simplified again. Results are memoized per context. Every rewrite spends
//! fuel and recursion is depth-limited, so a (hypothetical) cycle between rules stops with a
//! sound expression instead of hanging.

use super::context::Ctx;
use super::{divmod, sums};
use crate::linear::Linear;
use crate::{Expr, ExprKind};

/// Sums and products by a constant are handled as one flat linear form.
fn is_sum(e: Expr) -> bool {
    match e.kind() {
        ExprKind::Add(..) => true,
        ExprKind::Mul(_, k) => k.as_const().is_some(),
        _ => false,
    }
}

/// Deepest chain of rewrites-of-rewrites before the engine stops rewriting.
const MAX_DEPTH: u32 = 256;

impl Ctx<'_> {
    /// The simplified form of `e` on this context's domain.
    pub(crate) fn simplify(&mut self, e: Expr) -> Expr {
        if self.is_fixed_leaf(e) {
            return e;
        }
        if let Some(r) = self.memo.get(&e) {
            return *r;
        }
        if self.depth >= MAX_DEPTH {
            return e;
        }
        self.depth += 1;
        let r = self.simplify_uncached(e);
        self.depth -= 1;
        self.memo.insert(e, r);
        r
    }

    /// Leaves that no rule rewrites, answered without the memo (and never stored in it): a
    /// constant, and a variable whose bounds are not one point (the only rule for a
    /// variable is `point_range`, which reads exactly those bounds).
    fn is_fixed_leaf(&self, e: Expr) -> bool {
        match e.kind() {
            ExprKind::Const(_) => true,
            ExprKind::Var(v) => !self.var_bounds(v).is_point(),
            _ => false,
        }
    }

    fn simplify_uncached(&mut self, e: Expr) -> Expr {
        if is_sum(e) {
            return self.simplify_sum(e);
        }
        let node = match e.kind() {
            ExprKind::Const(_) => return e,
            ExprKind::Var(_) => e,
            _ => {
                let (a, b) = e.children().expect("binary node");
                let (sa, sb) = (self.simplify(a), self.simplify(b));
                if sa == a && sb == b {
                    e
                } else {
                    e.with_children(sa, sb)
                }
            }
        };
        // Folding a child to a constant can turn a product into a sum-like `x * c`.
        if is_sum(node) {
            return self.simplify_sum(node);
        }
        match self.rewrite_node(node) {
            Some(next) => self.simplify(next),
            None => node,
        }
    }

    /// One rewrite of a node whose children are simplified, or `None` at a fixpoint.
    fn rewrite_node(&mut self, n: Expr) -> Option<Expr> {
        let by_kind = match n.kind() {
            ExprKind::Const(_) => return None,
            ExprKind::Var(_) => None,
            ExprKind::Add(..) | ExprKind::Mul(..) => None,
            ExprKind::FloorDiv(x, d) => divmod::floor_div(self, x, d),
            ExprKind::CeilDiv(x, d) => divmod::ceil_div(self, x, d),
            ExprKind::Mod(x, d) => divmod::modulo(self, x, d),
            ExprKind::Min(a, b) => self.decide_min_max(a, b, false),
            ExprKind::Max(a, b) => self.decide_min_max(a, b, true),
        };
        if by_kind.is_some() {
            return by_kind;
        }
        let r = self.range(n);
        if r.is_point() && self.fire("point_range") {
            return Some(Expr::constant(r.lo));
        }
        None
    }

    /// A whole sum at once: its atoms are simplified, then the sum rules run on the flat
    /// form (simplifying each prefix of a long sum separately would be quadratic).
    fn simplify_sum(&mut self, e: Expr) -> Expr {
        let Some(flattened) = e.flattened() else {
            return e;
        };
        let lin = &flattened.form;
        let mut flat = Linear::default();
        let Some(changed) = sums::simplify_atoms(self, lin, &mut flat) else {
            return e;
        };
        if let Some(next) = sums::recombine(self, &flat) {
            return self.simplify(next.to_expr());
        }
        // With no atom changed, `flat` is `e`'s own form, whose canonical check is cached.
        let already = if changed {
            flat.is_built_as(e)
        } else {
            flattened.canonical
        };
        let canon = if already { e } else { flat.to_expr() };
        if self.trace.is_some() && !flattened.canonical {
            self.fire("sum_normal_form");
        }
        let r = self.range(canon);
        if r.is_point() && canon.as_const().is_none() && self.fire("point_range") {
            return Expr::constant(r.lo);
        }
        canon
    }

    /// `min(a, b)` / `max(a, b)` when the ranges decide which operand wins.
    fn decide_min_max(&mut self, a: Expr, b: Expr, is_max: bool) -> Option<Expr> {
        let (ra, rb) = (self.range(a), self.range(b));
        let (mut a_wins, mut b_wins) = if is_max {
            (ra.lo >= rb.hi, rb.lo >= ra.hi)
        } else {
            (ra.hi <= rb.lo, rb.hi <= ra.lo)
        };
        if !a_wins && !b_wins {
            // Correlated operands (`max(d0 + d1, d1)`): the range of their simplified
            // difference decides where the separate ranges cannot.
            let diff = self.simplify(a.sub(b));
            let rd = self.range(diff);
            let (a_ge_b, a_le_b) = (rd.lo >= 0, rd.hi <= 0);
            (a_wins, b_wins) = if is_max {
                (a_ge_b, a_le_b)
            } else {
                (a_le_b, a_ge_b)
            };
        }
        let name = if is_max { "max_decided" } else { "min_decided" };
        if a_wins && self.fire(name) {
            Some(a)
        } else if b_wins && self.fire(name) {
            Some(b)
        } else {
            None
        }
    }
}
