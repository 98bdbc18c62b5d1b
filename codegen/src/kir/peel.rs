//! Peeling guarded points out of innermost loops, so the loop's main range runs branch-free
//! code the C compiler vectorizes.
//!
//! A concatenate's (or pad's, or a select-by-range's) piece becomes an `if` on an index
//! condition inside the loop that reads it. When that condition bounds the loop variable
//! alone (`k in [a, b]`), the emitters' unswitching already splits the loop. In a
//! reduction the row index is often a sum of the lane variable and outer chunk variables
//! (`k + 1472 s2 + 32 s3 in [0, 0]`: the one-element first piece of a 65537-element row),
//! and the `if` stays in every iteration; the load in its `else` arm cannot be speculated,
//! so the loop runs scalar.
//!
//! Such a condition `c k + r in [a, b]`, with `r` a sum over outer variables whose
//! coefficients share the divisor `g`, can hold for `k` in `[lo, hi]` only when `r` lies in
//! `[a - c hi, b - c lo]`; when that interval holds one value `p` of `r`'s lattice (`r`'s
//! constant plus multiples of `g`, within `r`'s bounds), the condition is exactly
//! `r == p and k in [(a - p) / c, (b - p) / c]`. The `if` then becomes an `if r == p`
//! around the loop: its `else` copy is the whole loop without the piece (straight-line),
//! its `then` copy is the loop split at the bounds on `k` (the point, and the rest of the
//! range, both straight-line). Loop order and the statements run per iteration are
//! unchanged, so results are bit-identical. Conditions that hold at several values of `r`
//! (a piece in the middle of the chunks) stay as they are.

use affine::arith::{ceil_div, floor_div, gcd};
use affine::linear::Linear;
use affine::{Expr, Var, VarKind};

use super::kernel::{LoopKind, Stmt};
use super::value::Guard;

/// Most loops one innermost loop may become.
const MAX_LOOPS: usize = 8;

/// Peels every innermost serial or vectorized loop of `body` whose top-level `if` guards a
/// single point of its outer variables (see the module docs). `outer` bounds the variables
/// bound outside `body` (the grid's block variable).
pub fn peel_guarded_points(body: Vec<Stmt>, outer: &[(Var, i64, i64)]) -> Vec<Stmt> {
    let mut scope = outer.to_vec();
    walk(body, &mut scope)
}

fn walk(body: Vec<Stmt>, scope: &mut Vec<(Var, i64, i64)>) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(body.len());
    for st in body {
        match st {
            Stmt::Loop {
                kind,
                var,
                lo,
                hi,
                body,
            } if kind != LoopKind::Threads => {
                if body.iter().all(plain) {
                    let mut budget = MAX_LOOPS;
                    out.extend(peel(kind, var, (lo, hi), body, scope, &mut budget));
                } else {
                    scope.push((var, lo, hi));
                    let body = walk(body, scope);
                    scope.pop();
                    out.push(Stmt::Loop {
                        kind,
                        var,
                        lo,
                        hi,
                        body,
                    });
                }
            }
            Stmt::If {
                guard,
                body,
                else_body,
            } => out.push(Stmt::If {
                guard,
                body: walk(body, scope),
                else_body: walk(else_body, scope),
            }),
            other => out.push(other),
        }
    }
    out
}

/// Straight-line code: no loop, barrier or shuffle anywhere inside.
fn plain(st: &Stmt) -> bool {
    match st {
        Stmt::Loop { .. } | Stmt::Barrier | Stmt::Shuffle { .. } => false,
        Stmt::If {
            body, else_body, ..
        } => body.iter().all(plain) && else_body.iter().all(plain),
        Stmt::Atomic { body, .. } => body.iter().all(plain),
        _ => true,
    }
}

/// `for var in range { body }` (an innermost loop), peeled at its first top-level `if`
/// that [`split_guard`] splits, and each resulting loop again, within `budget` loops.
fn peel(
    kind: LoopKind,
    var: Var,
    (lo, hi): (i64, i64),
    body: Vec<Stmt>,
    scope: &[(Var, i64, i64)],
    budget: &mut usize,
) -> Vec<Stmt> {
    let whole = |body: Vec<Stmt>| Stmt::Loop {
        kind,
        var,
        lo,
        hi,
        body,
    };
    // An `if r == p` around the loop and a split inside takes up to four loops.
    if *budget < 4 {
        return vec![whole(body)];
    }
    let found = body.iter().enumerate().find_map(|(i, st)| match st {
        Stmt::If { guard, .. } => split_guard(guard, var, (lo, hi), scope).map(|s| (i, s)),
        _ => None,
    });
    let Some((at, split)) = found else {
        return vec![whole(body)];
    };
    let mut pre = body;
    let mut post = pre.split_off(at);
    let Stmt::If {
        body: then_body,
        else_body,
        ..
    } = post.remove(0)
    else {
        unreachable!("find_map found an if");
    };
    let with = |mid: Vec<Stmt>| {
        let mut b = pre.clone();
        b.extend(mid);
        b.extend(post.iter().cloned());
        b
    };
    let (a, b) = (split.lo.max(lo), split.hi.min(hi));
    if a > b {
        // The guard never holds in this loop.
        *budget -= 1;
        return peel(kind, var, (lo, hi), with(else_body), scope, budget);
    }
    let rest = split.rest;
    *budget -= 1 + usize::from(!rest.is_true());
    let mut inside = Vec::new();
    for (range, part) in [
        ((lo, a - 1), &else_body),
        ((a, b), &then_body),
        ((b + 1, hi), &else_body),
    ] {
        if range.0 <= range.1 {
            inside.extend(peel(kind, var, range, with(part.clone()), scope, budget));
        }
    }
    if rest.is_true() {
        return inside;
    }
    vec![Stmt::If {
        guard: rest,
        body: inside,
        else_body: peel(kind, var, (lo, hi), with(else_body), scope, budget),
    }]
}

