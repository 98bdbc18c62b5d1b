//! Rules on sums: the canonical form, and recombination of quotient/remainder pairs
//! (`(x floordiv c) * c + x mod c` is `x`, and relatives).

use super::context::Ctx;
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
                if coef % c != 0 {
                    continue;
                }
                let k = coef / c;
                // k * c * (x floordiv c) + k * (x mod c)  ==>  k * x. The remainder is looked up
                // in its simplified form (coefficients reduced modulo c), which is how it
                // appears in a simplified sum.
                let m = ctx.simplify(x.modulo(cd));
                if lin.coefficient(m) == k && ctx.fire("recombine_div_mod") {
                    return replace(lin, &[atom, m], &[(x, k)]);
                }
                // j * x - j * c * (x floordiv c)  ==>  j * (x mod c), here with j = -k.
                if contains_scaled(lin, x, -k) == Some(true) && ctx.fire("recombine_sub_to_mod") {
                    return replace(lin, &[atom], &[(x, k), (m, -k)]);
                }
            }
            ExprKind::Mod(inner, bd) => {
                // Atoms `(x floordiv a) mod b` with coefficient k * a.
                let (ExprKind::FloorDiv(x, ad), Some(b)) = (inner.kind(), const_of(bd)) else {
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
