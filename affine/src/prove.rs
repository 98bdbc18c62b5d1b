//! Proofs with z3 (feature `z3`): statements about expressions, and equality of indexing maps.
//!
//! Expressions become z3 integer terms over *mathematical* integers. Floor semantics are
//! encoded exactly for a divisor of either sign, without z3's own `div`/`mod` (which are
//! Euclidean and differ from floor division for negative divisors): `a floordiv b` and
//! `a mod b` introduce fresh `q`, `r` with `a == b*q + r`, `b > 0 => 0 <= r < b` and
//! `b < 0 => b < r <= 0` (one `q`, `r` pair per distinct `(a, b)`, shared by the floordiv and the
//! mod); `a ceildiv b` is `-((-a) floordiv b)`; `min`/`max` are if-then-else terms.
//!
//! Scope of a proof:
//! - Variables and intermediate values are unbounded mathematical integers: `i64` overflow
//!   during evaluation is out of the scope of a proof. (Bounding the variables to `i64` makes z3
//!   much slower on div/mod problems.) Counterexamples are reported with `i64` values; when the
//!   first model z3 finds is huge, a small one is searched for.
//! - [`prove`]: a division, ceildiv or mod by zero has no value, so the obligation only covers
//!   points where every divisor occurring in the statement is non-zero (`b != 0` is an
//!   assumption of the query). [`prove_maps_equal`] instead reports a reachable division by zero
//!   as unknown, as evaluation would.
//! - A divisor that is not a constant makes `b*q` non-linear; z3 may then answer unknown. For
//!   those, [`prove_instantiated`] proves each instance with chosen variables fixed to constants.
//!
//! Every public function runs in a fresh z3 context, so that no answer depends on what ran
//! before on the same thread, and each query tries two solver configurations (z3's default and
//! its legacy arithmetic solver, in the order that suits a linear or non-linear query) before
//! answering unknown. `timeout_ms` applies to each configuration; on non-linear queries z3
//! overruns it (up to about twice, as measured).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::RangeInclusive;

use rustc_hash::FxHashMap;
use z3::ast::{Bool, Int};
use z3::{Model, Params, SatResult, Solver};

use crate::enumerate::OwnedPoint;
use crate::equiv::{self, Counterexample, Equivalence};
use crate::formula::{Cmp, Goal, Relation, Statement};
use crate::{Expr, ExprKind, IndexingMap, Interval, Point, Var, VarKind};

/// The outcome of a proof attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Proof {
    /// The statement holds for every assignment in scope.
    Proven,
    /// An assignment (every variable of the statement, in canonical order) where the assumptions
    /// hold and the goal fails.
    Counterexample(Vec<(Var, i64)>),
    /// z3 gave up (timeout, incompleteness on non-linear arithmetic) or the question was too
    /// large; the reason says which.
    Unknown(String),
}

impl Proof {
    /// True for [`Proof::Proven`].
    pub fn is_proven(&self) -> bool {
        matches!(self, Proof::Proven)
    }
}

impl fmt::Display for Proof {
    /// `proven`, `counterexample: d0 = 1, s0 = -2`, or `unknown: <reason>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Proof::Proven => f.write_str("proven"),
            Proof::Counterexample(values) => {
                f.write_str("counterexample: ")?;
                if values.is_empty() {
                    f.write_str("()")?;
                }
                for (i, (v, x)) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v} = {x}")?;
                }
                Ok(())
            }
            Proof::Unknown(reason) => write!(f, "unknown: {reason}"),
        }
    }
}

/// Translates expressions to z3 terms, collecting the definitions of quotients and remainders.
#[derive(Default)]
struct Encoder {
    vars: BTreeMap<Var, Int>,
    memo: FxHashMap<Expr, Int>,
    /// `(q, r)` of `a floordiv b` by `(a, b)`; for ceildiv, keyed by the ceildiv node itself.
    quotients: FxHashMap<(Expr, Expr), (Int, Int)>,
    ceil_quotients: FxHashMap<Expr, Int>,
    /// Definitions of the fresh quotient and remainder variables (always asserted).
    definitions: Vec<Bool>,
    /// Set when a product of two non-constants or a non-constant divisor was encoded.
    nonlinear: bool,
}

