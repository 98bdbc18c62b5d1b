//! The linear-combination view of an expression: `sum(coefficient * atom) + constant`.
//!
//! Atoms are the non-linear parts (variables, products of non-constants, divisions, mods,
//! min, max). Sums are flattened so that rules can look at all summands at once, and rebuilt in
//! one canonical order: atoms in [`Expr::canonical_cmp`] order, the constant last.
//!
//! [`Linear`] is defined with the expression nodes (`expr`), each of which caches its form;
//! computing, rebuilding and reading forms is here.

use std::cell::Cell;
use std::hash::Hasher;

use rustc_hash::FxHasher;

pub(crate) use crate::expr::Flattened;
pub use crate::expr::Linear;
use crate::{Expr, ExprKind};

/// Slots of the per-thread cache of built sums (a power of two).
const BUILT_SLOTS: usize = 16384;

thread_local! {
    /// A direct-mapped cache of sums built by [`Linear::to_expr`], by a hash of the form; a
    /// hit is confirmed with [`Linear::is_built_as`], so it is always exactly what building
    /// would return.
    static BUILT: [Cell<Option<Expr>>; BUILT_SLOTS] =
        const { [const { Cell::new(None) }; BUILT_SLOTS] };
}

impl Expr {
    /// The linear form [`Linear::of`] of this node, computed once per node; `None` on overflow.
    pub(crate) fn linear(self) -> Option<&'static Linear> {
        self.flattened().map(|f| &f.form)
    }
    /// The linear form with whether this node is exactly its canonical rebuild.
    pub(crate) fn flattened(self) -> Option<&'static Flattened> {
        self.linear_cell()
            .get_or_init(|| Flattened::of(self).map(Box::new))
            .as_deref()
    }
}

impl Flattened {
    /// The flattened form of `e`; `None` on overflow.
    pub(crate) fn of(e: Expr) -> Option<Flattened> {
        let form = Linear::of(e)?;
        let canonical = form.is_built_as(e);
        Some(Flattened { form, canonical })
    }
}

impl Linear {
    /// Flattens `e`. Returns `None` if a coefficient or the constant would overflow `i64`.
    pub fn of(e: Expr) -> Option<Linear> {
        let mut lin = Linear::default();
        lin.accumulate(e, 1)?;
        lin.normalize()?;
        Some(lin)
    }

    fn accumulate(&mut self, e: Expr, k: i64) -> Option<()> {
        match e.kind() {
            ExprKind::Const(c) => {
                self.constant = self.constant.checked_add(c.checked_mul(k)?)?;
            }
            ExprKind::Add(a, b) => {
                self.accumulate(a, k)?;
                self.accumulate(b, k)?;
            }
            ExprKind::Mul(a, b) => match (a.as_const(), b.as_const()) {
                (_, Some(c)) => self.accumulate(a, k.checked_mul(c)?)?,
                (Some(c), _) => self.accumulate(b, k.checked_mul(c)?)?,
                _ => self.terms.push((e, k)),
            },
            _ => self.terms.push((e, k)),
        }
        Some(())
    }

    /// Sorts terms canonically, merges equal atoms and drops zero coefficients.
    pub fn normalize(&mut self) -> Option<()> {
        if self.terms.len() > 1 {
            // Inputs are usually canonical already: one pass decides, the sort is skipped.
            if !self
                .terms
                .windows(2)
                .all(|w| w[0].0.canonical_cmp(w[1].0).is_lt())
            {
                self.terms.sort_by(|a, b| a.0.canonical_cmp(b.0));
            }
            // Merge equal neighbours in place (no second vector to fill and copy back).
            let terms = &mut self.terms;
            let mut w = 0;
            for r in 1..terms.len() {
                if terms[r].0 == terms[w].0 {
                    terms[w].1 = terms[w].1.checked_add(terms[r].1)?;
                } else {
                    w += 1;
                    terms[w] = terms[r];
                }
            }
            terms.truncate(w + 1);
        }
        self.terms.retain(|t| t.1 != 0);
        Some(())
    }

    /// Rebuilds the canonical expression: `atom1 * k1 + atom2 * k2 + ... + constant`.
    pub fn to_expr(&self) -> Expr {
        // The simplifier rebuilds the same few sums over and over; finding the last one built
        // for this form skips interning every node of its spine again.
        let Some(slot) = self.cache_slot() else {
            return self.build_expr();
        };
        let cached = BUILT.try_with(|built| built[slot].get()).ok().flatten();
        if let Some(e) = cached {
            if self.is_built_as(e) {
                return e;
            }
        }
        let e = self.build_expr();
        let _ = BUILT.try_with(|built| built[slot].set(Some(e)));
        e
    }

    /// The slot of [`BUILT`] for this form, or `None` when [`Linear::is_built_as`] cannot
    /// vouch for a cached expression: the builders fold a zero coefficient, a constant atom
    /// and a product by a constant, so such terms do not become `atom * k` as it checks.
    fn cache_slot(&self) -> Option<usize> {
        let mut h = FxHasher::default();
        for &(atom, k) in &self.terms {
            let folds = match atom.kind() {
                ExprKind::Const(_) => true,
                ExprKind::Mul(_, c) => c.as_const().is_some(),
                _ => false,
            };
            if k == 0 || folds {
                return None;
            }
            h.write_u64(atom.structural_hash());
            h.write_i64(k);
        }
        h.write_i64(self.constant);
        Some(h.finish() as usize & (BUILT_SLOTS - 1))
    }

