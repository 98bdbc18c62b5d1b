//! Indexing maps: `(d...)[s...]{rt...} -> (results), domain: ...`.
//!
//! A map sends a point of its domain (dimension, range and runtime variables, each in an
//! interval, plus constraints `expr in [lo, hi]`) to a tuple of result indices. Two special
//! values exist: KNOWN EMPTY (the domain has no point) and UNDEFINED (the analysis could not
//! describe the access; nothing may be concluded from it).

use thiserror::Error;

use crate::{EvalError, Expr, Interval, Point, Var, VarKind};

/// One domain constraint: `expr in [interval.lo, interval.hi]`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Constraint {
    /// The constrained expression.
    pub expr: Expr,
    /// The values it may take.
    pub interval: Interval,
}

/// Whether a map is an ordinary map or one of the two special values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum MapForm {
    /// An ordinary map with a domain and results.
    Normal,
    /// A map whose domain is provably empty.
    KnownEmpty,
    /// A map the analysis could not describe.
    Undefined,
}

/// Errors of map construction and point queries.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum MapError {
    /// An expression refers to a variable the map does not declare.
    #[error("variable {0} is not declared by the map")]
    UndeclaredVariable(Var),
    /// Composition of maps whose arities do not fit.
    #[error(
        "cannot compose: the first map has {results} results but the second has {dims} dimensions"
    )]
    ArityMismatch {
        /// Results of the first map.
        results: usize,
        /// Dimensions of the second map.
        dims: usize,
    },
    /// The point has the wrong number of coordinates.
    #[error("point has {got} {kind} values, the map has {want}")]
    PointArity {
        /// Which kind of variable.
        kind: &'static str,
        /// Values given.
        got: usize,
        /// Variables declared.
        want: usize,
    },
    /// The operation is meaningless on KNOWN EMPTY or UNDEFINED.
    #[error("the map is {0}")]
    Special(&'static str),
    /// Evaluating an expression failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
}

/// An indexing map. See the module documentation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct IndexingMap {
    pub(crate) form: MapForm,
    pub(crate) dims: Vec<Interval>,
    pub(crate) ranges: Vec<Interval>,
    pub(crate) runtimes: Vec<Interval>,
    pub(crate) results: Vec<Expr>,
    /// Sorted by [`Expr::canonical_cmp`] of the expression; one constraint per expression.
    pub(crate) constraints: Vec<Constraint>,
}

impl IndexingMap {
    /// Builds a map. Constraints on bare variables tighten their bounds; an empty bound or
    /// constraint interval makes the map KNOWN EMPTY. Fails if an expression uses a variable
    /// the map does not declare.
    pub fn new(
        dims: Vec<Interval>,
        ranges: Vec<Interval>,
        runtimes: Vec<Interval>,
        results: Vec<Expr>,
        constraints: Vec<(Expr, Interval)>,
    ) -> Result<IndexingMap, MapError> {
        let mut map = IndexingMap {
            form: MapForm::Normal,
            dims,
            ranges,
            runtimes,
            results,
            constraints: Vec::new(),
        };
        for e in map.results.iter().chain(constraints.iter().map(|c| &c.0)) {
            map.check_declared(*e)?;
        }
        for (expr, interval) in constraints {
            map.add_constraint(expr, interval);
        }
        map.mark_empty_if_some_bound_is_empty();
        Ok(map)
    }

    /// The identity map on a box of the given sizes: `(d0, ..) -> (d0, ..)`, `di in [0, size-1]`.
    pub fn identity(sizes: &[i64]) -> IndexingMap {
        IndexingMap {
            form: MapForm::Normal,
            dims: sizes.iter().map(|&n| Interval::new(0, n - 1)).collect(),
            ranges: Vec::new(),
            runtimes: Vec::new(),
            results: (0..sizes.len() as u32).map(Expr::dim).collect(),
            constraints: Vec::new(),
        }
        .with_empty_check()
    }

    /// The special value KNOWN EMPTY.
    pub fn known_empty() -> IndexingMap {
        IndexingMap::special(MapForm::KnownEmpty)
    }
    /// The special value UNDEFINED.
    pub fn undefined() -> IndexingMap {
        IndexingMap::special(MapForm::Undefined)
    }
    fn special(form: MapForm) -> IndexingMap {
        IndexingMap {
            form,
            dims: Vec::new(),
            ranges: Vec::new(),
            runtimes: Vec::new(),
            results: Vec::new(),
            constraints: Vec::new(),
        }
    }
    fn with_empty_check(mut self) -> IndexingMap {
        self.mark_empty_if_some_bound_is_empty();
        self
    }
    pub(crate) fn mark_empty_if_some_bound_is_empty(&mut self) {
        let empty_var = self
            .dims
            .iter()
            .chain(&self.ranges)
            .chain(&self.runtimes)
            .any(|i| i.is_empty());
        let empty_constraint = self.constraints.iter().any(|c| c.interval.is_empty());
        if self.form == MapForm::Normal && (empty_var || empty_constraint) {
            *self = IndexingMap::known_empty();
        }
    }

