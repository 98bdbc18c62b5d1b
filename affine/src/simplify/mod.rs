//! The range-aware simplifier.
//!
//! It rewrites a map's results and constraints with named rules ([`rules::RULES`]) whose side
//! conditions read the ranges of sub-expressions on the map's domain, and runs to a fixpoint:
//! constraints are normalized (bounds on variables, canonical form, infeasibility, merged
//! congruences, bounds propagated through linear constraints), then results are simplified
//! knowing the constrained ranges. The result is deterministic and idempotent, and never
//! changes a map's value at any point of its domain.

mod constraints;
mod context;
mod divmod;
mod engine;
pub mod rules;
pub mod spec;
mod sums;

use constraints::Normalized;
use context::Ctx;

use crate::{Expr, IndexingMap, Interval, MapForm, Var};

/// Rounds of constraint normalization + result simplification before giving up on a fixpoint.
const MAX_ROUNDS: usize = 32;

/// Simplifies one expression given the bounds of its variables (no constraints).
pub fn simplify_expr(
    e: Expr,
    dims: &[Interval],
    ranges: &[Interval],
    runtimes: &[Interval],
) -> Expr {
    Ctx::new(dims, ranges, runtimes).simplify(e)
}

/// The range of `e` over variables bounded by `dims`, `ranges` and `runtimes` alone: what
/// [`IndexingMap::range_of`] gives on a map with those bounds and no constraints, without
/// building the map (the emitters ask for ranges at every access).
pub fn range_of_expr(
    e: Expr,
    dims: &[Interval],
    ranges: &[Interval],
    runtimes: &[Interval],
) -> Interval {
    // Such a map is KNOWN EMPTY (`IndexingMap::new`): its range is empty.
    if dims
        .iter()
        .chain(ranges)
        .chain(runtimes)
        .any(|i| i.is_empty())
    {
        return Interval::EMPTY;
    }
    Ctx::new(dims, ranges, runtimes).range(e)
}

impl IndexingMap {
    /// Simplifies the map in place; returns whether it changed.
    pub fn simplify(&mut self) -> bool {
        run(self, false).0
    }

    /// Simplifies the map in place and returns the names of the rules that fired, in order.
    pub fn simplify_traced(&mut self) -> Vec<&'static str> {
        run(self, true).1
    }

    /// A sound range of `e` on the map's domain: interval arithmetic over the variable bounds,
    /// tightened wherever a sub-expression is itself constrained. Uses the map as it is (call
    /// [`IndexingMap::simplify`] first for the tightest bounds). `Interval::EMPTY` for
    /// KNOWN EMPTY, `Interval::FULL` for UNDEFINED.
    pub fn range_of(&self, e: Expr) -> Interval {
        match self.form {
            MapForm::KnownEmpty => return Interval::EMPTY,
            MapForm::Undefined => return Interval::FULL,
            MapForm::Normal => {}
        }
        let mut ctx = Ctx::new(&self.dims, &self.ranges, &self.runtimes);
        for c in &self.constraints {
            ctx.assume(c.expr, c.interval);
        }
        ctx.range(e)
    }

    /// A simplified copy.
    pub fn simplified(&self) -> IndexingMap {
        let mut m = self.clone();
        m.simplify();
        m
    }
}

fn take_trace(ctx: &mut Ctx<'_>, into: &mut Vec<&'static str>) {
    if let Some(t) = ctx.trace.take() {
        into.extend(t);
    }
}

fn run(map: &mut IndexingMap, tracing: bool) -> (bool, Vec<&'static str>) {
    let mut trace = Vec::new();
    if map.form != MapForm::Normal {
        return (false, trace);
    }
    // Only constraints change the domain: without them, the results alone tell whether the
    // map changed, and no copy of it is needed.
    let original = (!map.constraints.is_empty()).then(|| map.clone());
    let mut results_changed = false;
    for round in 0..MAX_ROUNDS {
        // Without constraints the pass changes nothing: skip the snapshot and the pass.
        let unchanged = if map.constraints.is_empty() {
            true
        } else {
            let before = (
                map.dims.clone(),
                map.ranges.clone(),
                map.runtimes.clone(),
                map.constraints.clone(),
            );
            if !normalize_constraints(map, tracing, &mut trace) {
                *map = IndexingMap::known_empty();
                return (true, trace);
            }
            before.0 == map.dims
                && before.1 == map.ranges
                && before.2 == map.runtimes
                && before.3 == map.constraints
        };
        // Results were already simplified under exactly this domain.
        if round > 0 && unchanged {
            break;
        }
        let mut ctx = Ctx::new(&map.dims, &map.ranges, &map.runtimes);
        if tracing {
            ctx.trace = Some(Vec::new());
        }
        for c in &map.constraints {
            ctx.assume(c.expr, c.interval);
        }
        // In place: the context borrows only the domain's fields.
        for r in &mut map.results {
            let s = ctx.simplify(*r);
            results_changed |= s != *r;
            *r = s;
        }
        take_trace(&mut ctx, &mut trace);
        drop(ctx);
        // The constraint pass is a deterministic function of the domain: on an unchanged
        // domain the next round's pass would change nothing again, so the loop is done. (A
        // traced run repeats the pass, whose rule firings are part of the trace.)
        if unchanged && !tracing {
            break;
        }
    }
    let changed = match original {
        Some(original) => *map != original,
        None => results_changed,
    };
    (changed, trace)
}

/// One pass over the constraints. Returns false if the domain is empty.
fn normalize_constraints(
    map: &mut IndexingMap,
    tracing: bool,
    trace: &mut Vec<&'static str>,
) -> bool {
    if map.constraints.is_empty() {
        return true;
    }
    let mut ctx = Ctx::new(&map.dims, &map.ranges, &map.runtimes);
    if tracing {
        ctx.trace = Some(Vec::new());
    }
    let mut kept = Vec::new();
    let mut bounds: Vec<(Var, Interval)> = Vec::new();
    let mut feasible = true;
    for c in &map.constraints {
        let e = ctx.simplify(c.expr);
        match constraints::normalize(&mut ctx, e, c.interval) {
            Normalized::Drop => {}
            Normalized::Empty => feasible = false,
            Normalized::Bound(v, i) => bounds.push((v, i)),
            Normalized::Keep(e, i) => kept.push((e, i)),
        }
    }
    let merged = if feasible {
        constraints::merge_congruences(&mut ctx, kept)
    } else {
        None
    };
    let Some(kept) = merged else {
        take_trace(&mut ctx, trace);
        return false;
    };
    for (e, i) in &kept {
        bounds.extend(constraints::propagate(&mut ctx, *e, *i));
    }
    take_trace(&mut ctx, trace);
    // The context borrows the bounds it read; it is done before they change.
    drop(ctx);
    for (v, i) in bounds {
        let slot = &mut map.vars_of_mut(v.kind)[v.index as usize];
        *slot = slot.intersect(i);
        if slot.is_empty() {
            return false;
        }
    }
    map.replace_constraints(kept);
    map.form == MapForm::Normal
}