impl Encoder {
    fn var(&mut self, v: Var) -> Int {
        self.vars
            .entry(v)
            .or_insert_with(|| Int::new_const(v.to_string()))
            .clone()
    }

    /// The fresh `(q, r)` with `a == b*q + r` and `r` in the floor range for the sign of `b`.
    fn floor_qr(&mut self, a: Expr, b: Expr) -> (Int, Int) {
        if let Some(qr) = self.quotients.get(&(a, b)) {
            return qr.clone();
        }
        let (ta, tb) = (self.expr(a), self.expr(b));
        let qr = self.define_floor(&ta, &tb, b.as_const());
        self.quotients.insert((a, b), qr.clone());
        qr
    }

    fn define_floor(&mut self, ta: &Int, tb: &Int, b_const: Option<i64>) -> (Int, Int) {
        self.nonlinear |= b_const.is_none();
        let q = Int::fresh_const("q");
        let r = Int::fresh_const("r");
        let zero = Int::from_i64(0);
        self.definitions.push(ta.eq(&(tb * &q + &r)));
        match b_const {
            Some(c) if c > 0 => {
                self.definitions.push(r.ge(&zero));
                self.definitions.push(r.lt(tb));
            }
            Some(c) if c < 0 => {
                self.definitions.push(r.gt(tb));
                self.definitions.push(r.le(&zero));
            }
            _ => {
                let pos = tb.gt(&zero).implies(Bool::and(&[r.ge(&zero), r.lt(tb)]));
                let neg = tb.lt(&zero).implies(Bool::and(&[r.gt(tb), r.le(&zero)]));
                self.definitions.push(pos);
                self.definitions.push(neg);
            }
        }
        (q, r)
    }

    fn expr(&mut self, e: Expr) -> Int {
        if let Some(t) = self.memo.get(&e) {
            return t.clone();
        }
        let t = match e.kind() {
            ExprKind::Const(c) => Int::from_i64(c),
            ExprKind::Var(v) => self.var(v),
            ExprKind::Add(a, b) => {
                let (x, y) = (self.expr(a), self.expr(b));
                x + y
            }
            ExprKind::Mul(a, b) => {
                self.nonlinear |= a.as_const().is_none() && b.as_const().is_none();
                let (x, y) = (self.expr(a), self.expr(b));
                x * y
            }
            ExprKind::FloorDiv(a, b) => self.floor_qr(a, b).0,
            ExprKind::Mod(a, b) => self.floor_qr(a, b).1,
            ExprKind::CeilDiv(a, b) => {
                if let Some(q) = self.ceil_quotients.get(&e) {
                    q.clone()
                } else {
                    let (x, y) = (self.expr(a), self.expr(b));
                    let (q, _) = self.define_floor(&(-x), &y, b.as_const());
                    let result = -q;
                    self.ceil_quotients.insert(e, result.clone());
                    result
                }
            }
            ExprKind::Min(a, b) => {
                let (x, y) = (self.expr(a), self.expr(b));
                x.le(&y).ite(&x, &y)
            }
            ExprKind::Max(a, b) => {
                let (x, y) = (self.expr(a), self.expr(b));
                x.ge(&y).ite(&x, &y)
            }
        };
        self.memo.insert(e, t.clone());
        t
    }

    fn relation(&mut self, r: &Relation) -> Bool {
        let (x, y) = (self.expr(r.lhs), self.expr(r.rhs));
        match r.cmp {
            Cmp::Eq => x.eq(&y),
            Cmp::Ne => x.eq(&y).not(),
            Cmp::Lt => x.lt(&y),
            Cmp::Le => x.le(&y),
            Cmp::Gt => x.gt(&y),
            Cmp::Ge => x.ge(&y),
        }
    }

    fn conjunction(&mut self, rs: &[Relation]) -> Bool {
        let parts: Vec<Bool> = rs.iter().map(|r| self.relation(r)).collect();
        Bool::and(&parts)
    }

