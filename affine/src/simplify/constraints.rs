//! Constraint rules: normalize `expr in [lo, hi]` into a bound on a variable or a canonical
//! constraint, drop the always-true ones, detect the infeasible ones, merge congruences
//! (Chinese remainder), and propagate bounds through linear constraints.

use super::context::Ctx;
use crate::arith::{ceil_div, floor_div, gcd, lcm};
use crate::linear::Linear;
use crate::{Expr, ExprKind, Interval, Var};

/// What one constraint turned into.
pub(crate) enum Normalized {
    /// Always true on the domain: drop it.
    Drop,
    /// Infeasible: the map is KNOWN EMPTY.
    Empty,
    /// A bound on a variable.
    Bound(Var, Interval),
    /// A (canonical) constraint.
    Keep(Expr, Interval),
}

/// Divides an interval of `g * x` values into the interval of `x` values (`g != 0`).
fn divide_interval(i: Interval, g: i64) -> Option<Interval> {
    if g > 0 {
        Some(Interval::new(ceil_div(i.lo, g)?, floor_div(i.hi, g)?))
    } else {
        let ng = g.checked_neg()?;
        Some(Interval::new(
            ceil_div(i.hi.checked_neg()?, ng)?,
            floor_div(i.lo.checked_neg()?, ng)?,
        ))
    }
}

/// Normalizes `e in i`; `ctx` knows the variable bounds (not this constraint's own range).
pub(crate) fn normalize(ctx: &mut Ctx<'_>, mut e: Expr, mut i: Interval) -> Normalized {
    for _ in 0..64 {
        if i.is_empty() {
            ctx.fire("constraint_infeasible");
            return Normalized::Empty;
        }
        if let Some(c) = e.as_const() {
            return if i.contains(c) {
                ctx.fire("constraint_always_true");
                Normalized::Drop
            } else {
                ctx.fire("constraint_infeasible");
                Normalized::Empty
            };
        }
        if let Some(v) = e.as_var() {
            ctx.fire("constraint_on_variable");
            return Normalized::Bound(v, i);
        }
        let Some(lin) = e.linear() else { break };
        if lin.constant != 0 {
            let shifted = (
                i.lo.checked_sub(lin.constant),
                i.hi.checked_sub(lin.constant),
            );
            if let (Some(lo), Some(hi)) = shifted {
                ctx.fire("constraint_add_const");
                e = Linear {
                    terms: lin.terms.clone(),
                    constant: 0,
                }
                .to_expr();
                i = Interval::new(lo, hi);
                continue;
            }
        }
        let g = lin.terms.iter().try_fold(0i64, |acc, t| gcd(acc, t.1));
        if let Some(mut g) = g {
            if lin.terms.first().is_some_and(|t| t.1 < 0) {
                g = -g;
            }
            if g != 1 && g != 0 {
                if let Some(ni) = divide_interval(i, g) {
                    let scaled = Linear {
                        terms: lin.terms.iter().map(|&(a, k)| (a, k / g)).collect(),
                        constant: 0,
                    };
                    ctx.fire("constraint_scaled_sum");
                    e = scaled.to_expr();
                    i = ni;
                    continue;
                }
            }
        }
        if let ExprKind::FloorDiv(x, d) = e.kind() {
            if let Some(c) = d.as_const().filter(|&c| c != 0) {
                // c >= 1: x in [lo * c, hi * c + c - 1]; c <= -1: x in [hi * c + c + 1, lo * c].
                let (lo, hi) = if c > 0 {
                    (
                        i.lo.checked_mul(c),
                        i.hi.checked_mul(c).and_then(|h| h.checked_add(c - 1)),
                    )
                } else {
                    (
                        i.hi.checked_mul(c).and_then(|h| h.checked_add(c + 1)),
                        i.lo.checked_mul(c),
                    )
                };
                if let (Some(lo), Some(hi)) = (lo, hi) {
                    ctx.fire("constraint_floordiv");
                    e = x;
                    i = Interval::new(lo, hi);
                    continue;
                }
            }
        }
        break;
    }
    let r = ctx.range(e);
    if r.intersect(i).is_empty() {
        ctx.fire("constraint_infeasible");
        return Normalized::Empty;
    }
    if i.contains_interval(r) {
        ctx.fire("constraint_always_true");
        return Normalized::Drop;
    }
    let tight = i.intersect(r);
    if tight != i {
        ctx.fire("constraint_tighten");
    }
    Normalized::Keep(e, tight)
}

