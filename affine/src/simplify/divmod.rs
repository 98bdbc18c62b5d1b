//! Rules for `floordiv`, `ceildiv` and `mod` by constants.
//!
//! Each rule's statement and side condition is in [`super::rules::RULES`]; the functions here
//! recognize the rule's left side and build its right side.

use smallvec::SmallVec;

use super::context::Ctx;
use crate::arith::{floor_div as fdiv, gcd};
use crate::linear::Linear;
use crate::{Expr, ExprKind, Interval};

/// The divisor as a constant, if it is one.
fn const_divisor(d: Expr) -> Option<i64> {
    d.as_const().filter(|&c| c != 0)
}

/// How [`split_by`] places a constant that `g` does not divide.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ConstantSplit {
    /// The whole constant goes with the rest.
    Whole,
    /// The constant splits into `g * floor(constant / g)` (with the multiples) and its
    /// residue in `[0, g - 1]` (with the rest): `(2 * x - 629) floordiv 630` is
    /// `(x - 315) floordiv 315`.
    Residue,
}

/// The part of `constant` that goes with the multiples (divided by `g`) and the part that
/// goes with the rest, as `how` places them (`g >= 1`).
fn split_constant(constant: i64, g: i64, how: ConstantSplit) -> (i64, i64) {
    if constant % g == 0 {
        (constant / g, 0)
    } else if how == ConstantSplit::Residue {
        (constant.div_euclid(g), constant.rem_euclid(g))
    } else {
        (0, constant)
    }
}

/// Splits `lin` by divisibility of coefficients by `g` into `main` (the multiples, divided
/// by `g`) and `rest` (both empty before). The constant goes with the multiples when `g`
/// divides it, otherwise as `how` says.
fn split_by(lin: &Linear, g: i64, how: ConstantSplit, main: &mut Linear, rest: &mut Linear) {
    for &(atom, k) in &lin.terms {
        if k % g == 0 {
            main.terms.push((atom, k / g));
        } else {
            rest.terms.push((atom, k));
        }
    }
    (main.constant, rest.constant) = split_constant(lin.constant, g, how);
}

/// Candidate common factors `gcd(k, c) > 1` of the coefficients with the divisor, largest
/// first, excluding `c` itself.
fn gcd_candidates(lin: &Linear, c: i64) -> SmallVec<[i64; 4]> {
    let mut gs: SmallVec<[i64; 4]> = SmallVec::new();
    for &(_, k) in &lin.terms {
        // A unit coefficient has no common factor with anything.
        if k.unsigned_abs() == 1 {
            continue;
        }
        if let Some(g) = gcd(k, c) {
            if g > 1 && g < c && !gs.contains(&g) {
                gs.push(g);
            }
        }
    }
    gs.sort_unstable_by(|a, b| b.cmp(a));
    gs
}

/// Finds the largest `g` dividing `c` such that `x = g * main + rest` with `rest` in
/// `[0, g - 1]` (as [`split_by`] splits it): then `x floordiv c = main floordiv (c / g)` and
/// `x mod c = (main mod (c / g)) * g + rest`.
fn gcd_factor(ctx: &mut Ctx<'_>, lin: &Linear, c: i64, how: ConstantSplit) -> Option<i64> {
    let candidates = gcd_candidates(lin, c);
    if candidates.is_empty() {
        return None;
    }
    // Each candidate comes from a coefficient it divides, so `main` is never empty. The
    // terms' ranges are read once for all candidates.
    // Filled in place (a collected vector would be moved into place, a copy of its buffer).
    let mut term_ranges: SmallVec<[Interval; 8]> = SmallVec::new();
    for &(atom, k) in &lin.terms {
        term_ranges.push(ctx.range(atom).mul(Interval::point(k)));
    }
    for g in candidates {
        // The range of the rest (what `split_by` leaves over), folded in the same order as
        // `linear_range` of it; the two forms are only built for the factor that works.
        let constant = split_constant(lin.constant, g, how).1;
        let rest_range = lin
            .terms
            .iter()
            .zip(&term_ranges)
            .filter(|(&(_, k), _)| k % g != 0)
            .fold(Interval::point(constant), |acc, (_, &r)| acc.add(r));
        if Interval::new(0, g - 1).contains_interval(rest_range) {
            return Some(g);
        }
    }
    None
}

/// The natural range of a linear form from its atoms' ranges (no new expression is built).
fn linear_range(ctx: &mut Ctx<'_>, lin: &Linear) -> Interval {
    lin.terms
        .iter()
        .fold(Interval::point(lin.constant), |acc, &(atom, k)| {
            acc.add(ctx.range(atom).mul(Interval::point(k)))
        })
}