    /// `lo <= e <= hi`; a bound at the `i64` limit is left out (it only slows z3 down).
    fn within(&mut self, e: Expr, i: Interval) -> Bool {
        let t = self.expr(e);
        let mut parts = Vec::new();
        if i.lo != i64::MIN || i.is_empty() {
            parts.push(t.ge(Int::from_i64(i.lo)));
        }
        if i.hi != i64::MAX || i.is_empty() {
            parts.push(t.le(Int::from_i64(i.hi)));
        }
        Bool::and(&parts)
    }
}

/// Every divisor (of floordiv, ceildiv, mod) occurring in `e`, without repeats.
fn divisors(e: Expr, out: &mut Vec<Expr>) {
    if let Some((a, b)) = e.children() {
        if matches!(
            e.kind(),
            ExprKind::FloorDiv(..) | ExprKind::CeilDiv(..) | ExprKind::Mod(..)
        ) && !out.contains(&b)
        {
            out.push(b);
        }
        divisors(a, out);
        divisors(b, out);
    }
}

fn statement_exprs(s: &Statement) -> Vec<Expr> {
    let mut out = Vec::new();
    for r in &s.assumptions {
        out.extend([r.lhs, r.rhs]);
    }
    match &s.goal {
        Goal::Equal(a, b) => out.extend([*a, *b]),
        Goal::Equivalent(x, y) => {
            for r in x.iter().chain(y) {
                out.extend([r.lhs, r.rhs]);
            }
        }
    }
    out
}

/// The answer of [`solve`].
enum Solved {
    Unsat,
    /// Satisfiable; the solver holds the model.
    Sat(Solver),
    Unknown(String),
}

/// Checks the conjunction of `assertions` with a small portfolio of z3 configurations, each
/// with `timeout_ms`: z3's default and the legacy simplex arithmetic solver
/// (`arith.solver=2`). For linear problems the legacy solver goes first: it decides div/mod
/// problems with constant divisors far more reliably (on `(x mod 15) floordiv 5 ==
/// (x floordiv 5) mod 3` the default times out). For non-linear ones the default goes first (the
/// legacy solver times out on most of them).
fn solve(assertions: &[Bool], linear: bool, timeout_ms: u32) -> Solved {
    let mut reasons = Vec::new();
    let mut order = [("arith.solver=2", Some(2)), ("default", None)];
    if !linear {
        order.reverse();
    }
    for (name, arith_solver) in order {
        let s = Solver::new();
        let mut p = Params::new();
        p.set_u32("timeout", timeout_ms);
        if let Some(a) = arith_solver {
            p.set_u32("arith.solver", a);
        }
        s.set_params(&p);
        for a in assertions {
            s.assert(a);
        }
        match s.check() {
            SatResult::Unsat => return Solved::Unsat,
            SatResult::Sat => return Solved::Sat(s),
            SatResult::Unknown => reasons.push(format!("{name}: {}", reason_unknown(&s))),
        }
    }
    Solved::Unknown(reasons.join("; "))
}

fn reason_unknown(s: &Solver) -> String {
    s.get_reason_unknown()
        .unwrap_or_else(|| "z3 returned unknown".to_string())
}

fn model_value(model: &Model, t: &Int) -> Option<i64> {
    model.eval(t, true)?.as_i64()
}

/// A point with every variable of `vars` set (others 0), sized by the largest index per kind.
fn point_of(values: &[(Var, i64)], arity: [usize; 3]) -> OwnedPoint {
    let mut p = OwnedPoint {
        dims: vec![0; arity[0]],
        ranges: vec![0; arity[1]],
        runtimes: vec![0; arity[2]],
    };
    for &(v, x) in values {
        let slot = match v.kind {
            VarKind::Dim => &mut p.dims,
            VarKind::Range => &mut p.ranges,
            VarKind::Runtime => &mut p.runtimes,
        };
        if let Some(s) = slot.get_mut(v.index as usize) {
            *s = x;
        }
    }
    p
}

/// Proves `for all variables: assumptions => goal` (see the module documentation for the scope),
/// by asking z3 for a model of `assumptions and not goal`. `timeout_ms` bounds each z3
/// call (a query tries up to two solver configurations).
pub fn prove(statement: &Statement, timeout_ms: u32) -> Proof {
    fresh_context(|| prove_here(statement, timeout_ms))
}

