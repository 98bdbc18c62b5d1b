//! Equality saturation over affine expressions with egg: a second-opinion simplifier and an
//! equivalence checker, independent of the rule-based simplifier.
//!
//! The e-graph holds the same language as [`Expr`] ([`AffineLang`]). Every e-class carries a
//! [`ClassData`]: the value's [`Interval`] over the variable bounds given by the caller (merged by
//! intersection, so equal forms share what each knows), and its constant value when the interval
//! is a single point or the children fold with checked arithmetic (never on overflow or division
//! by zero). A class with a constant is reduced to that number.
//!
//! The rules ([`rules`]) are associativity and commutativity of `+`, `*`, `min`, `max`,
//! distribution of constant factors, collection of like terms, and the range-conditional families
//! of the simplifier: `x mod c -> x - k*c` and `x floordiv c -> k` when `x` stays in one period
//! `[k*c, k*c + c - 1]`, `(c*q + r) floordiv c -> q + r floordiv c`, `(c*q + r) mod c -> r mod c`,
//! nested floordiv merge, `(x floordiv c) * c + x mod c -> x`, `(x mod a) mod b -> x mod b` when
//! `b` divides `a`, `ceildiv` by a positive constant as a floordiv, and min/max decided by
//! intervals. Conditions read e-class intervals.
//!
//! Saturation is bounded by [`Limits`]: an iteration limit and a node limit decide when to stop,
//! and the time limit is generous (60 s by default) so that results do not depend on machine
//! load. Extraction minimizes [`extraction_cost`], a tree size in which everything under a
//! dividend counts twice, so forms with smaller dividends and fewer divisions win.
//!
//! Soundness: every rule is an identity of integers under its side condition, and conditions
//! hold at every point of the box given by the variable bounds. The results are therefore equal
//! to the input at every point of that box where both evaluate: a division by zero or an `i64`
//! overflow in the input may become a value (`(x floordiv 0) * 0 -> 0`), which is out of scope,
//! as is the saturation of interval bounds at the `i64` limits.

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;
use std::time::Duration;

use egg::{
    define_language, Analysis, Applier, CostFunction, DidMerge, Extractor, Id, Language,
    PatternAst, RecExpr, Rewrite, Runner, Subst, Symbol,
};
use rustc_hash::FxHashMap;

use crate::{arith, Expr, ExprKind, IndexingMap, Interval, Var, VarKind};

/// A variable as an e-graph leaf: [`Var`] with a text form (`d0`, `s1`, `rt2`) that egg parses.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Leaf(pub Var);

impl fmt::Display for Leaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Leaf {
    type Err = String;
    fn from_str(s: &str) -> Result<Leaf, String> {
        let (kind, digits) = if let Some(rest) = s.strip_prefix("rt") {
            (VarKind::Runtime, rest)
        } else if let Some(rest) = s.strip_prefix('d') {
            (VarKind::Dim, rest)
        } else if let Some(rest) = s.strip_prefix('s') {
            (VarKind::Range, rest)
        } else {
            return Err(format!("`{s}` is not a variable"));
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("`{s}` is not a variable"));
        }
        let index = digits.parse::<u32>().map_err(|e| format!("`{s}`: {e}"))?;
        Ok(Leaf(Var { kind, index }))
    }
}

define_language! {
    /// The expression language of [`Expr`] as an egg [`Language`]. Its s-expression form is
    /// `(+ a b)`, `(* a b)`, `(floordiv a b)`, `(ceildiv a b)`, `(mod a b)`, `(min a b)`,
    /// `(max a b)`, integers and variables (`d0`, `s0`, `rt0`).
    #[allow(missing_docs)]
    pub enum AffineLang {
        "+" = Add([Id; 2]),
        "*" = Mul([Id; 2]),
        "floordiv" = FloorDiv([Id; 2]),
        "ceildiv" = CeilDiv([Id; 2]),
        "mod" = Mod([Id; 2]),
        "min" = Min([Id; 2]),
        "max" = Max([Id; 2]),
        Num(i64),
        Var(Leaf),
    }
}