/// Pulls the terms whose coefficients are multiples of `c`, and the multiple of `c` in the
/// constant (toward zero), out of `lin`: `lin = c * pulled + kept`. Returns false (and leaves
/// the outputs empty) when there is nothing to pull. The outputs are the caller's, so that
/// these forms are written once instead of being moved out.
fn pull_multiples(lin: &Linear, c: i64, pulled: &mut Linear, kept: &mut Linear) -> bool {
    // Nothing to pull (the usual case once a dividend is simplified): build nothing.
    if lin.constant / c == 0 && lin.terms.iter().all(|&(_, k)| k % c != 0) {
        return false;
    }
    for &(atom, k) in &lin.terms {
        if k % c == 0 {
            pulled.terms.push((atom, k / c));
        } else {
            kept.terms.push((atom, k));
        }
    }
    pulled.constant = lin.constant / c;
    kept.constant = lin.constant % c;
    true
}

/// The number of nodes of [`Linear::to_expr`] of `lin`, without building it.
fn linear_size(lin: &Linear) -> u64 {
    if lin.terms.is_empty() {
        return 1;
    }
    let terms: u64 = lin
        .terms
        .iter()
        .map(|&(atom, k)| u64::from(atom.size()) + if k == 1 { 0 } else { 2 })
        .sum();
    terms + (lin.terms.len() as u64 - 1) + if lin.constant == 0 { 0 } else { 2 }
}

/// `(y + x floordiv b) floordiv c` as `(y * b + x) floordiv (b * c)` for the first atom
/// `x floordiv b` (coefficient 1, `b >= 2`) of `lin` where that is smaller (sizes compared
/// without building either side).
fn absorb_floordiv(lin: &Linear, c: i64) -> Option<Expr> {
    let node_size = linear_size(lin);
    for (i, &(atom, k)) in lin.terms.iter().enumerate() {
        let ExprKind::FloorDiv(x, bd) = atom.kind() else {
            continue;
        };
        let Some(b) = bd.as_const().filter(|&b| b >= 2) else {
            continue;
        };
        if k != 1 {
            continue;
        }
        let bc = b.checked_mul(c)?;
        let mut joined = Linear {
            terms: SmallVec::new(),
            constant: lin.constant.checked_mul(b)?,
        };
        for (j, &(a, kj)) in lin.terms.iter().enumerate() {
            if j != i {
                joined.terms.push((a, kj.checked_mul(b)?));
            }
        }
        let xl = x.linear()?;
        joined.terms.extend(xl.terms.iter().copied());
        joined.constant = joined.constant.checked_add(xl.constant)?;
        joined.normalize()?;
        // Both sides are `(...) floordiv constant`.
        if linear_size(&joined) < node_size {
            return Some(joined.to_expr().floor_div(Expr::constant(bc)));
        }
    }
    None
}

/// For `lin = -p + r` with every coefficient negative and `r = c * q + c - 1`: `(p, q)`,
/// when `q - p floordiv c` (`floor`) or `c - 1 - p mod c` is no larger than the node it
/// replaces. Both drop the constant and the negation of every term with coefficient -1
/// (two nodes each) and add a negation of the quotient or remainder (two nodes) and the
/// constant (two nodes; for floordiv only when `q != 0`).
#[inline]
fn negated(lin: &Linear, c: i64, floor: bool) -> Option<(Linear, i64)> {
    let mut unit_terms = 0;
    for &(_, k) in &lin.terms {
        if k >= 0 {
            return None;
        }
        unit_terms += i64::from(k == -1);
    }
    if lin.terms.is_empty() || c < 2 {
        return None;
    }
    let shifted = lin.constant.checked_sub(c - 1)?;
    if shifted.rem_euclid(c) != 0 {
        return None;
    }
    let q = shifted.div_euclid(c);
    let added = if floor { i64::from(q != 0) } else { 1 };
    if unit_terms < added {
        return None;
    }
    let mut p = Linear {
        terms: SmallVec::new(),
        constant: 0,
    };
    for &(a, k) in &lin.terms {
        p.terms.push((a, k.checked_neg()?));
    }
    Some((p, q))
}