/// Runs `f` in a new z3 context, so that no answer depends on what ran before it on the same
/// thread (z3's heuristics are sensitive to the state a context accumulates).
fn fresh_context<R: Send + Sync>(f: impl FnOnce() -> R + Send + Sync) -> R {
    z3::with_z3_config(&z3::Config::new(), f)
}

fn prove_here(statement: &Statement, timeout_ms: u32) -> Proof {
    let mut enc = Encoder::default();
    let assumptions: Vec<Bool> = statement
        .assumptions
        .iter()
        .map(|r| enc.relation(r))
        .collect();
    let goal = match &statement.goal {
        Goal::Equal(a, b) => {
            let (x, y) = (enc.expr(*a), enc.expr(*b));
            x.eq(&y)
        }
        Goal::Equivalent(x, y) => {
            let (p, q) = (enc.conjunction(x), enc.conjunction(y));
            p.iff(&q)
        }
    };
    let mut divs = Vec::new();
    for e in statement_exprs(statement) {
        divisors(e, &mut divs);
    }
    let zero = Int::from_i64(0);
    let nonzero: Vec<Bool> = divs.iter().map(|&d| enc.expr(d).eq(&zero).not()).collect();
    let mut all: Vec<Bool> = enc.definitions.clone();
    all.extend(nonzero);
    all.extend(assumptions);
    all.push(goal.not());
    match solve(&all, !enc.nonlinear, timeout_ms) {
        Solved::Unsat => Proof::Proven,
        Solved::Unknown(reason) => Proof::Unknown(reason),
        Solved::Sat(s) => {
            let first = read_model(&s, &enc);
            let arity = statement.arity();
            if let Some(values) = &first {
                let p = point_of(values, arity);
                if statement.check_at(&p.as_point()) == Some(false) {
                    return Proof::Counterexample(values.clone());
                }
            }
            // The model's values are huge (beyond i64, or overflowing in evaluation): look for a
            // counterexample with small values.
            s.push();
            let bound = 1i64 << 20;
            for t in enc.vars.values() {
                s.assert(t.ge(Int::from_i64(-bound)));
                s.assert(t.le(Int::from_i64(bound)));
            }
            let small = if s.check() == SatResult::Sat {
                read_model(&s, &enc)
            } else {
                None
            };
            s.pop(1);
            match small.or(first) {
                Some(values) => Proof::Counterexample(values),
                None => Proof::Unknown(
                    "z3 only found counterexamples with values beyond i64".to_string(),
                ),
            }
        }
    }
}

fn read_model(s: &Solver, enc: &Encoder) -> Option<Vec<(Var, i64)>> {
    let model = s.get_model()?;
    enc.vars
        .iter()
        .map(|(v, t)| Some((*v, model_value(&model, t)?)))
        .collect()
}

fn substitute_relation(r: &Relation, f: &mut dyn FnMut(Var) -> Option<Expr>) -> Relation {
    Relation::new(r.lhs.substitute(f), r.cmp, r.rhs.substitute(f))
}

/// The statement with the listed variables replaced by constants.
fn instantiate(statement: &Statement, values: &[(Var, i64)]) -> Statement {
    let mut f = |v: Var| {
        values
            .iter()
            .find(|(w, _)| *w == v)
            .map(|&(_, x)| Expr::constant(x))
    };
    let goal = match &statement.goal {
        Goal::Equal(a, b) => Goal::Equal(a.substitute(&mut f), b.substitute(&mut f)),
        Goal::Equivalent(x, y) => Goal::Equivalent(
            x.iter().map(|r| substitute_relation(r, &mut f)).collect(),
            y.iter().map(|r| substitute_relation(r, &mut f)).collect(),
        ),
    };
    Statement {
        assumptions: statement
            .assumptions
            .iter()
            .map(|r| substitute_relation(r, &mut f))
            .collect(),
        goal,
    }
}

/// The largest number of instances [`prove_instantiated`] will try.
pub const MAX_INSTANCES: u128 = 100_000;