/// What the analysis knows about an e-class.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ClassData {
    /// The value, if it is the same at every point of the variable box.
    pub constant: Option<i64>,
    /// Every value the class takes on the variable box (where it evaluates).
    pub interval: Interval,
}

impl ClassData {
    /// Normalizes: a constant is its own interval; a single-point interval (away from the
    /// saturated `i64` limits) is a constant.
    fn new(constant: Option<i64>, interval: Interval) -> ClassData {
        match constant {
            Some(c) => ClassData {
                constant: Some(c),
                interval: Interval::point(c),
            },
            None if interval.is_point() && interval.lo != i64::MIN && interval.lo != i64::MAX => {
                ClassData {
                    constant: Some(interval.lo),
                    interval,
                }
            }
            None => ClassData { constant, interval },
        }
    }
}

/// The e-class analysis: constant folding and intervals from the variable bounds.
#[derive(Debug, Default)]
pub struct RangeAnalysis {
    bounds: FxHashMap<Var, Interval>,
    /// Set when two classes with incompatible facts were merged (distinct constants or disjoint
    /// intervals). It can only happen when the bounds admit no point at all, or when a rule is
    /// unsound; results are then discarded.
    pub contradiction: bool,
}

impl RangeAnalysis {
    /// An analysis with the given bounds; variables not listed are unbounded.
    pub fn new(bounds: FxHashMap<Var, Interval>) -> RangeAnalysis {
        RangeAnalysis {
            bounds,
            contradiction: false,
        }
    }
    fn bound(&self, v: Var) -> Interval {
        self.bounds.get(&v).copied().unwrap_or(Interval::FULL)
    }
}

/// The e-graph type used here.
pub type AffineEGraph = egg::EGraph<AffineLang, RangeAnalysis>;

/// Interval of a division-like operation: a divisor known to be zero has no value at all, so
/// the result is left unconstrained rather than empty (an empty interval would make every
/// range condition vacuously true).
fn division_interval(r: Interval) -> Interval {
    if r.is_empty() {
        Interval::FULL
    } else {
        r
    }
}

impl Analysis<AffineLang> for RangeAnalysis {
    type Data = ClassData;

    fn make(egraph: &mut AffineEGraph, enode: &AffineLang, _id: Id) -> ClassData {
        let d = |i: &Id| egraph[*i].data;
        let both = |a: &Id, b: &Id| (d(a), d(b));
        let fold = |a: ClassData, b: ClassData, f: fn(i64, i64) -> Option<i64>| match (
            a.constant, b.constant,
        ) {
            (Some(x), Some(y)) => f(x, y),
            _ => None,
        };
        let (constant, interval) = match enode {
            AffineLang::Num(c) => (Some(*c), Interval::point(*c)),
            AffineLang::Var(v) => (None, egraph.analysis.bound(v.0)),
            AffineLang::Add([a, b]) => {
                let (x, y) = both(a, b);
                (fold(x, y, i64::checked_add), x.interval.add(y.interval))
            }
            AffineLang::Mul([a, b]) => {
                let (x, y) = both(a, b);
                (fold(x, y, i64::checked_mul), x.interval.mul(y.interval))
            }
            AffineLang::FloorDiv([a, b]) => {
                let (x, y) = both(a, b);
                (
                    fold(x, y, arith::floor_div),
                    division_interval(x.interval.floor_div(y.interval)),
                )
            }
            AffineLang::CeilDiv([a, b]) => {
                let (x, y) = both(a, b);
                (
                    fold(x, y, arith::ceil_div),
                    division_interval(x.interval.ceil_div(y.interval)),
                )
            }
            AffineLang::Mod([a, b]) => {
                let (x, y) = both(a, b);
                (
                    fold(x, y, arith::floor_mod),
                    division_interval(x.interval.modulo(y.interval)),
                )
            }
            AffineLang::Min([a, b]) => {
                let (x, y) = both(a, b);
                (
                    fold(x, y, |p, q| Some(p.min(q))),
                    x.interval.min(y.interval),
                )
            }
            AffineLang::Max([a, b]) => {
                let (x, y) = both(a, b);
                (
                    fold(x, y, |p, q| Some(p.max(q))),
                    x.interval.max(y.interval),
                )
            }
        };
        ClassData::new(constant, interval)
    }

