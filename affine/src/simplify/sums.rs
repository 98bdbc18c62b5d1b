//! Rules on sums: the canonical form, and recombination of quotient/remainder pairs
//! (`(x floordiv c) * c + x mod c` is `x`, and relatives).

use super::context::Ctx;
use smallvec::SmallVec;

use crate::linear::Linear;
use crate::{Expr, ExprKind};

/// Writes into `out` (empty) the sum with every atom of the normalized form `lin`
/// simplified, flattened and normalized again (a simplified atom may itself be a sum).
/// Returns whether any atom changed; `None` on overflow. (`out` is the caller's so that the
/// form is written in place rather than moved out.)
pub(crate) fn simplify_atoms(ctx: &mut Ctx<'_>, lin: &Linear, out: &mut Linear) -> Option<bool> {
    out.constant = lin.constant;
    let mut changed = false;
    for &(atom, k) in &lin.terms {
        let s = ctx.simplify(atom);
        if s == atom {
            out.terms.push((atom, k));
        } else {
            changed = true;
            add_scaled(out, s, k)?;
        }
    }
    // `lin` is a normalized form (sorted, merged, no zero coefficient): with every atom
    // unchanged, normalizing again would change nothing.
    if changed {
        out.normalize()?;
    }
    Some(changed)
}

/// `lin += k * x` (flattening `x`); `None` on overflow.
fn add_scaled(lin: &mut Linear, x: Expr, k: i64) -> Option<()> {
    let xl = x.linear()?;
    for &(atom, c) in &xl.terms {
        lin.terms.push((atom, c.checked_mul(k)?));
    }
    lin.constant = lin.constant.checked_add(xl.constant.checked_mul(k)?)?;
    Some(())
}

/// `lin` without the terms of `atoms`, plus `adds` (each `(expr, coefficient)`), normalized.
fn replace(lin: &Linear, atoms: &[Expr], adds: &[(Expr, i64)]) -> Option<Linear> {
    let mut out = Linear {
        terms: lin
            .terms
            .iter()
            .filter(|t| !atoms.contains(&t.0))
            .copied()
            .collect(),
        constant: lin.constant,
    };
    for &(x, k) in adds {
        add_scaled(&mut out, x, k)?;
    }
    out.normalize()?;
    Some(out)
}

fn const_of(e: Expr) -> Option<i64> {
    e.as_const().filter(|&c| c > 0)
}

/// One recombination of quotient/remainder pairs in a flat sum of simplified atoms.
pub(crate) fn recombine(ctx: &mut Ctx<'_>, lin: &Linear) -> Option<Linear> {
    for &(atom, coef) in &lin.terms {
        match atom.kind() {
            ExprKind::FloorDiv(x, cd) => {
                let Some(c) = const_of(cd) else { continue };
                if coef % c == 0 {
                    let k = coef / c;
                    // k * c * (x floordiv c) + k * (x mod c)  ==>  k * x. The remainder is
                    // looked up in its simplified form (coefficients reduced modulo c), which
                    // is how it appears in a simplified sum.
                    let m = ctx.simplify(x.modulo(cd));
                    if lin.coefficient(m) == k && ctx.fire("recombine_div_mod") {
                        return replace(lin, &[atom, m], &[(x, k)]);
                    }
                    // j * x - j * c * (x floordiv c)  ==>  j * (x mod c), here with j = -k.
                    if contains_scaled(lin, x, -k) == Some(true) && ctx.fire("recombine_sub_to_mod")
                    {
                        return replace(lin, &[atom], &[(x, k), (m, -k)]);
                    }
                }
                // The quotient may have absorbed an inner one (`floordiv_absorb_floordiv`):
                // `(y * b + r) floordiv c` is `(y + r floordiv b) floordiv (c / b)`, whose
                // dividend is what the sum holds next to it.
                if coef % c != 0 {
                    for y in unabsorbed(lin, atom, coef, x, c) {
                        if let Some(r) =
                            recombine_quotient(ctx, lin, atom, coef, y.0, Expr::constant(y.1), y.1)
                        {
                            return Some(r);
                        }
                    }
                }
            }
            ExprKind::Mod(inner, bd) => {
                // Atoms `(x floordiv a) mod b` with coefficient k * a.
                let Some(b) = const_of(bd) else { continue };
                // A split quotient is rebuilt only when some atom has the coefficient of a
                // partner (`x mod a` with coef / a, `x floordiv (a * b)` with coef * b).
                if !matches!(inner.kind(), ExprKind::FloorDiv(..))
                    && !partner_coefficient(lin, inner, coef, b)
                {
                    continue;
                }
                let Some((x, ad)) = quotient_of(inner) else {
                    continue;
                };
                let Some(a) = const_of(ad) else { continue };
                if coef % a == 0 {
                    // k * a * ((x floordiv a) mod b) + k * (x mod a)  ==>  k * (x mod (a * b))
                    let k = coef / a;
                    let low = ctx.simplify(x.modulo(ad));
                    if let Some(ab) = a.checked_mul(b) {
                        if lin.coefficient(low) == k && ctx.fire("recombine_nested_mod") {
                            return replace(
                                lin,
                                &[atom, low],
                                &[(x.modulo(Expr::constant(ab)), k)],
                            );
                        }
                    }
                }
                // k * b * (x floordiv (a * b)) + k * ((x floordiv a) mod b)  ==>  k * (x floordiv a)
                if let (Some(ab), Some(kb)) = (a.checked_mul(b), coef.checked_mul(b)) {
                    let high = ctx.simplify(x.floor_div(Expr::constant(ab)));
                    if lin.coefficient(high) == kb && ctx.fire("recombine_nested_div") {
                        return replace(lin, &[atom, high], &[(inner, coef)]);
                    }
                }
            }
            _ => {}
        }
    }
    recombine_from_dividend(ctx, lin)
}