/// Rules for `x floordiv d`.
pub(crate) fn floor_div(ctx: &mut Ctx<'_>, x: Expr, d: Expr) -> Option<Expr> {
    let c = const_divisor(d)?;
    if c < 0 {
        // Only when the simplified form is no larger: `(x floordiv 2) floordiv -7` stays (its
        // positive-divisor form needs a negation that nothing removes).
        let nc = c.checked_neg()?;
        let moved = ctx.simplify(x.neg().floor_div(Expr::constant(nc)));
        let before = x.size().saturating_add(2);
        return (moved.size() <= before && ctx.fire("floordiv_negative_divisor")).then_some(moved);
    }
    let r = ctx.range(x);
    if !r.is_empty() && fdiv(r.lo, c) == fdiv(r.hi, c) && ctx.fire("floordiv_one_period") {
        return fdiv(r.lo, c).map(Expr::constant);
    }
    match x.kind() {
        ExprKind::FloorDiv(y, b) => {
            if let Some(bc) = b
                .as_const()
                .filter(|&b| b > 0)
                .and_then(|b| b.checked_mul(c))
            {
                if ctx.fire("floordiv_nested") {
                    return Some(y.floor_div(Expr::constant(bc)));
                }
            }
        }
        ExprKind::Mod(y, m) => {
            if let Some(m) = m.as_const().filter(|&m| m > 0 && m % c == 0) {
                // Unless the quotient splits into a larger form (`(d0 * 16 + s0 - 5) floordiv
                // 4` is `d0 * 4 + (s0 - 1) floordiv 4 - 1`).
                let q = ctx.simplify(y.floor_div(d));
                let r = q.modulo(Expr::constant(m / c));
                if r.size() <= x.size() + 2 && ctx.fire("mod_then_floordiv") {
                    return Some(r);
                }
            }
        }
        _ => {}
    }
    // The linear rules chain on one flat form, building the result once: pull the multiples
    // of c out, then try the period and the common factor on what is left.
    let lin = x.linear()?;
    let (mut pulled, mut kept_form) = (Linear::default(), Linear::default());
    let has_pulled =
        pull_multiples(lin, c, &mut pulled, &mut kept_form) && ctx.fire("floordiv_pull_multiple");
    let kept = if has_pulled { &kept_form } else { lin };
    let with_pulled = |e: Expr| {
        if has_pulled {
            pulled.to_expr().add(e)
        } else {
            e
        }
    };
    if has_pulled {
        let r = linear_range(ctx, kept);
        if let (Some(lo), Some(hi)) = (fdiv(r.lo, c), fdiv(r.hi, c)) {
            if !r.is_empty() && lo == hi && ctx.fire("floordiv_one_period") {
                return Some(with_pulled(Expr::constant(lo)));
            }
        }
    }
    // A negated dividend: `(-p + c * q + c - 1) floordiv c = q - p floordiv c`.
    if let Some((p, q)) = negated(kept, c, true) {
        if ctx.fire("floordiv_negated") {
            return Some(with_pulled(Expr::constant(q).sub(p.to_expr().floor_div(d))));
        }
    }
    // A quotient inside the dividend: `(y + x floordiv b) floordiv c`.
    if kept
        .terms
        .iter()
        .any(|&(a, k)| k == 1 && matches!(a.kind(), ExprKind::FloorDiv(..)))
    {
        if let Some(e) = absorb_floordiv(kept, c) {
            if ctx.fire("floordiv_absorb_floordiv") {
                return Some(with_pulled(e));
            }
        }
    }
    // A single term plus a constant: the constant's residue alone is the rest, and the
    // quotient only gets smaller coefficients. With several terms the constant stays whole,
    // so that a quotient keeps the dividend of its remainder partner
    // (`(x floordiv c) * c + x mod c` recombines); splitting it there grew realistic maps.
    let how = if kept.terms.len() == 1 {
        ConstantSplit::Residue
    } else {
        ConstantSplit::Whole
    };
    if let Some(g) = gcd_factor(ctx, kept, c, how) {
        if ctx.fire("floordiv_gcd") {
            let (mut main, mut rest) = (Linear::default(), Linear::default());
            split_by(kept, g, how, &mut main, &mut rest);
            return Some(with_pulled(main.to_expr().floor_div(Expr::constant(c / g))));
        }
    }
    has_pulled.then(|| with_pulled(kept.to_expr().floor_div(d)))
}

/// Rules for `x ceildiv d`.
pub(crate) fn ceil_div(ctx: &mut Ctx<'_>, x: Expr, d: Expr) -> Option<Expr> {
    let c = const_divisor(d)?;
    if c < 0 {
        let nc = c.checked_neg()?;
        return ctx
            .fire("ceildiv_negative_divisor")
            .then(|| x.neg().ceil_div(Expr::constant(nc)));
    }
    let r = ctx.range(x);
    let cdiv = crate::arith::ceil_div;
    if !r.is_empty() && cdiv(r.lo, c) == cdiv(r.hi, c) && ctx.fire("ceildiv_one_period") {
        return cdiv(r.lo, c).map(Expr::constant);
    }
    let lin = x.linear()?;
    let (mut pulled, mut kept) = (Linear::default(), Linear::default());
    if pull_multiples(lin, c, &mut pulled, &mut kept) && ctx.fire("ceildiv_pull_multiple") {
        return Some(pulled.to_expr().add(kept.to_expr().ceil_div(d)));
    }
    None
}