/// A guard split as `rest and var in [lo, hi]`, `rest` not depending on `var`.
#[derive(Debug, PartialEq)]
struct Split {
    lo: i64,
    hi: i64,
    rest: Guard,
}

/// `guard` as [`Split`] for `var` over `range` (the other variables bounded by `scope`
/// where it names them): each condition naming `var` must hold at a single point of its
/// other terms (see the module docs). `None` when `guard` does not name `var`, or a
/// condition naming it holds at several points, names it inside a non-linear term, or
/// names a runtime variable (which may be bound inside the loop).
fn split_guard(
    guard: &Guard,
    var: Var,
    range: (i64, i64),
    scope: &[(Var, i64, i64)],
) -> Option<Split> {
    let mut split = Split {
        lo: range.0,
        hi: range.1,
        rest: Guard::default(),
    };
    let mut names_var = false;
    for &(e, a, b) in &guard.conds {
        let vars = e.variables();
        if !vars.contains(&var) {
            split.rest.conds.push((e, a, b));
            continue;
        }
        if vars.iter().any(|v| v.kind == VarKind::Runtime) {
            return None;
        }
        names_var = true;
        let (klo, khi, point) = single_point(e, (a, b), var, range, scope)?;
        split.lo = split.lo.max(klo);
        split.hi = split.hi.min(khi);
        if let Some(c) = point {
            split.rest.conds.push(c);
        }
    }
    names_var.then_some(split)
}

/// One guard condition: `lo <= e <= hi`.
type Cond = (Expr, i64, i64);