/// Proves `statement` by cases: every variable listed in `consts` is replaced by each value of
/// its range (the cartesian product of all ranges), and each instance is proven with [`prove`].
/// This turns obligations that are non-linear because of a symbolic divisor into linear ones.
///
/// [`Proof::Proven`] only if every instance is proven (so the statement is proven for the listed
/// variables in their ranges only); the first counterexample found (with the listed variables'
/// values included, all in canonical order) otherwise; [`Proof::Unknown`] if some instance is
/// unknown and none fails, or if there are more than [`MAX_INSTANCES`] instances. With no
/// listed variable the statement is proven as it is; an empty range leaves no instance (proven
/// vacuously).
pub fn prove_instantiated(
    statement: &Statement,
    consts: &[(Var, RangeInclusive<i64>)],
    timeout_ms: u32,
) -> Proof {
    let count = consts.iter().fold(1u128, |acc, (_, r)| {
        let n = if r.is_empty() {
            0
        } else {
            (*r.end() as i128 - *r.start() as i128 + 1) as u128
        };
        acc.saturating_mul(n)
    });
    if count > MAX_INSTANCES {
        return Proof::Unknown(format!(
            "{count} instances, more than the limit of {MAX_INSTANCES}"
        ));
    }
    let bounds: Vec<Interval> = consts
        .iter()
        .map(|(_, r)| Interval::new(*r.start(), *r.end()))
        .collect();
    let mut outcome = Proof::Proven;
    crate::enumerate::for_each_in_box(&bounds, |values| {
        let assignment: Vec<(Var, i64)> = consts
            .iter()
            .zip(values)
            .map(|((v, _), &x)| (*v, x))
            .collect();
        match prove(&instantiate(statement, &assignment), timeout_ms) {
            Proof::Proven => true,
            Proof::Counterexample(mut rest) => {
                rest.extend(assignment);
                rest.sort_by_key(|&(v, _)| v);
                rest.dedup_by_key(|&mut (v, _)| v);
                outcome = Proof::Counterexample(rest);
                false
            }
            Proof::Unknown(reason) => {
                if !matches!(outcome, Proof::Unknown(_)) {
                    let at: Vec<String> = assignment
                        .iter()
                        .map(|(v, x)| format!("{v} = {x}"))
                        .collect();
                    outcome = Proof::Unknown(format!("at {}: {reason}", at.join(", ")));
                }
                true
            }
        }
    });
    outcome
}

// ---------------------------------------------------------------------------------------------
// Maps.

/// The domain of a map as one formula: bounds of every variable and every constraint.
fn domain(enc: &mut Encoder, map: &IndexingMap) -> Bool {
    let mut parts = vec![box_of(enc, map)];
    for c in map.constraints() {
        parts.push(enc.within(c.expr, c.interval));
    }
    Bool::and(&parts)
}

/// The bounds of every variable of a map.
fn box_of(enc: &mut Encoder, map: &IndexingMap) -> Bool {
    let mut parts = vec![Bool::from_bool(true)];
    for kind in [VarKind::Dim, VarKind::Range, VarKind::Runtime] {
        for (i, b) in map.vars_of(kind).iter().enumerate() {
            let v = Expr::var(Var {
                kind,
                index: i as u32,
            });
            parts.push(enc.within(v, *b));
        }
    }
    Bool::and(&parts)
}

/// "Some divisor is zero at a point where evaluation would reach it": a constraint's divisor
/// anywhere in the map's box, a result's divisor anywhere in its domain.
fn reaches_zero_divisor(enc: &mut Encoder, map: &IndexingMap) -> Option<Bool> {
    let (mut in_constraints, mut in_results) = (Vec::new(), Vec::new());
    for c in map.constraints() {
        divisors(c.expr, &mut in_constraints);
    }
    for &r in map.results() {
        divisors(r, &mut in_results);
    }
    let safe = |d: &Expr| d.as_const().is_some_and(|c| c != 0);
    in_constraints.retain(|d| !safe(d));
    in_results.retain(|d| !safe(d));
    if in_constraints.is_empty() && in_results.is_empty() {
        return None;
    }
    let zero = Int::from_i64(0);
    let any_zero = |enc: &mut Encoder, ds: &[Expr]| -> Bool {
        let parts: Vec<Bool> = ds.iter().map(|&d| enc.expr(d).eq(&zero)).collect();
        Bool::or(&parts)
    };
    let zc = any_zero(enc, &in_constraints);
    let zr = any_zero(enc, &in_results);
    let bx = box_of(enc, map);
    let dom = domain(enc, map);
    Some(Bool::or(&[Bool::and(&[bx, zc]), Bool::and(&[dom, zr])]))
}

