//! Constraints on tile sizes: a disjunction of conjunctions of `expr in [lo, hi]`, where the
//! expressions range over the tile-size parameters `d0, d1, ...`.
//!
//! Text form (XLA's): conjunctions joined by ` || `, the constraints of one conjunction by
//! ` && ` (which binds tighter): `d0 in [1, 1] && d1 in [8, 8] || d1 in [1, 1]`. The constraint
//! that always holds prints as nothing (callers omit the line); the one that never holds prints
//! as `unsatisfiable`.

use std::fmt;

use affine::enumerate::{box_size, for_each_in_box};
use affine::parse::{parse_expr, Names};
use affine::simplify::simplify_expr;
use affine::{Expr, IndexingMap, Interval, Point};

use crate::TilingError;

/// Most tile-size points [`ConstraintExpr::satisfiability`] enumerates.
pub const ENUMERATION_LIMIT: u128 = 1 << 16;

/// Most conjunctions a constraint expression keeps (see [`ConstraintExpr::and`]).
pub const MAX_DISJUNCTS: usize = 256;

/// Most tile-size points [`ConstraintExpr::simplify`] enumerates to drop redundant parts.
pub const MINIMIZE_LIMIT: u128 = 4096;

/// One constraint: `expr in [interval.lo, interval.hi]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Constraint {
    /// An expression over the tile sizes.
    pub expr: Expr,
    /// The values it must take.
    pub interval: Interval,
}

impl Constraint {
    /// `expr in [lo, hi]`.
    pub fn new(expr: Expr, lo: i64, hi: i64) -> Constraint {
        Constraint {
            expr,
            interval: Interval::new(lo, hi),
        }
    }

    /// Whether the constraint holds for the tile sizes `sizes`.
    pub fn holds(&self, sizes: &[i64]) -> Result<bool, TilingError> {
        let p = Point {
            dims: sizes,
            ranges: &[],
            runtimes: &[],
        };
        Ok(self.interval.contains(self.expr.eval(&p)?))
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in {}", self.expr, self.interval)
    }
}

/// Whether some tile sizes satisfy a constraint expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Satisfiability {
    /// Every tile size in range satisfies it.
    Always,
    /// No tile size does.
    Never,
    /// It depends on the tile sizes.
    DependsOnSizes,
}

impl fmt::Display for Satisfiability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Satisfiability::Always => "always",
            Satisfiability::Never => "never",
            Satisfiability::DependsOnSizes => "depends on the tile sizes",
        })
    }
}

/// A disjunction of conjunctions of [`Constraint`]s. No conjunction is false; one empty
/// conjunction is true.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConstraintExpr {
    disjuncts: Vec<Vec<Constraint>>,
}

impl Default for ConstraintExpr {
    fn default() -> Self {
        ConstraintExpr::always()
    }
}

impl ConstraintExpr {
    /// The constraint that always holds.
    pub fn always() -> ConstraintExpr {
        ConstraintExpr {
            disjuncts: vec![Vec::new()],
        }
    }

    /// The constraint that never holds.
    pub fn never() -> ConstraintExpr {
        ConstraintExpr {
            disjuncts: Vec::new(),
        }
    }

    /// One constraint.
    pub fn single(c: Constraint) -> ConstraintExpr {
        ConstraintExpr {
            disjuncts: vec![vec![c]],
        }
    }

    /// One conjunction.
    pub fn all_of(cs: Vec<Constraint>) -> ConstraintExpr {
        ConstraintExpr {
            disjuncts: vec![cs],
        }
    }

    /// The conjunctions (empty: never; one empty conjunction: always).
    pub fn disjuncts(&self) -> &[Vec<Constraint>] {
        &self.disjuncts
    }

    /// True for the constraint that always holds (in this form).
    pub fn is_always(&self) -> bool {
        self.disjuncts.iter().any(|c| c.is_empty())
    }

    /// True for the constraint that never holds (in this form).
    pub fn is_never(&self) -> bool {
        self.disjuncts.is_empty()
    }