    fn merge(&mut self, a: &mut ClassData, b: ClassData) -> DidMerge {
        let old = *a;
        let mut interval = a.interval.intersect(b.interval);
        if interval.is_empty() {
            self.contradiction = true;
            interval = a.interval;
        }
        let constant = match (a.constant, b.constant) {
            (Some(x), Some(y)) if x != y => {
                self.contradiction = true;
                Some(x)
            }
            (x, y) => x.or(y),
        };
        if let Some(c) = constant {
            if !interval.contains(c) {
                self.contradiction = true;
            }
        }
        let new = ClassData::new(constant, interval);
        *a = new;
        DidMerge(new != old, new != b)
    }

    fn modify(egraph: &mut AffineEGraph, id: Id) {
        if let Some(c) = egraph[id].data.constant {
            let n = egraph.add(AffineLang::Num(c));
            egraph.union(id, n);
            // A constant class needs no other form: keep only the number (this bounds the growth
            // of the e-graph; the pruned nodes stay in the hash-cons table).
            let id = egraph.find(id);
            egraph[id].nodes.retain(|n| matches!(n, AffineLang::Num(_)));
        }
    }
}

/// Bounds on equality saturation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Limits {
    /// Maximum number of iterations (rule applications to every match, then rebuild).
    pub iterations: usize,
    /// Maximum number of e-nodes.
    pub nodes: usize,
    /// Wall-clock limit; keep it generous so that the iteration and node limits decide.
    pub time: Duration,
}

impl Default for Limits {
    /// 12 iterations, 20 000 nodes, 60 s.
    fn default() -> Limits {
        Limits {
            iterations: 12,
            nodes: 20_000,
            time: Duration::from_secs(60),
        }
    }
}

/// How a saturation run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Why it stopped: `saturated`, `iteration limit`, `node limit`, `time limit`, `proved
    /// equal`, or why it did not run (`empty variable bounds`, `special map`, `nothing to
    /// simplify`).
    pub stop_reason: String,
    /// Iterations run.
    pub iterations: usize,
    /// E-nodes at the end.
    pub nodes: usize,
    /// E-classes at the end.
    pub classes: usize,
    /// True if incompatible facts were merged (the bounds admit no point); the results are then
    /// the inputs.
    pub contradiction: bool,
}

impl Report {
    /// The report of a run that did not happen, with the reason as its stop reason.
    fn skipped(reason: &str) -> Report {
        Report {
            stop_reason: reason.to_string(),
            iterations: 0,
            nodes: 0,
            classes: 0,
            contradiction: false,
        }
    }
}

/// Converts an expression to an egg term (shared sub-expressions become one node).
// `Expr` hashes and compares by node identity; the linear form a node fills in lazily (its
// only interior mutability) takes no part in either, so it is a sound map key.
#[allow(clippy::mutable_key_type)]
pub fn to_rec_expr(e: Expr) -> RecExpr<AffineLang> {
    let mut rec = RecExpr::default();
    let mut memo = FxHashMap::default();
    add_to_rec(e, &mut rec, &mut memo);
    rec
}

#[allow(clippy::mutable_key_type)] // See `to_rec_expr`.
fn add_to_rec(e: Expr, rec: &mut RecExpr<AffineLang>, memo: &mut FxHashMap<Expr, Id>) -> Id {
    if let Some(&id) = memo.get(&e) {
        return id;
    }
    let node = match e.kind() {
        ExprKind::Const(c) => AffineLang::Num(c),
        ExprKind::Var(v) => AffineLang::Var(Leaf(v)),
        kind => {
            let (a, b) = e.children().expect("binary node");
            let ids = [add_to_rec(a, rec, memo), add_to_rec(b, rec, memo)];
            match kind {
                ExprKind::Add(..) => AffineLang::Add(ids),
                ExprKind::Mul(..) => AffineLang::Mul(ids),
                ExprKind::FloorDiv(..) => AffineLang::FloorDiv(ids),
                ExprKind::CeilDiv(..) => AffineLang::CeilDiv(ids),
                ExprKind::Mod(..) => AffineLang::Mod(ids),
                ExprKind::Min(..) => AffineLang::Min(ids),
                ExprKind::Max(..) => AffineLang::Max(ids),
                ExprKind::Const(_) | ExprKind::Var(_) => unreachable!("leaves handled above"),
            }
        }
    };
    let id = rec.add(node);
    memo.insert(e, id);
    id
}