/// The point of a model, in the variables of a map with arity `arity`.
fn model_point(s: &Solver, enc: &mut Encoder, arity: [usize; 3]) -> Option<OwnedPoint> {
    let model = s.get_model()?;
    let mut p = OwnedPoint {
        dims: vec![0; arity[0]],
        ranges: vec![0; arity[1]],
        runtimes: vec![0; arity[2]],
    };
    for (kind, slot) in [
        (VarKind::Dim, &mut p.dims),
        (VarKind::Range, &mut p.ranges),
        (VarKind::Runtime, &mut p.runtimes),
    ] {
        for (i, x) in slot.iter_mut().enumerate() {
            let t = enc.var(Var {
                kind,
                index: i as u32,
            });
            *x = model_value(&model, &t)?;
        }
    }
    Some(p)
}

/// The results of `map` at `p`, or `None` outside its domain (KNOWN EMPTY has no point).
fn side(map: &IndexingMap, p: &OwnedPoint) -> Result<Option<Vec<i64>>, String> {
    if map.is_known_empty() {
        return Ok(None);
    }
    let point = p.as_point();
    let fail = |e: crate::MapError| format!("at {}: {e}", equiv::PointText(p));
    if map.contains_point(&point).map_err(fail)? {
        Ok(Some(map.evaluate(&point).map_err(fail)?))
    } else {
        Ok(None)
    }
}

/// A point of the map's domain with its results, `None` if the domain is empty.
fn some_point(map: &IndexingMap, timeout_ms: u32) -> Result<Option<OwnedPoint>, String> {
    if map.is_known_empty() {
        return Ok(None);
    }
    let mut enc = Encoder::default();
    let dom = domain(&mut enc, map);
    let mut all = enc.definitions.clone();
    all.push(dom);
    match solve(&all, !enc.nonlinear, timeout_ms) {
        Solved::Unsat => Ok(None),
        Solved::Unknown(reason) => Err(reason),
        Solved::Sat(s) => model_point(&s, &mut enc, equiv::arity(map))
            .map(Some)
            .ok_or_else(|| "z3 gave no usable model".to_string()),
    }
}

/// Decides whether two maps are equal (same notion as
/// [`equiv::maps_equivalent_by_enumeration`]: same variables, same domain, same results on the
/// domain; variables of both maps are matched by kind and index) with z3. A difference comes
/// with both sides evaluated at the point z3 found. A division by zero reachable by evaluation
/// in either map makes the answer unknown. `timeout_ms` bounds each z3
/// call (a query tries up to two solver configurations).
pub fn prove_maps_equal(a: &IndexingMap, b: &IndexingMap, timeout_ms: u32) -> Equivalence {
    fresh_context(|| maps_equal_here(a, b, timeout_ms))
}

