//! Operations that build one map from others: composition, removal of unused variables,
//! rescaling of symbols by congruence constraints, and turning symbols into dimensions.

use crate::arith::{ceil_div, floor_div};
use crate::{Expr, ExprKind, IndexingMap, Interval, MapError, MapForm, Var, VarKind};

impl IndexingMap {
    /// `self`, then `next`: a point `d` maps to `next(self(d))`.
    ///
    /// The result has `self`'s dimensions, `self`'s range variables followed by `next`'s (and
    /// likewise runtime variables), `next`'s results with `self`'s results substituted, both
    /// maps' constraints, and the constraints that `self`'s results lie in `next`'s dimension
    /// bounds. It is not simplified.
    pub fn compose(&self, next: &IndexingMap) -> Result<IndexingMap, MapError> {
        match (self.form, next.form) {
            (MapForm::Undefined, _) | (_, MapForm::Undefined) => {
                return Ok(IndexingMap::undefined())
            }
            (MapForm::KnownEmpty, _) | (_, MapForm::KnownEmpty) => {
                return Ok(IndexingMap::known_empty())
            }
            _ => {}
        }
        if self.results.len() != next.dims.len() {
            return Err(MapError::ArityMismatch {
                results: self.results.len(),
                dims: next.dims.len(),
            });
        }
        let (nr, nt) = (self.ranges.len() as u32, self.runtimes.len() as u32);
        let mut rename = |v: Var| -> Option<Expr> {
            Some(match v.kind {
                VarKind::Dim => self.results[v.index as usize],
                VarKind::Range => Expr::range(v.index + nr),
                VarKind::Runtime => Expr::runtime(v.index + nt),
            })
        };
        let results = next
            .results
            .iter()
            .map(|e| e.substitute(&mut rename))
            .collect();
        let mut constraints: Vec<(Expr, Interval)> = self
            .constraints
            .iter()
            .map(|c| (c.expr, c.interval))
            .collect();
        constraints.extend(
            next.constraints
                .iter()
                .map(|c| (c.expr.substitute(&mut rename), c.interval)),
        );
        constraints.extend(self.results.iter().zip(&next.dims).map(|(&e, &b)| (e, b)));
        IndexingMap::new(
            self.dims.clone(),
            self.ranges.iter().chain(&next.ranges).copied().collect(),
            self.runtimes
                .iter()
                .chain(&next.runtimes)
                .copied()
                .collect(),
            results,
            constraints,
        )
    }

    fn uses(&self, v: Var) -> bool {
        let exprs = self
            .results
            .iter()
            .chain(self.constraints.iter().map(|c| &c.expr));
        exprs
            .filter(|e| e.may_use(v))
            .any(|e| e.variables().contains(&v))
    }

    /// Removes the variables of `kind` for which `keep` is false, renumbering the rest.
    fn retain_vars(&mut self, kind: VarKind, keep: &[bool]) {
        let mut new_index = Vec::with_capacity(keep.len());
        let mut next = 0u32;
        for &k in keep {
            new_index.push(next);
            next += u32::from(k);
        }
        let mut rename = |v: Var| -> Option<Expr> {
            (v.kind == kind).then(|| {
                Expr::var(Var {
                    kind,
                    index: new_index[v.index as usize],
                })
            })
        };
        self.results = self
            .results
            .iter()
            .map(|e| e.substitute(&mut rename))
            .collect();
        let constraints: Vec<(Expr, Interval)> = self
            .constraints
            .iter()
            .map(|c| (c.expr.substitute(&mut rename), c.interval))
            .collect();
        let bounds = self.vars_of_mut(kind);
        let mut i = 0;
        bounds.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        self.replace_constraints(constraints);
    }

    fn remove_unused(&mut self, kind: VarKind) -> Vec<u32> {
        if self.form != MapForm::Normal {
            return Vec::new();
        }
        let n = self.vars_of(kind).len() as u32;
        let keep: Vec<bool> = (0..n).map(|i| self.uses(Var { kind, index: i })).collect();
        let removed: Vec<u32> = (0..n).filter(|&i| !keep[i as usize]).collect();
        if !removed.is_empty() {
            self.retain_vars(kind, &keep);
        }
        removed
    }