/// The canonical coefficient for `k` under `mod c`: coefficients in `[0, c)` stay; a
/// negative one becomes its positive residue when that is no larger in magnitude (so
/// `(-x) mod 2` is `x mod 2`, but `(-x) mod 8` stays); a coefficient of magnitude `>= c` is
/// reduced, a positive one to `[0, c)`, a negative one to whichever residue is smaller.
fn canonical_residue(k: i64, c: i64) -> i64 {
    let r = k.rem_euclid(c);
    if (0..c).contains(&k) {
        k
    } else if k > 0 || (r <= (r - c).unsigned_abs() as i64 && r <= k.unsigned_abs() as i64) {
        r
    } else if k > -c {
        k
    } else {
        r - c
    }
}

/// Rules for `x mod d`.
pub(crate) fn modulo(ctx: &mut Ctx<'_>, x: Expr, d: Expr) -> Option<Expr> {
    let c = const_divisor(d)?;
    if c < 0 {
        let nc = c.checked_neg()?;
        return ctx
            .fire("mod_negative_divisor")
            .then(|| x.neg().modulo(Expr::constant(nc)).neg());
    }
    let r = ctx.range(x);
    if !r.is_empty() {
        if let (Some(qlo), Some(qhi)) = (fdiv(r.lo, c), fdiv(r.hi, c)) {
            if qlo == qhi && ctx.fire("mod_one_period") {
                return Some(x.sub(Expr::constant(qlo.checked_mul(c)?)));
            }
        }
    }
    if let ExprKind::Mod(y, m) = x.kind() {
        if m.as_const().is_some_and(|m| m > 0 && m % c == 0) && ctx.fire("mod_nested") {
            return Some(y.modulo(d));
        }
    }
    let lin = x.linear()?;
    // Reduce every coefficient and the constant modulo c, then try the period and the common
    // factor on the reduced form, building the result once.
    let mut reduced = Linear {
        terms: SmallVec::new(),
        constant: lin.constant % c,
    };
    let mut residue_changed = false;
    // Usually every coefficient is already its own residue: then the reduced form is `lin`
    // itself and is not built.
    let all_reduced = reduced.constant == lin.constant
        && lin.terms.iter().all(|&(_, k)| canonical_residue(k, c) == k);
    for &(atom, k) in lin.terms.iter().filter(|_| !all_reduced) {
        let k2 = canonical_residue(k, c);
        if k2 != k && k2 != 0 {
            residue_changed = true;
        }
        if k2 != 0 {
            reduced.terms.push((atom, k2));
        }
    }
    let changed = !all_reduced
        && reduced != *lin
        && ctx.fire(if residue_changed {
            "mod_residue_coefficient"
        } else {
            "mod_pull_multiple"
        });
    let reduced = if changed { &reduced } else { lin };
    if changed {
        let r = linear_range(ctx, reduced);
        if let (Some(qlo), Some(qhi)) = (fdiv(r.lo, c), fdiv(r.hi, c)) {
            if !r.is_empty() && qlo == qhi && ctx.fire("mod_one_period") {
                return Some(reduced.to_expr().sub(Expr::constant(qlo.checked_mul(c)?)));
            }
        }
    }
    // A negated dividend: `(-p + c * q + c - 1) mod c = c - 1 - p mod c`.
    if let Some((p, _)) = negated(reduced, c, false) {
        if ctx.fire("mod_negated") {
            return Some(Expr::constant(c - 1).sub(p.to_expr().modulo(d)));
        }
    }
    // The whole constant stays in the rest: splitting it would add a term to the result.
    if let Some(g) = gcd_factor(ctx, reduced, c, ConstantSplit::Whole) {
        if ctx.fire("mod_gcd_split") {
            let (mut main, mut rest) = (Linear::default(), Linear::default());
            split_by(reduced, g, ConstantSplit::Whole, &mut main, &mut rest);
            let rest = rest.to_expr();
            return Some(
                main.to_expr()
                    .modulo(Expr::constant(c / g))
                    .mul(Expr::constant(g))
                    .add(rest),
            );
        }
    }
    changed.then(|| reduced.to_expr().modulo(d))
}