    /// `self && other`, distributed into disjunctive form.
    /// Identical constraints and conjunctions are kept once; past [`MAX_DISJUNCTS`]
    /// conjunctions the rest are dropped (the result then admits fewer tile sizes, never
    /// more: tiles stay exact).
    pub fn and(&self, other: &ConstraintExpr) -> ConstraintExpr {
        if other.is_always() || self == other {
            return self.clone();
        }
        if self.is_always() {
            return other.clone();
        }
        let mut disjuncts: Vec<Vec<Constraint>> =
            Vec::with_capacity(self.disjuncts.len() * other.disjuncts.len());
        for a in &self.disjuncts {
            for b in &other.disjuncts {
                let mut conj = a.clone();
                for c in b {
                    if !conj.contains(c) {
                        conj.push(*c);
                    }
                }
                conj.sort_by(cmp_constraint);
                if disjuncts.len() < MAX_DISJUNCTS && !disjuncts.contains(&conj) {
                    disjuncts.push(conj);
                }
            }
        }
        ConstraintExpr { disjuncts }
    }

    /// `self || other`; past [`MAX_DISJUNCTS`] conjunctions the rest are dropped (fewer tile
    /// sizes admitted, never more).
    pub fn or(&self, other: &ConstraintExpr) -> ConstraintExpr {
        ConstraintExpr {
            disjuncts: self
                .disjuncts
                .iter()
                .chain(&other.disjuncts)
                .take(MAX_DISJUNCTS)
                .cloned()
                .collect(),
        }
    }