    /// Removes range and runtime variables used by no result and no constraint; returns the
    /// removed (range indices, runtime indices), in the old numbering.
    pub fn remove_unused_symbols(&mut self) -> (Vec<u32>, Vec<u32>) {
        (
            self.remove_unused(VarKind::Range),
            self.remove_unused(VarKind::Runtime),
        )
    }

    /// Removes dimensions used by no result and no constraint; returns their old indices.
    pub fn remove_unused_dims(&mut self) -> Vec<u32> {
        self.remove_unused(VarKind::Dim)
    }

    /// Rewrites every range variable `s` that has a constraint `s mod c in [k, k]` as
    /// `s' * c + k` with `s'` in the matching smaller range, dropping that constraint.
    /// Returns whether anything changed. The map is not simplified afterwards.
    pub fn rescale_symbols(&mut self) -> bool {
        if self.form != MapForm::Normal {
            return false;
        }
        let mut changed = false;
        loop {
            let found = self.constraints.iter().enumerate().find_map(|(i, c)| {
                let ExprKind::Mod(s, m) = c.expr.kind() else {
                    return None;
                };
                let v = s.as_var().filter(|v| v.kind == VarKind::Range)?;
                let m = m.as_const().filter(|&m| m > 0)?;
                c.interval.is_point().then_some((i, v, m, c.interval.lo))
            });
            let Some((i, v, c, k)) = found else { break };
            let b = self.ranges[v.index as usize];
            let lo = b.lo.checked_sub(k).and_then(|x| ceil_div(x, c));
            let hi = b.hi.checked_sub(k).and_then(|x| floor_div(x, c));
            let (Some(lo), Some(hi)) = (lo, hi) else {
                break;
            };
            self.constraints.remove(i);
            let s = Expr::var(v);
            let replacement = s.mul(Expr::constant(c)).add(Expr::constant(k));
            let mut sub = |w: Var| (w == v).then_some(replacement);
            self.results = self
                .results
                .iter()
                .map(|e| e.substitute(&mut sub))
                .collect();
            let constraints: Vec<(Expr, Interval)> = self
                .constraints
                .iter()
                .map(|c| (c.expr.substitute(&mut sub), c.interval))
                .collect();
            self.ranges[v.index as usize] = Interval::new(lo, hi);
            self.replace_constraints(constraints);
            self.mark_empty_if_some_bound_is_empty();
            changed = true;
            if self.form != MapForm::Normal {
                break;
            }
        }
        changed
    }