    /// Builds the canonical expression node by node.
    fn build_expr(&self) -> Expr {
        let mut acc: Option<Expr> = None;
        for &(atom, k) in &self.terms {
            let term = atom.mul(Expr::constant(k));
            acc = Some(match acc {
                None => term,
                Some(a) => Expr::raw(ExprKind::Add(a, term)),
            });
        }
        match acc {
            None => Expr::constant(self.constant),
            Some(a) if self.constant == 0 => a,
            Some(a) => Expr::raw(ExprKind::Add(a, Expr::constant(self.constant))),
        }
    }

    /// Whether [`Linear::to_expr`] would return exactly `e`, decided without building it.
    pub fn is_built_as(&self, e: Expr) -> bool {
        let mut spine = e;
        let mut expected_terms = self.terms.len();
        if self.constant != 0 {
            match spine.kind() {
                ExprKind::Add(rest, c)
                    if expected_terms > 0 && c.as_const() == Some(self.constant) =>
                {
                    spine = rest
                }
                ExprKind::Const(c) if expected_terms == 0 => return c == self.constant,
                _ => return false,
            }
        } else if expected_terms == 0 {
            return e.as_const() == Some(0);
        }
        while expected_terms > 0 {
            let (atom, k) = self.terms[expected_terms - 1];
            let term = if expected_terms == 1 {
                spine
            } else {
                match spine.kind() {
                    ExprKind::Add(rest, t) => {
                        spine = rest;
                        t
                    }
                    _ => return false,
                }
            };
            let ok = if k == 1 {
                term == atom
            } else {
                matches!(term.kind(), ExprKind::Mul(x, c) if x == atom && c.as_const() == Some(k))
            };
            if !ok {
                return false;
            }
            expected_terms -= 1;
        }
        true
    }

    /// The coefficient of `atom` (0 if absent).
    pub fn coefficient(&self, atom: Expr) -> i64 {
        self.terms.iter().find(|t| t.0 == atom).map_or(0, |t| t.1)
    }

    /// True if the sum is a constant.
    pub fn is_constant(&self) -> bool {
        self.terms.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_and_orders_canonically() {
        let (d0, d1, s0) = (Expr::dim(0), Expr::dim(1), Expr::range(0));
        let e = (s0 + 5) + (d1 * 3 + d0 * 2) * 4 - d1 * 12;
        let lin = Linear::of(e).unwrap();
        assert_eq!(lin.terms.as_slice(), &[(d0, 8), (s0, 1)]);
        assert_eq!(lin.constant, 5);
        assert_eq!(lin.to_expr(), d0 * 8 + s0 + 5);
    }

    #[test]
    #[allow(clippy::erasing_op, clippy::identity_op)] // Folding of `x * 0` and `x * 1` is the point.
    fn recognizes_its_own_canonical_form() {
        let (d0, d1) = (Expr::dim(0), Expr::dim(1));
        for e in [
            d0 * 8 + d1 - 3,
            d0,
            d0 * 2,
            Expr::constant(5),
            d1 + d0,
            d0 * 1 + d1 * 0 + 7,
            d0 - d0,
        ] {
            let lin = Linear::of(e).unwrap();
            assert_eq!(lin.is_built_as(e), lin.to_expr() == e, "{e}");
            assert!(lin.is_built_as(lin.to_expr()), "{e}");
        }
    }

    #[test]
    fn a_cached_sum_is_exactly_the_built_one() {
        let (d0, d1) = (Expr::dim(0), Expr::dim(1));
        let form = |terms: &[(Expr, i64)], constant| Linear {
            terms: terms.iter().copied().collect(),
            constant,
        };
        // A node that `is_built_as` would accept for a zero coefficient, where building
        // folds to the constant 0: the cache must not hand it out.
        let raw_zero = Expr::raw(ExprKind::Mul(d0, Expr::constant(0)));
        assert!(form(&[(d0, 0)], 0).is_built_as(raw_zero));
        for lin in [
            form(&[(d0, 8), (d1, 1)], -3),
            form(&[(d0, 0)], 0),
            form(&[(Expr::constant(4), 2)], 1),
            form(&[(d0 * 3, 2)], 0),
            form(&[], 7),
            form(&[], 0),
        ] {
            for _ in 0..3 {
                assert_eq!(lin.to_expr(), lin.build_expr(), "{lin:?}");
            }
        }
    }

    #[test]
    fn overflowing_coefficients_are_refused() {
        let e = (Expr::dim(0) * i64::MAX) * 2;
        assert!(Linear::of(e).is_none());
    }

    #[test]
    fn atoms_follow_variables() {
        let (d0, d1) = (Expr::dim(0), Expr::dim(1));
        let fd = (d1 * 4 + d0).floor_div(Expr::constant(8));
        let lin = Linear::of(fd + d0 * 2).unwrap();
        assert_eq!(lin.terms[0], (d0, 2));
        assert_eq!(lin.terms[1], (fd, 1));
    }
}