    /// Whether the tile sizes `sizes` satisfy the expression.
    pub fn holds(&self, sizes: &[i64]) -> Result<bool, TilingError> {
        for conj in &self.disjuncts {
            let mut all = true;
            for c in conj {
                if !c.holds(sizes)? {
                    all = false;
                    break;
                }
            }
            if all {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Simplifies over tile sizes `d_i in bounds[i]`: expressions simplified, constraints
    /// that always hold dropped, conjunctions holding a constraint that never holds dropped,
    /// constraints on one expression intersected, conjunctions implied by a weaker one
    /// dropped; deterministic order. When there are at most [`MINIMIZE_LIMIT`] tile sizes,
    /// constraints and conjunctions that admit no tile size the rest does not are dropped too
    /// (the expression then says the same only for sizes within `bounds`).
    pub fn simplify(&mut self, bounds: &[Interval]) {
        let space = IndexingMap::new(bounds.to_vec(), vec![], vec![], vec![], vec![]).ok();
        let mut out: Vec<Vec<Constraint>> = Vec::new();
        'conj: for conj in &self.disjuncts {
            let mut kept: Vec<Constraint> = Vec::new();
            for c in conj {
                let expr = simplify_expr(c.expr, bounds, &[], &[]);
                let range = space.as_ref().map_or(Interval::FULL, |m| m.range_of(expr));
                if c.interval.contains_interval(range) {
                    continue;
                }
                let interval = c.interval.intersect(range);
                if interval.is_empty() {
                    continue 'conj;
                }
                match kept.iter_mut().find(|k| k.expr == expr) {
                    Some(k) => {
                        k.interval = k.interval.intersect(interval);
                        if k.interval.is_empty() {
                            continue 'conj;
                        }
                    }
                    None => kept.push(Constraint { expr, interval }),
                }
            }
            if kept.is_empty() {
                *self = ConstraintExpr::always();
                return;
            }
            kept.sort_by(cmp_constraint);
            if !out.contains(&kept) {
                out.push(kept);
            }
        }
        // A conjunction whose constraints include all of another's is implied by it.
        let implied = |a: &Vec<Constraint>, b: &Vec<Constraint>| a.iter().all(|c| b.contains(c));
        let mut keep = vec![true; out.len()];
        for i in 0..out.len() {
            for j in 0..out.len() {
                if i != j && keep[j] && implied(&out[j], &out[i]) && out[j].len() < out[i].len() {
                    keep[i] = false;
                }
            }
        }
        let mut k = 0;
        out.retain(|_| {
            k += 1;
            keep[k - 1]
        });
        out.sort_by(|a, b| cmp_conj(a, b));
        self.disjuncts = out;
        if box_size(bounds) <= MINIMIZE_LIMIT {
            self.minimize(bounds);
        }
    }

    /// Drops, by enumerating the tile sizes in `bounds`, every constraint and conjunction
    /// whose removal admits no new tile size (greedily, in order): the same sizes are
    /// admitted, by a shorter expression.
    fn minimize(&mut self, bounds: &[Interval]) {
        let mut points: Vec<Vec<i64>> = Vec::new();
        for_each_in_box(bounds, |p| {
            points.push(p.to_vec());
            true
        });
        let conj_holds =
            |conj: &[Constraint], p: &[i64]| conj.iter().all(|c| c.holds(p).unwrap_or(false));
        let admitted = |e: &ConstraintExpr| -> Vec<bool> {
            points
                .iter()
                .map(|p| e.disjuncts.iter().any(|c| conj_holds(c, p)))
                .collect()
        };
        let target = admitted(self);
        let mut i = 0;
        while i < self.disjuncts.len() {
            let mut j = 0;
            while j < self.disjuncts[i].len() && self.disjuncts[i].len() > 1 {
                let mut trial = self.clone();
                trial.disjuncts[i].remove(j);
                if admitted(&trial) == target {
                    *self = trial;
                } else {
                    j += 1;
                }
            }
            i += 1;
        }
        let mut i = 0;
        while i < self.disjuncts.len() && self.disjuncts.len() > 1 {
            let mut trial = self.clone();
            trial.disjuncts.remove(i);
            if admitted(&trial) == target {
                *self = trial;
            } else {
                i += 1;
            }
        }
        if target.iter().all(|&t| t) {
            *self = ConstraintExpr::always();
        }
    }

    /// Whether tile sizes in `bounds` satisfy the expression: decided by the form when it is
    /// trivially true or false, else by enumerating every tile size when there are at most
    /// [`ENUMERATION_LIMIT`] of them, else [`Satisfiability::DependsOnSizes`].
    pub fn satisfiability(&self, bounds: &[Interval]) -> Satisfiability {
        if self.is_always() {
            return Satisfiability::Always;
        }
        if self.is_never() {
            return Satisfiability::Never;
        }
        if box_size(bounds) > ENUMERATION_LIMIT {
            return Satisfiability::DependsOnSizes;
        }
        let (mut yes, mut no) = (false, false);
        for_each_in_box(bounds, |sizes| {
            match self.holds(sizes) {
                Ok(true) => yes = true,
                _ => no = true,
            }
            !(yes && no)
        });
        match (yes, no) {
            (true, false) => Satisfiability::Always,
            (false, _) => Satisfiability::Never,
            (true, true) => Satisfiability::DependsOnSizes,
        }
    }

    /// Parses the text form (`unsatisfiable`, or conjunctions joined by `||`).
    pub fn parse(text: &str) -> Result<ConstraintExpr, String> {
        let text = text.trim();
        if text == "unsatisfiable" {
            return Ok(ConstraintExpr::never());
        }
        if text.is_empty() || text == "always satisfied" {
            return Ok(ConstraintExpr::always());
        }
        let names = Names::canonical();
        let mut disjuncts = Vec::new();
        for conj in text.split("||") {
            let mut cs = Vec::new();
            for c in conj.split("&&") {
                cs.push(parse_constraint(c.trim(), &names)?);
            }
            disjuncts.push(cs);
        }
        Ok(ConstraintExpr { disjuncts })
    }
}

fn cmp_constraint(x: &Constraint, y: &Constraint) -> std::cmp::Ordering {
    x.expr
        .canonical_cmp(y.expr)
        .then(x.interval.lo.cmp(&y.interval.lo))
        .then(x.interval.hi.cmp(&y.interval.hi))
}

fn cmp_conj(a: &[Constraint], b: &[Constraint]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = cmp_constraint(x, y);
        if o.is_ne() {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// `expr in [lo, hi]`.
fn parse_constraint(text: &str, names: &Names) -> Result<Constraint, String> {
    let at = text
        .rfind(" in ")
        .ok_or_else(|| format!("expected `expr in [lo, hi]`, got `{text}`"))?;
    let expr = parse_expr(&text[..at], names).map_err(|e| e.to_string())?;
    let iv = text[at + 4..].trim();
    let inner = iv
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| format!("expected `[lo, hi]`, got `{iv}`"))?;
    let (lo, hi) = inner
        .split_once(',')
        .ok_or_else(|| format!("expected `[lo, hi]`, got `{iv}`"))?;
    let num = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("bad bound `{}`", s.trim()))
    };
    Ok(Constraint::new(expr, num(lo)?, num(hi)?))
}

impl fmt::Display for ConstraintExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_never() {
            return f.write_str("unsatisfiable");
        }
        if self.is_always() {
            return Ok(());
        }
        for (i, conj) in self.disjuncts.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            for (j, c) in conj.iter().enumerate() {
                if j > 0 {
                    f.write_str(" && ")?;
                }
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, bounds: &[(i64, i64)], expect: &str) {
        let b: Vec<Interval> = bounds.iter().map(|&(l, h)| Interval::new(l, h)).collect();
        let mut c = ConstraintExpr::parse(text).unwrap();
        c.simplify(&b);
        assert_eq!(c.to_string(), expect, "{text}");
        assert_eq!(ConstraintExpr::parse(&c.to_string()).unwrap(), c);
    }