/// The congruence `x mod m == r` that a constraint states, if it is one.
fn congruence(e: Expr, i: Interval) -> Option<(Expr, i64, i64)> {
    if let ExprKind::Mod(x, m) = e.kind() {
        let m = m.as_const().filter(|&m| m > 0)?;
        if i.is_point() {
            return Some((x, m, i.lo));
        }
    }
    None
}

/// Solves `v = r1 (mod m1)`, `v = r2 (mod m2)`: `Ok(Some((r, lcm)))`, `Ok(None)` if
/// incompatible, `Err(())` on overflow.
pub(crate) fn crt(r1: i64, m1: i64, r2: i64, m2: i64) -> Result<Option<(i64, i64)>, ()> {
    let g = gcd(m1, m2).ok_or(())?;
    if (r2 - r1).rem_euclid(g) != 0 {
        return Ok(None);
    }
    let l = lcm(m1, m2).ok_or(())?;
    // Search the residues of m1 in the period; moduli here are tensor dimensions (small).
    if l / m1 > 1 << 20 {
        return Err(());
    }
    let mut v = r1;
    for _ in 0..(l / m1) {
        if v.rem_euclid(m2) == r2.rem_euclid(m2) {
            return Ok(Some((v.rem_euclid(l), l)));
        }
        v = v.checked_add(m1).ok_or(())?;
    }
    Ok(None)
}

/// Merges pairs of congruences on the same expression. Returns `None` if two are incompatible.
pub(crate) fn merge_congruences(
    ctx: &mut Ctx<'_>,
    constraints: Vec<(Expr, Interval)>,
) -> Option<Vec<(Expr, Interval)>> {
    let mut out: Vec<(Expr, Interval)> = Vec::with_capacity(constraints.len());
    'next: for (e, i) in constraints {
        if let Some((x, m, r)) = congruence(e, i) {
            for slot in out.iter_mut() {
                let Some((x2, m2, r2)) = congruence(slot.0, slot.1) else {
                    continue;
                };
                if x2 != x {
                    continue;
                }
                match crt(r, m, r2, m2) {
                    Ok(Some((rr, l))) => {
                        ctx.fire("constraint_mod_merge");
                        *slot = (x.modulo(Expr::constant(l)), Interval::point(rr));
                        continue 'next;
                    }
                    Ok(None) => {
                        ctx.fire("constraint_mod_merge");
                        return None;
                    }
                    Err(()) => {}
                }
            }
        }
        out.push((e, i));
    }
    Some(out)
}

/// Tightens variable bounds through a linear constraint over variables:
/// `a * v + rest in [lo, hi]` bounds `a * v` by `[lo - max(rest), hi - min(rest)]`.
/// Returns the tightened bounds to apply (empty intervals included: the caller reports them).
pub(crate) fn propagate(ctx: &mut Ctx<'_>, e: Expr, i: Interval) -> Vec<(Var, Interval)> {
    let mut out = Vec::new();
    let Some(lin) = e.linear() else { return out };
    if lin.terms.len() < 2 || lin.terms.iter().any(|t| t.0.as_var().is_none()) {
        return out;
    }
    let parts: Vec<Interval> = lin
        .terms
        .iter()
        .map(|&(a, k)| ctx.range(a).mul(Interval::point(k)))
        .collect();
    for (idx, &(atom, k)) in lin.terms.iter().enumerate() {
        let rest = parts
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != idx)
            .fold(Interval::point(lin.constant), |acc, (_, p)| acc.add(*p));
        let lo = (i.lo as i128 - rest.hi as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        let hi = (i.hi as i128 - rest.lo as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        let Some(vi) = divide_interval(Interval::new(lo, hi), k) else {
            continue;
        };
        let v = atom.as_var().expect("checked above");
        let old = ctx.var_bounds(v);
        let new = old.intersect(vi);
        if new != old {
            ctx.fire("constraint_propagation");
            out.push((v, if new.is_empty() { Interval::EMPTY } else { new }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::crt;

    #[test]
    fn chinese_remainder() {
        assert_eq!(crt(1, 4, 3, 6), Ok(Some((9, 12))));
        assert_eq!(crt(1, 4, 2, 6), Ok(None));
        assert_eq!(crt(0, 2, 1, 3), Ok(Some((4, 6))));
        assert_eq!(crt(2, 5, 2, 5), Ok(Some((2, 5))));
    }
}