/// For `inner = p + r floordiv a` under `mod b` with coefficient `coef`: whether `lin` has an
/// atom `_ mod a` with coefficient `coef / a` or `_ floordiv (a * b)` with `coef * b`.
fn partner_coefficient(lin: &Linear, inner: Expr, coef: i64, b: i64) -> bool {
    let Some(il) = inner.linear() else {
        return false;
    };
    il.terms.iter().any(|&(q, k)| {
        let ExprKind::FloorDiv(_, ad) = q.kind() else {
            return false;
        };
        let Some(a) = ad.as_const().filter(|&a| a >= 2 && k == 1) else {
            return false;
        };
        lin.terms.iter().any(|&(t, kt)| match t.kind() {
            ExprKind::Mod(_, d) => d.as_const() == Some(a) && kt.checked_mul(a) == Some(coef),
            ExprKind::FloorDiv(_, d) => {
                a.checked_mul(b).is_some_and(|ab| d.as_const() == Some(ab))
                    && coef.checked_mul(b) == Some(kt)
            }
            _ => false,
        })
    })
}

/// The quotient/remainder recombinations of `atom = x floordiv c` (coefficient `coef`;
/// `cd` is the constant `c`), for a dividend found by [`unabsorbed`] (the arm in
/// [`recombine`] does the same inline for the atom's own dividend).
#[inline(never)]
fn recombine_quotient(
    ctx: &mut Ctx<'_>,
    lin: &Linear,
    atom: Expr,
    coef: i64,
    x: Expr,
    cd: Expr,
    c: i64,
) -> Option<Linear> {
    if coef % c != 0 {
        return None;
    }
    let k = coef / c;
    // k * c * (x floordiv c) + k * (x mod c)  ==>  k * x. The remainder is looked up in its
    // simplified form (coefficients reduced modulo c), which is how it appears in a
    // simplified sum.
    let m = ctx.simplify(x.modulo(cd));
    if lin.coefficient(m) == k && ctx.fire("recombine_div_mod") {
        return replace(lin, &[atom, m], &[(x, k)]);
    }
    // j * x - j * c * (x floordiv c)  ==>  j * (x mod c), here with j = -k.
    if contains_scaled(lin, x, -k) == Some(true) && ctx.fire("recombine_sub_to_mod") {
        return replace(lin, &[atom], &[(x, k), (m, -k)]);
    }
    None
}

/// For `atom = x floordiv c` in `lin`, and each other atom `r floordiv b` of `lin` with `b`
/// dividing `c` and `x = y * b + r`: `(y + r floordiv b, c / b)`, a dividend and divisor
/// equal to `atom` (the inverse of `floordiv_absorb_floordiv`).
///
/// Only candidates a recombination can use are built: `coef` a multiple `k * (c / b)`, and
/// the sum holding `-k * (r floordiv b)` (part of `-k * (y + r floordiv b)`) or some
/// remainder atom with coefficient `k`.
fn unabsorbed(lin: &Linear, atom: Expr, coef: i64, x: Expr, c: i64) -> SmallVec<[(Expr, i64); 2]> {
    let mut out = SmallVec::new();
    for &(q, qk) in &lin.terms {
        if q == atom {
            continue;
        }
        let ExprKind::FloorDiv(r, bd) = q.kind() else {
            continue;
        };
        let Some(b) = const_of(bd).filter(|&b| b >= 2 && c % b == 0 && c > b) else {
            continue;
        };
        let c2 = c / b;
        if coef % c2 != 0 {
            continue;
        }
        let k = coef / c2;
        let usable = qk == -k
            || lin
                .terms
                .iter()
                .any(|&(t, tk)| tk == k && matches!(t.kind(), ExprKind::Mod(..)));
        if !usable {
            continue;
        }
        let Some(xl) = x.linear() else {
            return out;
        };
        let Some(rl) = r.linear() else { continue };
        // y * b = x - r, term by term.
        let mut y = Linear {
            terms: SmallVec::new(),
            constant: 0,
        };
        let Some(diff) = xl.constant.checked_sub(rl.constant) else {
            continue;
        };
        if diff % b != 0 {
            continue;
        }
        y.constant = diff / b;
        let mut ok = true;
        for &(a, k) in &xl.terms {
            let k = k - rl.coefficient(a);
            if k % b != 0 {
                ok = false;
                break;
            }
            if k != 0 {
                y.terms.push((a, k / b));
            }
        }
        // Every atom of r must be in x.
        ok &= rl.terms.iter().all(|&(a, _)| xl.coefficient(a) != 0);
        if !ok || y.normalize().is_none() {
            continue;
        }
        out.push((y.to_expr().add(q), c / b));
    }
    out
}