/// Converts an egg term back to an expression (through the folding builders). The root is the
/// last node.
///
/// # Panics
/// If the term is empty.
pub fn from_rec_expr(rec: &RecExpr<AffineLang>) -> Expr {
    let nodes = rec.as_ref();
    let mut built: Vec<Expr> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let e = match node {
            AffineLang::Num(c) => Expr::constant(*c),
            AffineLang::Var(v) => Expr::var(v.0),
            _ => {
                let c = node.children();
                let (a, b) = (built[usize::from(c[0])], built[usize::from(c[1])]);
                match node {
                    AffineLang::Add(_) => a.add(b),
                    AffineLang::Mul(_) => a.mul(b),
                    AffineLang::FloorDiv(_) => a.floor_div(b),
                    AffineLang::CeilDiv(_) => a.ceil_div(b),
                    AffineLang::Mod(_) => a.modulo(b),
                    AffineLang::Min(_) => a.min(b),
                    AffineLang::Max(_) => a.max(b),
                    AffineLang::Num(_) | AffineLang::Var(_) => unreachable!("leaves handled above"),
                }
            }
        };
        built.push(e);
    }
    *built.last().expect("a term has at least one node")
}

/// The extraction cost: one per node, with everything inside a dividend (of floordiv, ceildiv,
/// mod) counted twice, so that smaller dividends and fewer nested divisions win.
#[derive(Clone, Copy, Debug, Default)]
pub struct DividendWeightedSize;

impl CostFunction<AffineLang> for DividendWeightedSize {
    type Cost = u64;
    fn cost<C>(&mut self, enode: &AffineLang, mut costs: C) -> u64
    where
        C: FnMut(Id) -> u64,
    {
        match enode {
            AffineLang::FloorDiv([a, b])
            | AffineLang::CeilDiv([a, b])
            | AffineLang::Mod([a, b]) => 1u64
                .saturating_add(costs(*a).saturating_mul(2))
                .saturating_add(costs(*b)),
            _ => enode.fold(1u64, |sum, i| sum.saturating_add(costs(i))),
        }
    }
}