fn maps_equal_here(a: &IndexingMap, b: &IndexingMap, timeout_ms: u32) -> Equivalence {
    if a.is_undefined() || b.is_undefined() {
        return Equivalence::Unknown(equiv::UNDEFINED_REASON.to_string());
    }
    if a.is_known_empty() && b.is_known_empty() {
        return Equivalence::Equal;
    }
    if a.is_known_empty() || b.is_known_empty() || equiv::arity_mismatch(a, b).is_some() {
        return compare_disjoint_spaces(a, b, timeout_ms);
    }
    // First: any reachable division by zero makes the comparison meaningless (as evaluation
    // fails there); without one, the encoding below is exact at every point.
    {
        let mut enc = Encoder::default();
        let hazards: Vec<Bool> = [a, b]
            .iter()
            .filter_map(|m| reaches_zero_divisor(&mut enc, m))
            .collect();
        if !hazards.is_empty() {
            let mut all = enc.definitions.clone();
            all.push(Bool::or(&hazards));
            match solve(&all, !enc.nonlinear, timeout_ms) {
                Solved::Unsat => {}
                Solved::Unknown(reason) => {
                    return Equivalence::Unknown(format!(
                        "cannot rule out a division by zero: {reason}"
                    ))
                }
                Solved::Sat(s) => {
                    let at = model_point(&s, &mut enc, equiv::arity(a))
                        .map(|p| format!(" at {}", equiv::PointText(&p)))
                        .unwrap_or_default();
                    return Equivalence::Unknown(format!("division by zero{at}"));
                }
            }
        }
    }
    let mut enc = Encoder::default();
    let (da, db) = (domain(&mut enc, a), domain(&mut enc, b));
    let results_differ = if a.results().len() != b.results().len() {
        Bool::from_bool(true)
    } else {
        let parts: Vec<Bool> = a
            .results()
            .iter()
            .zip(b.results())
            .map(|(&x, &y)| {
                let (tx, ty) = (enc.expr(x), enc.expr(y));
                tx.eq(&ty).not()
            })
            .collect();
        Bool::or(&parts)
    };
    let differ = Bool::or(&[da.xor(&db), Bool::and(&[da.clone(), results_differ])]);
    let mut all = enc.definitions.clone();
    all.push(differ);
    match solve(&all, !enc.nonlinear, timeout_ms) {
        Solved::Unsat => Equivalence::Equal,
        Solved::Unknown(reason) => Equivalence::Unknown(reason),
        Solved::Sat(s) => {
            let Some(point) = model_point(&s, &mut enc, equiv::arity(a)) else {
                return Equivalence::Unknown("z3 gave no usable model".to_string());
            };
            match (side(a, &point), side(b, &point)) {
                (Ok(lhs), Ok(rhs)) if lhs != rhs => {
                    Equivalence::Different(Counterexample { point, lhs, rhs })
                }
                (Ok(_), Ok(_)) => Equivalence::Unknown(format!(
                    "z3 reports a difference at {} that evaluation does not confirm",
                    equiv::PointText(&point)
                )),
                (Err(e), _) | (_, Err(e)) => Equivalence::Unknown(format!(
                    "z3 reports a difference, but evaluation fails {e}"
                )),
            }
        }
    }
}

/// Maps without a shared variable space: equal iff both domains are empty.
fn compare_disjoint_spaces(a: &IndexingMap, b: &IndexingMap, timeout_ms: u32) -> Equivalence {
    let pa = match some_point(a, timeout_ms) {
        Ok(p) => p,
        Err(e) => return Equivalence::Unknown(e),
    };
    let pb = match some_point(b, timeout_ms) {
        Ok(p) => p,
        Err(e) => return Equivalence::Unknown(e),
    };
    let make = |map: &IndexingMap, p: OwnedPoint, first: bool| match side(map, &p) {
        Ok(Some(values)) => Equivalence::Different(if first {
            Counterexample {
                point: p,
                lhs: Some(values),
                rhs: None,
            }
        } else {
            Counterexample {
                point: p,
                lhs: None,
                rhs: Some(values),
            }
        }),
        Ok(None) => Equivalence::Unknown(format!(
            "z3 found a domain point at {} that evaluation does not confirm",
            equiv::PointText(&p)
        )),
        Err(e) => Equivalence::Unknown(e),
    };
    match (pa, pb) {
        (None, None) => Equivalence::Equal,
        (Some(p), None) => make(a, p, true),
        (None, Some(p)) => make(b, p, false),
        (Some(_), Some(_)) => Equivalence::Unknown(
            equiv::arity_mismatch(a, b).unwrap_or_else(|| "not comparable".to_string()),
        ),
    }
}

/// Evaluates a statement's goal at a z3 assignment (for tests and callers that want to check a
/// counterexample): `Some(false)` confirms it.
pub fn check_counterexample(statement: &Statement, values: &[(Var, i64)]) -> Option<bool> {
    let p = point_of(values, statement.arity());
    statement.check_at(&Point {
        dims: &p.dims,
        ranges: &p.ranges,
        runtimes: &p.runtimes,
    })
}