/// `(x, a)` with `inner = x floordiv a` identically: `inner` itself a quotient, or a
/// split one, `p + r floordiv a` (the simplified form of `(a * p + r) floordiv a`).
fn quotient_of(inner: Expr) -> Option<(Expr, Expr)> {
    if let ExprKind::FloorDiv(x, ad) = inner.kind() {
        return Some((x, ad));
    }
    if !matches!(inner.kind(), ExprKind::Add(..)) {
        return None;
    }
    let lin = inner.linear()?;
    let (at, r, ad, a) = lin.terms.iter().enumerate().find_map(|(i, &(atom, k))| {
        let ExprKind::FloorDiv(r, ad) = atom.kind() else {
            return None;
        };
        let a = ad.as_const().filter(|&a| a >= 2 && k == 1)?;
        Some((i, r, ad, a))
    })?;
    let mut x = Linear {
        terms: SmallVec::new(),
        constant: lin.constant.checked_mul(a)?,
    };
    for (i, &(atom, k)) in lin.terms.iter().enumerate() {
        if i != at {
            x.terms.push((atom, k.checked_mul(a)?));
        }
    }
    add_scaled(&mut x, r, 1)?;
    x.normalize()?;
    Some((x.to_expr(), ad))
}

/// The nested recombinations looked up from the atom that holds the whole dividend `x`
/// (`x floordiv (a * b)` or `x mod a`): the middle atom `(x floordiv a) mod b` is matched in
/// its simplified form, where `x floordiv a` may have been split (`(d0 * 3 + d1 floordiv 3)
/// mod 5` for `x = d0 * 9 + d1`, `a = 3`), which the lookup from the middle atom misses.
fn recombine_from_dividend(ctx: &mut Ctx<'_>, lin: &Linear) -> Option<Linear> {
    for &(atom, coef) in &lin.terms {
        let (x, d, high) = match atom.kind() {
            ExprKind::FloorDiv(x, d) => (x, d, true),
            ExprKind::Mod(x, d) => (x, d, false),
            _ => continue,
        };
        let Some(c) = const_of(d) else { continue };
        for &(m, mk) in &lin.terms {
            if m == atom {
                continue;
            }
            let ExprKind::Mod(_, bd) = m.kind() else {
                continue;
            };
            let Some(b) = const_of(bd).filter(|&b| b >= 2) else {
                continue;
            };
            let coefficients_fit = if high {
                c % b == 0 && c != b && mk.checked_mul(b) == Some(coef)
            } else {
                coef.checked_mul(c) == Some(mk)
            };
            // The middle atom is a simplified function of x alone.
            if !coefficients_fit || !m.vars_may_be_within(x) {
                continue;
            }
            if high {
                // k * b * (x floordiv (a * b)) + k * ((x floordiv a) mod b)  ==>  k * (x floordiv a)
                let low_div = ctx.simplify(x.floor_div(Expr::constant(c / b)));
                if ctx.simplify(low_div.modulo(bd)) == m && ctx.fire("recombine_nested_div") {
                    return replace(lin, &[atom, m], &[(low_div, mk)]);
                }
            } else {
                // k * a * ((x floordiv a) mod b) + k * (x mod a)  ==>  k * (x mod (a * b))
                let Some(ab) = c.checked_mul(b) else { continue };
                let low_div = ctx.simplify(x.floor_div(d));
                if ctx.simplify(low_div.modulo(bd)) == m && ctx.fire("recombine_nested_mod") {
                    return replace(lin, &[atom, m], &[(x.modulo(Expr::constant(ab)), coef)]);
                }
            }
        }
    }
    None
}

/// Whether `lin` holds `j * x`: every atom of `x` with exactly `j` times its coefficient.
fn contains_scaled(lin: &Linear, x: Expr, j: i64) -> Option<bool> {
    let xl = x.linear()?;
    if xl.terms.is_empty() {
        return Some(false);
    }
    for &(atom, c) in &xl.terms {
        if lin.coefficient(atom) != c.checked_mul(j)? {
            return Some(false);
        }
    }
    Some(true)
}