/// [`DividendWeightedSize`] of an expression (as a tree: shared sub-expressions count each time).
pub fn extraction_cost(e: Expr) -> u64 {
    match e.kind() {
        ExprKind::Const(_) | ExprKind::Var(_) => 1,
        ExprKind::FloorDiv(a, b) | ExprKind::CeilDiv(a, b) | ExprKind::Mod(a, b) => 1u64
            .saturating_add(extraction_cost(a).saturating_mul(2))
            .saturating_add(extraction_cost(b)),
        _ => {
            let (a, b) = e.children().expect("binary node");
            1u64.saturating_add(extraction_cost(a))
                .saturating_add(extraction_cost(b))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rules.

type Rw = Rewrite<AffineLang, RangeAnalysis>;

fn pv(name: &str) -> egg::Var {
    name.parse().expect("pattern variable")
}

fn constant_of(egraph: &AffineEGraph, id: Id) -> Option<i64> {
    egraph[id].data.constant
}

fn interval_of(egraph: &AffineEGraph, id: Id) -> Interval {
    egraph[id].data.interval
}

/// An applier that computes its right-hand side (to use constants the pattern language cannot
/// express). The function returns the class to union with the match, or `None` to do nothing.
struct Computed<F>(F);

impl<F> Applier<AffineLang, RangeAnalysis> for Computed<F>
where
    F: Fn(&mut AffineEGraph, &Subst) -> Option<Id> + Send + Sync,
{
    fn apply_one(
        &self,
        egraph: &mut AffineEGraph,
        eclass: Id,
        subst: &Subst,
        _searcher_ast: Option<&PatternAst<AffineLang>>,
        _rule_name: Symbol,
    ) -> Vec<Id> {
        match (self.0)(egraph, subst) {
            Some(id) if egraph.union(eclass, id) => vec![eclass],
            _ => vec![],
        }
    }
}

fn computed<F>(name: &str, pattern: &str, f: F) -> Rw
where
    F: Fn(&mut AffineEGraph, &Subst) -> Option<Id> + Send + Sync + 'static,
{
    let searcher: egg::Pattern<AffineLang> = pattern.parse().expect("pattern");
    Rewrite::new(name, searcher, Computed(f)).expect("rule")
}

fn num(egraph: &mut AffineEGraph, c: i64) -> Id {
    egraph.add(AffineLang::Num(c))
}

/// If the class `a` holds a multiple of the non-zero constant `c`, returns `a / c` as a class:
/// `q * k` (or `k * q`) with `c | k` gives `q * (k / c)`; the number `n` with `c | n` gives
/// `n / c`.
fn quotient_of_multiple(egraph: &mut AffineEGraph, a: Id, c: i64) -> Option<Id> {
    if c == 0 {
        return None;
    }
    if let Some(n) = constant_of(egraph, a) {
        return (n.checked_rem(c)? == 0)
            .then_some(n / c)
            .map(|q| num(egraph, q));
    }
    let mut found = None;
    for node in &egraph[a].nodes {
        if let AffineLang::Mul([x, y]) = node {
            for (q, k) in [(*x, *y), (*y, *x)] {
                if let Some(k) = constant_of(egraph, k) {
                    if k.checked_rem(c) == Some(0) {
                        found = Some((q, k / c));
                        break;
                    }
                }
            }
        }
        if found.is_some() {
            break;
        }
    }
    let (q, m) = found?;
    Some(if m == 1 {
        q
    } else {
        let m = num(egraph, m);
        egraph.add(AffineLang::Mul([q, m]))
    })
}

fn cond_const(
    var: &'static str,
    pred: fn(i64) -> bool,
) -> impl Fn(&mut AffineEGraph, Id, &Subst) -> bool {
    let v = pv(var);
    move |egraph, _, subst| constant_of(egraph, subst[v]).is_some_and(pred)
}

fn build_rules() -> Vec<Rw> {
    use egg::rewrite as rw;
    let (a, b, c, x, r) = (pv("?a"), pv("?b"), pv("?c"), pv("?x"), pv("?r"));
    let mut rules: Vec<Rw> = vec![
        rw!("add-comm"; "(+ ?a ?b)" => "(+ ?b ?a)"),
        rw!("add-assoc"; "(+ ?a (+ ?b ?c))" => "(+ (+ ?a ?b) ?c)"),
        rw!("mul-comm"; "(* ?a ?b)" => "(* ?b ?a)"),
        rw!("mul-assoc"; "(* ?a (* ?b ?c))" => "(* (* ?a ?b) ?c)"),
        rw!("min-comm"; "(min ?a ?b)" => "(min ?b ?a)"),
        rw!("max-comm"; "(max ?a ?b)" => "(max ?b ?a)"),
        rw!("min-assoc"; "(min ?a (min ?b ?c))" => "(min (min ?a ?b) ?c)"),
        rw!("max-assoc"; "(max ?a (max ?b ?c))" => "(max (max ?a ?b) ?c)"),
        rw!("add-zero"; "(+ ?a 0)" => "?a"),
        rw!("mul-one"; "(* ?a 1)" => "?a"),
        rw!("mul-zero"; "(* ?a 0)" => "0"),
        rw!("min-self"; "(min ?a ?a)" => "?a"),
        rw!("max-self"; "(max ?a ?a)" => "?a"),
        rw!("distribute-const"; "(* (+ ?a ?b) ?c)" => "(+ (* ?a ?c) (* ?b ?c))"
            if cond_const("?c", |_| true)),
        rw!("collect-terms"; "(+ (* ?a ?b) (* ?a ?c))" => "(* ?a (+ ?b ?c))"
            if cond_const("?b", |_| true) if cond_const("?c", |_| true)),
        rw!("collect-term-one"; "(+ ?a (* ?a ?c))" => "(* ?a (+ ?c 1))"
            if cond_const("?c", |_| true)),
        rw!("add-self"; "(+ ?a ?a)" => "(* ?a 2)"),
        // (x floordiv c) * c + x mod c == x for every non-zero c (both sides fail for c == 0).
        rw!("div-mod-recombine"; "(+ (* (floordiv ?x ?c) ?c) (mod ?x ?c))" => "?x"),
        // floor(floor(x / a) / b) == floor(x / (a * b)) for a, b > 0.
        computed("div-div", "(floordiv (floordiv ?x ?a) ?b)", move |eg, s| {
            let (p, q) = (constant_of(eg, s[a])?, constant_of(eg, s[b])?);
            if p <= 0 || q <= 0 {
                return None;
            }
            let pq = num(eg, p.checked_mul(q)?);
            Some(eg.add(AffineLang::FloorDiv([s[x], pq])))
        }),
        // (x mod a) mod b == x mod b when b divides a, a, b > 0.
        computed("mod-mod", "(mod (mod ?x ?a) ?b)", move |eg, s| {
            let (p, q) = (constant_of(eg, s[a])?, constant_of(eg, s[b])?);
            if p <= 0 || q <= 0 || p % q != 0 {
                return None;
            }
            Some(eg.add(AffineLang::Mod([s[x], s[b]])))
        }),
        // x ceildiv c == (x + c - 1) floordiv c for c > 0.
        computed("ceil-to-floor", "(ceildiv ?x ?c)", move |eg, s| {
            let cv = constant_of(eg, s[c])?;
            if cv <= 0 {
                return None;
            }
            let m = num(eg, cv - 1);
            let sum = eg.add(AffineLang::Add([s[x], m]));
            Some(eg.add(AffineLang::FloorDiv([sum, s[c]])))
        }),
        // x mod c == x - k*c when x floordiv c is the constant k on the box (one period).
        computed("mod-one-period", "(mod ?x ?c)", move |eg, s| {
            let cv = constant_of(eg, s[c])?;
            if cv == 0 {
                return None;
            }
            let quotient = interval_of(eg, s[x]).floor_div(Interval::point(cv));
            if !quotient.is_point() || quotient.lo == i64::MIN || quotient.lo == i64::MAX {
                return None;
            }
            let shift = quotient.lo.checked_mul(cv)?.checked_neg()?;
            if shift == 0 {
                return Some(s[x]);
            }
            let shift = num(eg, shift);
            Some(eg.add(AffineLang::Add([s[x], shift])))
        }),
        // (m + r) floordiv c == m / c + r floordiv c when c divides m.
        computed("div-split", "(floordiv (+ ?a ?r) ?c)", move |eg, s| {
            let cv = constant_of(eg, s[c])?;
            let m = quotient_of_multiple(eg, s[a], cv)?;
            let rest = eg.add(AffineLang::FloorDiv([s[r], s[c]]));
            Some(eg.add(AffineLang::Add([m, rest])))
        }),
        // (m + r) mod c == r mod c when c divides m.
        computed("mod-split", "(mod (+ ?a ?r) ?c)", move |eg, s| {
            let cv = constant_of(eg, s[c])?;
            quotient_of_multiple(eg, s[a], cv)?;
            Some(eg.add(AffineLang::Mod([s[r], s[c]])))
        }),
        // m floordiv c == m / c and m mod c == 0 when c divides m.
        computed("div-multiple", "(floordiv ?a ?c)", move |eg, s| {
            let cv = constant_of(eg, s[c])?;
            quotient_of_multiple(eg, s[a], cv)
        }),
        computed("mod-multiple", "(mod ?a ?c)", move |eg, s| {
            let cv = constant_of(eg, s[c])?;
            quotient_of_multiple(eg, s[a], cv)?;
            Some(num(eg, 0))
        }),
        // min/max decided by intervals.
        computed("min-decided", "(min ?a ?b)", move |eg, s| {
            let (ia, ib) = (interval_of(eg, s[a]), interval_of(eg, s[b]));
            if ia.hi <= ib.lo {
                Some(s[a])
            } else if ib.hi <= ia.lo {
                Some(s[b])
            } else {
                None
            }
        }),
        computed("max-decided", "(max ?a ?b)", move |eg, s| {
            let (ia, ib) = (interval_of(eg, s[a]), interval_of(eg, s[b]));
            if ia.lo >= ib.hi {
                Some(s[a])
            } else if ib.lo >= ia.hi {
                Some(s[b])
            } else {
                None
            }
        }),
    ];
    rules.shrink_to_fit();
    rules
}

static RULES: LazyLock<Vec<Rw>> = LazyLock::new(build_rules);

/// The rewrite rules (see the module documentation).
pub fn rules() -> &'static [Rewrite<AffineLang, RangeAnalysis>] {
    &RULES
}

// ---------------------------------------------------------------------------------------------
// Running.

fn collect_bounds(exprs: &[Expr], bounds: &dyn Fn(Var) -> Interval) -> FxHashMap<Var, Interval> {
    let mut map = FxHashMap::default();
    for e in exprs {
        for v in e.variables() {
            map.entry(v).or_insert_with(|| bounds(v));
        }
    }
    map
}

fn stop_reason_text(reason: Option<&egg::StopReason>) -> String {
    match reason {
        None => "not run".to_string(),
        Some(egg::StopReason::Saturated) => "saturated".to_string(),
        Some(egg::StopReason::IterationLimit(_)) => "iteration limit".to_string(),
        Some(egg::StopReason::NodeLimit(_)) => "node limit".to_string(),
        Some(egg::StopReason::TimeLimit(_)) => "time limit".to_string(),
        Some(egg::StopReason::Other(s)) => s.clone(),
    }
}

type AffineRunner = Runner<AffineLang, RangeAnalysis>;

fn runner(bounds: FxHashMap<Var, Interval>, limits: &Limits) -> AffineRunner {
    Runner::new(RangeAnalysis::new(bounds))
        .with_iter_limit(limits.iterations)
        .with_node_limit(limits.nodes)
        .with_time_limit(limits.time)
}

fn report(runner: &AffineRunner) -> Report {
    Report {
        stop_reason: stop_reason_text(runner.stop_reason.as_ref()),
        iterations: runner.iterations.len(),
        nodes: runner.egraph.total_size(),
        classes: runner.egraph.number_of_classes(),
        contradiction: runner.egraph.analysis.contradiction,
    }
}

/// Simplifies several expressions in one e-graph (so they share work), with variable bounds
/// `bounds`. Each result is the cheapest form found ([`extraction_cost`]), in canonical order of
/// summands, and never costs more than its input. If some variable's bound is empty, or the
/// run merged incompatible facts, the inputs are returned unchanged.
pub fn simplify_all(
    exprs: &[Expr],
    bounds: &dyn Fn(Var) -> Interval,
    limits: &Limits,
) -> (Vec<Expr>, Report) {
    if exprs.is_empty() {
        return (Vec::new(), Report::skipped("nothing to simplify"));
    }
    let bounds = collect_bounds(exprs, bounds);
    let mut run = runner(bounds, limits);
    if run.egraph.analysis.bounds.values().any(|b| b.is_empty()) {
        return (exprs.to_vec(), Report::skipped("empty variable bounds"));
    }
    for &e in exprs {
        run = run.with_expr(&to_rec_expr(e));
    }
    let run = run.run(rules());
    let rep = report(&run);
    if rep.contradiction {
        return (exprs.to_vec(), rep);
    }
    let extractor = Extractor::new(&run.egraph, DividendWeightedSize);
    let out = exprs
        .iter()
        .zip(&run.roots)
        .map(|(&e, &root)| {
            let (_, best) = extractor.find_best(root);
            let best = canonical(from_rec_expr(&best));
            if extraction_cost(best) <= extraction_cost(e) {
                best
            } else {
                e
            }
        })
        .collect();
    (out, rep)
}

/// Simplifies `e` by bounded equality saturation with the variable bounds `bounds` (see
/// [`simplify_all`]).
pub fn simplify(e: Expr, bounds: &dyn Fn(Var) -> Interval, limits: &Limits) -> Expr {
    simplify_all(&[e], bounds, limits).0[0]
}

/// Simplifies the results of a map, with the map's variable bounds (constraints are not used,
/// and are kept as they are). KNOWN EMPTY and UNDEFINED are returned as they are.
pub fn simplify_map(map: &IndexingMap, limits: &Limits) -> IndexingMap {
    simplify_map_with_report(map, limits).0
}

/// [`simplify_map`], also returning how saturation ended.
pub fn simplify_map_with_report(map: &IndexingMap, limits: &Limits) -> (IndexingMap, Report) {
    if map.is_known_empty() || map.is_undefined() {
        return (map.clone(), Report::skipped("special map"));
    }
    let bounds = |v: Var| map.bounds(v).unwrap_or(Interval::FULL);
    let (results, rep) = simplify_all(map.results(), &bounds, limits);
    let mut out = map.clone();
    out.set_results(results)
        .expect("simplified results use only the map's variables");
    (out, rep)
}

/// Tries to prove `a == b` at every point of the box given by `bounds`, by saturating an
/// e-graph holding both. `Some(true)`: proven equal (wherever both evaluate). `Some(false)`:
/// both are constants on the box, and different ones. `None`: not decided (saturation cannot
/// prove a difference). Empty bounds give `None`.
pub fn equivalent(
    a: Expr,
    b: Expr,
    bounds: &dyn Fn(Var) -> Interval,
    limits: &Limits,
) -> Option<bool> {
    equivalent_with_report(a, b, bounds, limits).0
}

/// [`equivalent`], also returning how saturation ended.
pub fn equivalent_with_report(
    a: Expr,
    b: Expr,
    bounds: &dyn Fn(Var) -> Interval,
    limits: &Limits,
) -> (Option<bool>, Report) {
    let bounds = collect_bounds(&[a, b], bounds);
    if bounds.values().any(|b| b.is_empty()) {
        return (None, Report::skipped("empty variable bounds"));
    }
    let run = runner(bounds, limits)
        .with_expr(&to_rec_expr(a))
        .with_expr(&to_rec_expr(b))
        .with_hook(|r| {
            let (x, y) = (r.roots[0], r.roots[1]);
            if r.egraph.find(x) == r.egraph.find(y) {
                Err("proved equal".to_string())
            } else {
                Ok(())
            }
        });
    let run = run.run(rules());
    let rep = report(&run);
    if rep.contradiction {
        return (None, rep);
    }
    let eg = &run.egraph;
    let (x, y) = (eg.find(run.roots[0]), eg.find(run.roots[1]));
    let answer = if x == y {
        Some(true)
    } else {
        match (eg[x].data.constant, eg[y].data.constant) {
            (Some(p), Some(q)) if p != q => Some(false),
            _ => None,
        }
    };
    (answer, rep)
}

/// Orders commutative operands canonically: sums and constant multiples are flattened and
/// rebuilt in [`crate::linear::Linear`]'s order, the operands of a product of non-constants
/// and of `min`/`max` are sorted.
fn canonical(e: Expr) -> Expr {
    match e.kind() {
        ExprKind::Const(_) | ExprKind::Var(_) => e,
        kind => {
            let (a, b) = e.children().expect("binary node");
            let (mut a, mut b) = (canonical(a), canonical(b));
            match kind {
                ExprKind::Mul(..) if a.as_const().is_none() && b.as_const().is_none() && b < a => {
                    std::mem::swap(&mut a, &mut b);
                }
                ExprKind::Min(..) | ExprKind::Max(..) if b < a => std::mem::swap(&mut a, &mut b),
                _ => {}
            }
            let rebuilt = e.with_children(a, b);
            match rebuilt.kind() {
                ExprKind::Add(..) | ExprKind::Mul(..) => crate::linear::Linear::of(rebuilt)
                    .map(|l| l.to_expr())
                    .unwrap_or(rebuilt),
                _ => rebuilt,
            }
        }
    }
}