    /// The same map with range variables, then runtime variables, appended to the
    /// dimensions: `(d0)[s0]{rt0}` becomes `(d0, d1, d2)` with `d1 = s0`, `d2 = rt0`.
    pub fn convert_symbols_to_dims(&self) -> IndexingMap {
        if self.form != MapForm::Normal {
            return self.clone();
        }
        let nd = self.dims.len() as u32;
        let nr = self.ranges.len() as u32;
        let mut rename = |v: Var| -> Option<Expr> {
            match v.kind {
                VarKind::Dim => None,
                VarKind::Range => Some(Expr::dim(nd + v.index)),
                VarKind::Runtime => Some(Expr::dim(nd + nr + v.index)),
            }
        };
        let mut out = IndexingMap {
            form: MapForm::Normal,
            dims: self
                .dims
                .iter()
                .chain(&self.ranges)
                .chain(&self.runtimes)
                .copied()
                .collect(),
            ranges: Vec::new(),
            runtimes: Vec::new(),
            results: self
                .results
                .iter()
                .map(|e| e.substitute(&mut rename))
                .collect(),
            constraints: Vec::new(),
        };
        out.replace_constraints(
            self.constraints
                .iter()
                .map(|c| (c.expr.substitute(&mut rename), c.interval))
                .collect(),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::{Expr, IndexingMap, Interval};

    fn iv(a: i64, b: i64) -> Interval {
        Interval::new(a, b)
    }

    #[test]
    fn compose_substitutes_and_constrains() {
        let (d0, d1, s0) = (Expr::dim(0), Expr::dim(1), Expr::range(0));
        // (d0) -> (d0 floordiv 4, d0 mod 4), d0 in [0, 15]
        let a = IndexingMap::new(
            vec![iv(0, 15)],
            vec![],
            vec![],
            vec![
                d0.floor_div(Expr::constant(4)),
                d0.modulo(Expr::constant(4)),
            ],
            vec![],
        )
        .unwrap();
        // (d0, d1)[s0] -> (d0 * 4 + d1 + s0), d0 in [0, 3], d1 in [0, 3], s0 in [0, 1]
        let b = IndexingMap::new(
            vec![iv(0, 3), iv(0, 3)],
            vec![iv(0, 1)],
            vec![],
            vec![d0 * 4 + d1 + s0],
            vec![],
        )
        .unwrap();
        let mut c = a.compose(&b).unwrap();
        c.simplify();
        assert_eq!(
            c.to_string(),
            "(d0)[s0] -> (d0 + s0), domain: d0 in [0, 15], s0 in [0, 1]"
        );
        assert!(a.compose(&a).is_err());
    }

    #[test]
    fn range_of_uses_bounds_and_constraints() {
        let m: IndexingMap =
            "(d0, d1) -> (d0), domain: d0 in [0, 9], d1 in [0, 9], d0 + d1 in [0, 5]"
                .parse()
                .unwrap();
        let (d0, d1) = (Expr::dim(0), Expr::dim(1));
        assert_eq!(m.range_of(d0 * 2 - 1), Interval::new(-1, 17));
        assert_eq!(m.range_of(d0 + d1), Interval::new(0, 5));
        assert_eq!(
            m.range_of((d0 + d1).floor_div(Expr::constant(3))),
            Interval::new(0, 1)
        );
        assert_eq!(IndexingMap::known_empty().range_of(d0), Interval::EMPTY);
    }

    #[test]
    fn removes_unused_symbols_and_renumbers() {
        let (d0, s1) = (Expr::dim(0), Expr::range(1));
        let mut m = IndexingMap::new(
            vec![iv(0, 3)],
            vec![iv(0, 1), iv(0, 2)],
            vec![iv(0, 5)],
            vec![d0 + s1],
            vec![],
        )
        .unwrap();
        assert_eq!(m.remove_unused_symbols(), (vec![0], vec![0]));
        assert_eq!(
            m.to_string(),
            "(d0)[s0] -> (d0 + s0), domain: d0 in [0, 3], s0 in [0, 2]"
        );
    }

    #[test]
    fn rescales_symbols_with_congruences() {
        let (d0, s0) = (Expr::dim(0), Expr::range(0));
        let mut m = IndexingMap::new(
            vec![iv(0, 3)],
            vec![iv(0, 31)],
            vec![],
            vec![d0 + s0],
            vec![(s0.modulo(Expr::constant(4)), iv(1, 1))],
        )
        .unwrap();
        assert!(m.rescale_symbols());
        m.simplify();
        assert_eq!(
            m.to_string(),
            "(d0)[s0] -> (d0 + s0 * 4 + 1), domain: d0 in [0, 3], s0 in [0, 7]"
        );
    }

    #[test]
    fn symbols_become_dimensions() {
        let (d0, s0, rt0) = (Expr::dim(0), Expr::range(0), Expr::runtime(0));
        let m = IndexingMap::new(
            vec![iv(0, 3)],
            vec![iv(0, 1)],
            vec![iv(0, 9)],
            vec![d0 + s0 + rt0],
            vec![],
        )
        .unwrap();
        assert_eq!(
            m.convert_symbols_to_dims().to_string(),
            "(d0, d1, d2) -> (d0 + d1 + d2), domain: d0 in [0, 3], d1 in [0, 1], d2 in [0, 9]"
        );
    }
}