/// For `e in [a, b]` with `e = c var + r`: `(klo, khi, r == p)` such that the condition
/// holds exactly when `var in [klo, khi]` and `r == p` (no `r` condition when `r` is a
/// constant; `klo > khi` when it never holds for `var` in `range`).
fn single_point(
    e: Expr,
    (a, b): (i64, i64),
    var: Var,
    (lo, hi): (i64, i64),
    scope: &[(Var, i64, i64)],
) -> Option<(i64, i64, Option<Cond>)> {
    let lin = Linear::of(e)?;
    let v = Expr::var(var);
    let c = lin.coefficient(v);
    if c == 0 {
        return None;
    }
    let mut r = Linear {
        constant: lin.constant,
        ..Linear::default()
    };
    let (mut g, mut rlo, mut rhi) = (0i64, lin.constant as i128, lin.constant as i128);
    for &(atom, k) in lin.terms.iter().filter(|t| t.0 != v) {
        if atom.variables().contains(&var) {
            return None;
        }
        r.terms.push((atom, k));
        g = gcd(g, k)?;
        match atom
            .as_var()
            .and_then(|x| scope.iter().rev().find(|s| s.0 == x))
        {
            Some(&(_, xlo, xhi)) => {
                let (p, q) = (k as i128 * xlo as i128, k as i128 * xhi as i128);
                rlo += p.min(q);
                rhi += p.max(q);
            }
            None => (rlo, rhi) = (i128::MIN / 4, i128::MAX / 4),
        }
    }
    // `c var` lies in [c lo, c hi] (or the reverse for c < 0); `r = e - c var`.
    let (cl, ch) = {
        let (p, q) = (c as i128 * lo as i128, c as i128 * hi as i128);
        (p.min(q), p.max(q))
    };
    let want_lo = (a as i128 - ch).max(rlo);
    let want_hi = (b as i128 - cl).min(rhi);
    let never = Some((1, 0, None));
    let p: i128 = if g == 0 {
        let p = lin.constant as i128;
        if p < want_lo || p > want_hi {
            return never;
        }
        p
    } else {
        // The first value of `constant + g Z` at or above `want_lo`.
        let (g, k0) = (g as i128, lin.constant as i128);
        let p = k0 + (want_lo - k0).div_euclid(g) * g;
        let p = if p < want_lo { p + g } else { p };
        if p > want_hi {
            return never;
        }
        if p + g <= want_hi {
            return None;
        }
        p
    };
    let p = i64::try_from(p).ok()?;
    // c var in [a - p, b - p].
    let (x, y) = (a.checked_sub(p)?, b.checked_sub(p)?);
    let (klo, khi) = if c > 0 {
        (ceil_div(x, c)?, floor_div(y, c)?)
    } else {
        (ceil_div(y, c)?, floor_div(x, c)?)
    };
    let cond = (!r.terms.is_empty()).then(|| {
        let p_rest = p - r.constant;
        r.constant = 0;
        (r.to_expr(), p_rest, p_rest)
    });
    Some((klo, khi, cond))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kir::{Const, ScalarType, Value};

    fn s(i: u32) -> Var {
        Var::range(i)
    }

    fn e(terms: &[(Var, i64)], c: i64) -> Expr {
        terms.iter().fold(Expr::constant(c), |acc, &(v, k)| {
            acc + Expr::var(v) * Expr::constant(k)
        })
    }

    #[test]
    fn a_point_of_the_chunk_lattice_splits() {
        // k + 1472 s2 + 32 s3 in [0, 0], k in [0, 31], s2 in [0, 43], s3 in [0, 45].
        let (k, s2, s3) = (s(1), s(2), s(3));
        let scope = [(s2, 0, 43), (s3, 0, 45)];
        let g = Guard {
            conds: vec![(e(&[(k, 1), (s2, 1472), (s3, 32)], 0), 0, 0)],
        };
        let got = split_guard(&g, k, (0, 31), &scope).expect("splits");
        assert_eq!((got.lo, got.hi), (0, 0));
        assert_eq!(got.rest.conds.len(), 1);
        let (r, p, q) = got.rest.conds[0];
        assert_eq!((p, q), (0, 0));
        assert!(!r.variables().contains(&k));
    }

    #[test]
    fn a_short_suffix_splits_and_a_middle_piece_does_not() {
        let (k, c) = (s(1), s(2));
        let scope = [(c, 0, 9)];
        // Elements 317..=319 of 320 = 32 c + k: the last chunk's last three lanes.
        let g = Guard {
            conds: vec![(e(&[(k, 1), (c, 32)], 0), 317, 319)],
        };
        let got = split_guard(&g, k, (0, 31), &scope).expect("splits");
        assert_eq!((got.lo, got.hi), (29, 31));
        assert_eq!(got.rest.conds[0].1, 288);
        // Elements 40..=100 span several chunks: left alone.
        let g = Guard {
            conds: vec![(e(&[(k, 1), (c, 32)], 0), 40, 100)],
        };
        assert_eq!(split_guard(&g, k, (0, 31), &scope), None);
    }

    #[test]
    fn unreachable_points_never_hold() {
        let (k, c) = (s(1), s(2));
        // 32 c + k + 5 in [0, 3]: below the smallest value 5.
        let g = Guard {
            conds: vec![(e(&[(k, 1), (c, 32)], 5), 0, 3)],
        };
        let got = split_guard(&g, k, (0, 31), &[(c, 0, 9)]).expect("decides");
        assert!(got.lo > got.hi);
    }

    #[test]
    fn the_loop_becomes_a_branch_free_loop_and_a_split_one() {
        let (k, c) = (s(1), s(2));
        let store = |x: f64| Stmt::LocalStore {
            local: 0,
            offset: Expr::var(k),
            value: Value::Const(ScalarType::F32, Const::Float(x)),
        };
        let body = vec![Stmt::Loop {
            kind: LoopKind::Serial,
            var: c,
            lo: 0,
            hi: 9,
            body: vec![Stmt::serial_loop(
                k,
                0,
                31,
                vec![Stmt::If {
                    guard: Guard {
                        conds: vec![(e(&[(k, 1), (c, 32)], 0), 0, 0)],
                    },
                    body: vec![store(1.0)],
                    else_body: vec![store(2.0)],
                }],
            )],
        }];
        let out = peel_guarded_points(body, &[]);
        let Stmt::Loop { body, .. } = &out[0] else {
            panic!("outer loop kept");
        };
        let [Stmt::If {
            body: then_loops,
            else_body: else_loops,
            ..
        }] = body.as_slice()
        else {
            panic!("one if around the inner loops: {body:?}");
        };
        let bounds = |ls: &[Stmt]| -> Vec<(i64, i64, bool)> {
            ls.iter()
                .map(|l| match l {
                    Stmt::Loop { lo, hi, body, .. } => (
                        *lo,
                        *hi,
                        body.iter().any(|st| matches!(st, Stmt::If { .. })),
                    ),
                    _ => panic!("a loop"),
                })
                .collect()
        };
        assert_eq!(bounds(then_loops), vec![(0, 0, false), (1, 31, false)]);
        assert_eq!(bounds(else_loops), vec![(0, 31, false)]);
    }
}