    /// Ordinary, KNOWN EMPTY or UNDEFINED.
    pub fn form(&self) -> MapForm {
        self.form
    }
    /// True for KNOWN EMPTY.
    pub fn is_known_empty(&self) -> bool {
        self.form == MapForm::KnownEmpty
    }
    /// True for UNDEFINED.
    pub fn is_undefined(&self) -> bool {
        self.form == MapForm::Undefined
    }
    /// Bounds of the dimension variables.
    pub fn dims(&self) -> &[Interval] {
        &self.dims
    }
    /// Bounds of the range variables.
    pub fn ranges(&self) -> &[Interval] {
        &self.ranges
    }
    /// Bounds of the runtime variables.
    pub fn runtimes(&self) -> &[Interval] {
        &self.runtimes
    }
    /// The result expressions.
    pub fn results(&self) -> &[Expr] {
        &self.results
    }
    /// The constraints, in canonical order.
    pub fn constraints(&self) -> &[Constraint] {
        &self.constraints
    }
    /// The bounds of variable `v`, if declared.
    pub fn bounds(&self, v: Var) -> Option<Interval> {
        self.vars_of(v.kind).get(v.index as usize).copied()
    }
    /// Bounds of every variable of `kind`.
    pub fn vars_of(&self, kind: VarKind) -> &[Interval] {
        match kind {
            VarKind::Dim => &self.dims,
            VarKind::Range => &self.ranges,
            VarKind::Runtime => &self.runtimes,
        }
    }
    pub(crate) fn vars_of_mut(&mut self, kind: VarKind) -> &mut Vec<Interval> {
        match kind {
            VarKind::Dim => &mut self.dims,
            VarKind::Range => &mut self.ranges,
            VarKind::Runtime => &mut self.runtimes,
        }
    }

    /// Replaces the results (e.g. after a transformation); variables must be declared.
    pub fn set_results(&mut self, results: Vec<Expr>) -> Result<(), MapError> {
        for e in &results {
            self.check_declared(*e)?;
        }
        self.results = results;
        Ok(())
    }

    pub(crate) fn check_declared(&self, e: Expr) -> Result<(), MapError> {
        for v in e.variables() {
            if self.bounds(v).is_none() {
                return Err(MapError::UndeclaredVariable(v));
            }
        }
        Ok(())
    }

    /// Adds `expr in interval`. A constraint on a bare variable tightens that variable's
    /// bounds; a constraint on an expression already constrained intersects the intervals; an
    /// empty result makes the map KNOWN EMPTY. No effect on the special values.
    pub fn add_constraint(&mut self, expr: Expr, interval: Interval) {
        if self.form != MapForm::Normal {
            return;
        }
        if let Some(c) = expr.as_const() {
            if !interval.contains(c) {
                *self = IndexingMap::known_empty();
            }
            return;
        }
        if let Some(v) = expr.as_var() {
            if let Some(slot) = self.vars_of_mut(v.kind).get_mut(v.index as usize) {
                *slot = slot.intersect(interval);
                self.mark_empty_if_some_bound_is_empty();
                return;
            }
        }
        match self
            .constraints
            .binary_search_by(|c| c.expr.canonical_cmp(expr))
        {
            Ok(i) => {
                self.constraints[i].interval = self.constraints[i].interval.intersect(interval)
            }
            Err(i) => self.constraints.insert(i, Constraint { expr, interval }),
        }
        self.mark_empty_if_some_bound_is_empty();
    }

    /// Replaces all constraints (kept sorted and merged as [`IndexingMap::add_constraint`] does).
    pub(crate) fn replace_constraints(&mut self, constraints: Vec<(Expr, Interval)>) {
        self.constraints.clear();
        for (e, i) in constraints {
            self.add_constraint(e, i);
        }
    }

    /// Evaluates the results at a point (whether or not it lies in the domain).
    pub fn evaluate(&self, point: &Point<'_>) -> Result<Vec<i64>, MapError> {
        self.check_point(point)?;
        self.results.iter().map(|e| Ok(e.eval(point)?)).collect()
    }

    /// True if the point satisfies every constraint (variable bounds are not checked).
    pub fn constraints_satisfied(&self, point: &Point<'_>) -> Result<bool, MapError> {
        self.check_point(point)?;
        for c in &self.constraints {
            if !c.interval.contains(c.expr.eval(point)?) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// True if the point lies in the domain: every variable in its bounds and every constraint
    /// satisfied.
    pub fn contains_point(&self, point: &Point<'_>) -> Result<bool, MapError> {
        self.check_point(point)?;
        let within = |values: &[i64], bounds: &[Interval]| {
            values.iter().zip(bounds).all(|(v, b)| b.contains(*v))
        };
        Ok(within(point.dims, &self.dims)
            && within(point.ranges, &self.ranges)
            && within(point.runtimes, &self.runtimes)
            && self.constraints_satisfied(point)?)
    }

    fn check_point(&self, point: &Point<'_>) -> Result<(), MapError> {
        match self.form {
            MapForm::KnownEmpty => return Err(MapError::Special("KNOWN EMPTY")),
            MapForm::Undefined => return Err(MapError::Special("UNDEFINED")),
            MapForm::Normal => {}
        }
        for (kind, got, want) in [
            ("dimension", point.dims.len(), self.dims.len()),
            ("range", point.ranges.len(), self.ranges.len()),
            ("runtime", point.runtimes.len(), self.runtimes.len()),
        ] {
            if got != want {
                return Err(MapError::PointArity { kind, got, want });
            }
        }
        Ok(())
    }
}
