//! The simplifier's view of a domain: variable bounds, known ranges of constrained
//! expressions, memoized ranges and rewrites, and the trace of rules that fired.

use std::cell::RefCell;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use crate::{Expr, ExprKind, Interval, Var, VarKind};

/// Simplification state for one domain.
pub(crate) struct Ctx<'a> {
    bounds: [&'a [Interval]; 3],
    /// Ranges known for whole expressions (from constraints `e in [lo, hi]`).
    known: FxHashMap<Expr, Interval>,
    ranges: FxHashMap<Expr, Interval>,
    pub(crate) memo: FxHashMap<Expr, Expr>,
    /// Names of the rules that fired, in order, when tracing.
    pub(crate) trace: Option<Vec<&'static str>>,
    /// Rewrites left before the simplifier stops rewriting (a guard against cycles).
    pub(crate) fuel: u32,
    /// Current nesting of rewrites-of-rewrites.
    pub(crate) depth: u32,
}

/// Memo tables of finished contexts, kept (cleared, with their capacity) for the next
/// context on this thread: allocating and growing fresh tables for every map cost about a
/// tenth of the simplifier's time.
type Tables = (
    FxHashMap<Expr, Interval>,
    FxHashMap<Expr, Interval>,
    FxHashMap<Expr, Expr>,
);

thread_local! {
    static TABLES: RefCell<Vec<Tables>> = const { RefCell::new(Vec::new()) };
}

/// Tables that grew past this many entries are dropped rather than pooled, so one huge map
/// does not pin its memory for the thread's lifetime.
const POOLED_CAPACITY_LIMIT: usize = 4096;

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        let mut tables = (
            std::mem::take(&mut self.known),
            std::mem::take(&mut self.ranges),
            std::mem::take(&mut self.memo),
        );
        if tables
            .0
            .capacity()
            .max(tables.1.capacity())
            .max(tables.2.capacity())
            > POOLED_CAPACITY_LIMIT
        {
            return;
        }
        tables.0.clear();
        tables.1.clear();
        tables.2.clear();
        // During thread teardown the pool may already be gone; then the tables just drop.
        let _ = TABLES.try_with(|pool| {
            let mut pool = pool.borrow_mut();
            if pool.len() < 8 {
                pool.push(tables);
            }
        });
    }
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(
        dims: &'a [Interval],
        ranges: &'a [Interval],
        runtimes: &'a [Interval],
    ) -> Self {
        let (known, ranges_memo, memo) = TABLES
            .with(|pool| pool.borrow_mut().pop())
            .unwrap_or_default();
        Ctx {
            bounds: [dims, ranges, runtimes],
            known,
            ranges: ranges_memo,
            memo,
            trace: None,
            fuel: 100_000,
            depth: 0,
        }
    }

    /// Declares that `e` only takes values in `interval` on the domain.
    pub(crate) fn assume(&mut self, e: Expr, interval: Interval) {
        let slot = self.known.entry(e).or_insert(Interval::FULL);
        *slot = slot.intersect(interval);
        self.ranges.clear();
        self.memo.clear();
    }

    pub(crate) fn var_bounds(&self, v: Var) -> Interval {
        let k = match v.kind {
            VarKind::Dim => 0,
            VarKind::Range => 1,
            VarKind::Runtime => 2,
        };
        // An undeclared variable has no known bounds.
        self.bounds[k]
            .get(v.index as usize)
            .copied()
            .unwrap_or(Interval::FULL)
    }

    /// A sound range of `e` on the domain.
    // Inlined: most queries are leaves (two in three), answered here without a call.
    #[inline]
    pub(crate) fn range(&mut self, e: Expr) -> Interval {
        // Leaves and scaled leaves are cheaper to recompute than to memoize.
        match e.kind() {
            ExprKind::Const(c) => Interval::point(c),
            ExprKind::Var(v) => self.var_bounds(v),
            ExprKind::Mul(a, k) => match (a.kind(), k.as_const()) {
                (ExprKind::Var(v), Some(k)) => self.var_bounds(v).mul(Interval::point(k)),
                _ => self.composite_range(e),
            },
            _ => self.composite_range(e),
        }
    }

    /// The memoized range of a node that is not a leaf or a scaled leaf.
    #[inline(never)]
    fn composite_range(&mut self, e: Expr) -> Interval {
        if let Some(r) = self.ranges.get(&e) {
            return *r;
        }
        if self.known.is_empty() && matches!(e.kind(), ExprKind::Add(..)) {
            let r = self.spine_range(e);
            self.ranges.insert(e, r);
            return r;
        }
        let natural = match e.kind() {
            ExprKind::Const(c) => Interval::point(c),
            ExprKind::Var(v) => self.var_bounds(v),
            ExprKind::Add(a, b) => self.range(a).add(self.range(b)),
            ExprKind::Mul(a, b) => self.range(a).mul(self.range(b)),
            ExprKind::FloorDiv(a, b) => self.range(a).floor_div(self.range(b)),
            ExprKind::CeilDiv(a, b) => self.range(a).ceil_div(self.range(b)),
            ExprKind::Mod(a, b) => self.range(a).modulo(self.range(b)),
            ExprKind::Min(a, b) => self.range(a).min(self.range(b)),
            ExprKind::Max(a, b) => self.range(a).max(self.range(b)),
        };
        let r = match self.known.get(&e) {
            // Intersecting with an empty range would claim more than we know; keep natural.
            Some(k) if !natural.intersect(*k).is_empty() => natural.intersect(*k),
            _ => natural,
        };
        self.ranges.insert(e, r);
        r
    }

    /// The range of a sum when no sub-expression has a known range: the ranges of the
    /// spine's summands added from the innermost outward, exactly as the recursion over the
    /// nested `Add` nodes would (saturating addition is not associative), without memoizing
    /// every prefix of the spine on the way.
    // Kept out of line: inlined, its buffer made every (mostly leaf) range query pay for a
    // larger stack frame.
    #[inline(never)]
    fn spine_range(&mut self, e: Expr) -> Interval {
        let mut summands: SmallVec<[Expr; 8]> = SmallVec::new();
        let mut spine = e;
        while let ExprKind::Add(a, b) = spine.kind() {
            summands.push(b);
            spine = a;
        }
        let mut acc = self.range(spine);
        for &b in summands.iter().rev() {
            acc = acc.add(self.range(b));
        }
        acc
    }

    /// Records that `rule` fired and consumes one unit of fuel; false when out of fuel.
    pub(crate) fn fire(&mut self, rule: &'static str) -> bool {
        if self.fuel == 0 {
            return false;
        }
        self.fuel -= 1;
        if let Some(t) = &mut self.trace {
            t.push(rule);
        }
        true
    }
}
