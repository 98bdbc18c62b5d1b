//! Rules for `floordiv`, `ceildiv` and `mod` by constants.
//!
//! Each rule's statement and side condition is in [`super::rules::RULES`]; the functions here
//! recognize the rule's left side and build its right side.

use std::borrow::Cow;

use smallvec::SmallVec;

use super::context::Ctx;
use crate::arith::{floor_div as fdiv, gcd};
use crate::linear::Linear;
use crate::{Expr, ExprKind, Interval};

/// The divisor as a constant, if it is one.
fn const_divisor(d: Expr) -> Option<i64> {
    d.as_const().filter(|&c| c != 0)
}

/// Splits `lin` by divisibility of coefficients by `g`: (multiples divided by `g`, the rest).
/// The constant goes with the multiples when `g` divides it.
fn split_by(lin: &Linear, g: i64) -> (Linear, Linear) {
    let mut main = Linear::default();
    let mut rest = Linear::default();
    for &(atom, k) in &lin.terms {
        if k % g == 0 {
            main.terms.push((atom, k / g));
        } else {
            rest.terms.push((atom, k));
        }
    }
    if lin.constant % g == 0 {
        main.constant = lin.constant / g;
    } else {
        rest.constant = lin.constant;
    }
    (main, rest)
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
/// `[0, g - 1]`: then `x floordiv c = main floordiv (c / g)` and
/// `x mod c = (main mod (c / g)) * g + rest`.
fn gcd_split(ctx: &mut Ctx<'_>, lin: &Linear, c: i64) -> Option<(i64, Linear, Expr)> {
    let candidates = gcd_candidates(lin, c);
    if candidates.is_empty() {
        return None;
    }
    // Each candidate comes from a coefficient it divides, so `main` is never empty. The
    // terms' ranges are read once for all candidates.
    let term_ranges: SmallVec<[Interval; 8]> = lin
        .terms
        .iter()
        .map(|&(atom, k)| ctx.range(atom).mul(Interval::point(k)))
        .collect();
    for g in candidates {
        // The range of the rest (what `split_by` leaves over), folded in the same order as
        // `linear_range` of it; the two forms are only built for the factor that works.
        let constant = if lin.constant % g == 0 {
            0
        } else {
            lin.constant
        };
        let rest_range = lin
            .terms
            .iter()
            .zip(&term_ranges)
            .filter(|(&(_, k), _)| k % g != 0)
            .fold(Interval::point(constant), |acc, (_, &r)| acc.add(r));
        if Interval::new(0, g - 1).contains_interval(rest_range) {
            let (main, rest) = split_by(lin, g);
            return Some((g, main, rest.to_expr()));
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
/// constant (toward zero), out of `lin`: `lin = c * pulled + kept`.
fn pull_multiples(lin: &Linear, c: i64) -> Option<(Linear, Linear)> {
    // Nothing to pull (the usual case once a dividend is simplified): build nothing.
    if lin.constant / c == 0 && lin.terms.iter().all(|&(_, k)| k % c != 0) {
        return None;
    }
    let mut pulled = Linear::default();
    let mut kept = Linear::default();
    for &(atom, k) in &lin.terms {
        if k % c == 0 {
            pulled.terms.push((atom, k / c));
        } else {
            kept.terms.push((atom, k));
        }
    }
    pulled.constant = lin.constant / c;
    kept.constant = lin.constant % c;
    if pulled.terms.is_empty() && pulled.constant == 0 {
        None
    } else {
        Some((pulled, kept))
    }
}

/// Rules for `x floordiv d`.
pub(crate) fn floor_div(ctx: &mut Ctx<'_>, x: Expr, d: Expr) -> Option<Expr> {
    let c = const_divisor(d)?;
    if c < 0 {
        let nc = c.checked_neg()?;
        return ctx
            .fire("floordiv_negative_divisor")
            .then(|| x.neg().floor_div(Expr::constant(nc)));
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
                if ctx.fire("mod_then_floordiv") {
                    return Some(y.floor_div(d).modulo(Expr::constant(m / c)));
                }
            }
        }
        _ => {}
    }
    // The linear rules chain on one flat form, building the result once: pull the multiples
    // of c out, then try the period and the common factor on what is left.
    let lin = x.linear()?;
    let (pulled, kept) = match pull_multiples(lin, c) {
        Some((p, k)) if ctx.fire("floordiv_pull_multiple") => (Some(p), Cow::Owned(k)),
        _ => (None, Cow::Borrowed(lin)),
    };
    let with_pulled = |e: Expr, pulled: &Option<Linear>| match pulled {
        Some(p) => p.to_expr().add(e),
        None => e,
    };
    if pulled.is_some() {
        let r = linear_range(ctx, &kept);
        if let (Some(lo), Some(hi)) = (fdiv(r.lo, c), fdiv(r.hi, c)) {
            if !r.is_empty() && lo == hi && ctx.fire("floordiv_one_period") {
                return Some(with_pulled(Expr::constant(lo), &pulled));
            }
        }
    }
    if let Some((g, main, _)) = gcd_split(ctx, &kept, c) {
        if ctx.fire("floordiv_gcd") {
            return Some(with_pulled(
                main.to_expr().floor_div(Expr::constant(c / g)),
                &pulled,
            ));
        }
    }
    pulled
        .is_some()
        .then(|| with_pulled(kept.to_expr().floor_div(d), &pulled))
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
    if let Some((pulled, kept)) = pull_multiples(lin, c) {
        if ctx.fire("ceildiv_pull_multiple") {
            return Some(pulled.to_expr().add(kept.to_expr().ceil_div(d)));
        }
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
    let reduced = if changed {
        Cow::Owned(reduced)
    } else {
        Cow::Borrowed(lin)
    };
    if changed {
        let r = linear_range(ctx, &reduced);
        if let (Some(qlo), Some(qhi)) = (fdiv(r.lo, c), fdiv(r.hi, c)) {
            if !r.is_empty() && qlo == qhi && ctx.fire("mod_one_period") {
                return Some(reduced.to_expr().sub(Expr::constant(qlo.checked_mul(c)?)));
            }
        }
    }
    if let Some((g, main, rest)) = gcd_split(ctx, &reduced, c) {
        if ctx.fire("mod_gcd_split") {
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