    #[test]
    fn simplifies_over_tile_size_bounds() {
        check(
            "d0 in [1, 1] || d1 in [1, 1]",
            &[(1, 4), (1, 8)],
            "d0 in [1, 1] || d1 in [1, 1]",
        );
        // d0 in [1, 4] always holds there: the whole expression is true.
        check("d0 in [1, 4] || d1 in [1, 1]", &[(1, 4), (1, 8)], "");
        // A conjunction with a false constraint disappears.
        check(
            "d0 in [9, 9] && d1 in [1, 1] || d1 in [8, 8]",
            &[(1, 4), (1, 8)],
            "d1 in [8, 8]",
        );
        check("d0 in [9, 9]", &[(1, 4)], "unsatisfiable");
        // A conjunction implied by a weaker one disappears.
        check(
            "d0 in [1, 1] && d1 in [2, 2] || d0 in [1, 1]",
            &[(1, 4), (1, 8)],
            "d0 in [1, 1]",
        );
    }

    #[test]
    fn satisfiability_by_form_and_enumeration() {
        let b = [Interval::new(1, 8)];
        let c = ConstraintExpr::parse("8 mod d0 in [0, 0]").unwrap();
        assert_eq!(c.satisfiability(&b), Satisfiability::DependsOnSizes);
        assert!(c.holds(&[4]).unwrap());
        assert!(!c.holds(&[3]).unwrap());
        let c = ConstraintExpr::parse("d0 mod 9 in [1, 1]").unwrap();
        assert_eq!(
            c.satisfiability(&[Interval::new(2, 8)]),
            Satisfiability::Never
        );
        assert_eq!(
            ConstraintExpr::always().satisfiability(&b),
            Satisfiability::Always
        );
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn conjunctions_are_capped() {
        // 2^12 conjunctions before the cap: at most MAX_DISJUNCTS remain, each a conjunction
        // of the original factors' choices (so every size they admit was admitted before).
        let mut e = ConstraintExpr::always();
        for i in 0..12 {
            let d = Expr::dim(i);
            let f = ConstraintExpr::single(Constraint::new(d, 1, 1))
                .or(&ConstraintExpr::single(Constraint::new(d, 2, 2)));
            e = e.and(&f);
        }
        assert_eq!(e.disjuncts().len(), MAX_DISJUNCTS);
        assert!(e.disjuncts().iter().all(|c| c.len() == 12));
    }
}
