//! Rows as vector lanes: a loop over independent output rows whose body is a chain of
//! short reductions runs that chain one step at a time for all its rows.
//!
//! The elementwise emitter computes each output element on its own: where a fused kernel
//! reduces short rows (a softmax or layer norm over 8 to 16 elements, GroupNorm over tiny
//! groups, per-head sums over a head dimension of 8 to 16, chains of them), each row walks
//! its reductions as serial scalar steps (a sum of 8 is 8 dependent adds; an `exp`
//! between two sums runs as a scalar call), and the C compiler vectorizes none of it: the
//! reduced loops are too short and carry their accumulator, and the row loop around them
//! holds loops. The rows are independent, though (the loop is one of the kernel's output
//! loops: each iteration computes and stores its own output elements). So the row loop is
//! distributed over the statements of its body and moved inside the reduced loops: each
//! straight run of statements becomes a loop over the rows (the lanes), every scalar that
//! crosses from one run to another lives in a local array with one element per row, and a
//! reduced loop runs once around the lanes of its body. A sum of 8 over 16 rows becomes 8
//! vector adds of 16 lanes, and the `exp` one vector call. Each row still makes the same
//! steps in the same order (only steps of different rows interleave), so every result is
//! bit for bit what it was: XLA's and the evaluator's order where it was theirs.
//!
//! Only short reduced loops (at most [`MAX_REDUCED`] each, [`MAX_CHAIN`] nested): a long
//! reduction has its own partial accumulators across the row (see `elemental/reduction.rs`)
//! and reads it contiguously, where lanes across rows would read it with a stride.
//! Many rows are strip-mined into chunks of [`STRIP`] lanes, the remainder rows running
//! as before.

use std::collections::{BTreeMap, BTreeSet};

use affine::{Expr, Interval, Var};

use super::builder::Builder;
use crate::kir::{LoopKind, Stmt, Value, VarId};

/// Fewest rows worth running as lanes (a vector of f32 is 8 lanes; 4 still overlap the
/// chains of 4 rows).
const MIN_ROWS: i64 = 4;
/// Most rows kept as lanes without strip-mining.
const MAX_LANES: i64 = 64;
/// Lanes per chunk where the rows exceed [`MAX_LANES`].
const STRIP: i64 = 32;
/// Longest reduced loop moved outside the rows.
pub(crate) const MAX_REDUCED: i64 = 16;
/// Most steps of one nest of reduced loops (the product of their extents).
const MAX_CHAIN: i64 = 256;
/// Most bytes of lane arrays per kernel (they live in the block's stack frame).
const MAX_LANE_BYTES: i64 = 32 * 1024;

/// Rewrites the innermost loops over `rows` (loops of the output nest: independent
/// iterations, each storing its own outputs) in `body` whose bodies hold short reduced
/// loops, so the reduced loops run outside the rows ([the module docs](self)). Loops that
/// do not qualify stay as they are.
pub(super) fn rows_as_lanes(b: &mut Builder<'_>, body: Vec<Stmt>, rows: &[Var]) -> Vec<Stmt> {
    walk(b, body, rows).0
}

/// [`rows_as_lanes`] over a statement list; also says whether some loop was rewritten
/// (its enclosing row loops are then left alone).
fn walk(b: &mut Builder<'_>, stmts: Vec<Stmt>, rows: &[Var]) -> (Vec<Stmt>, bool) {
    let mut out = Vec::with_capacity(stmts.len());
    let mut any = false;
    for s in stmts {
        match s {
            Stmt::Loop {
                kind,
                var,
                lo,
                hi,
                body,
            } => {
                let (body, inner) = walk(b, body, rows);
                any |= inner;
                if !inner && rows.contains(&var) && kind != LoopKind::Threads {
                    if let Some(lanes) = as_lanes(b, (var, lo, hi, kind), &body, rows) {
                        out.extend(lanes);
                        any = true;
                        continue;
                    }
                }
                out.push(Stmt::Loop {
                    kind,
                    var,
                    lo,
                    hi,
                    body,
                });
            }
            Stmt::If {
                guard,
                body,
                else_body,
            } => {
                let (body, a) = walk(b, body, rows);
                let (else_body, e) = walk(b, else_body, rows);
                any |= a || e;
                out.push(Stmt::If {
                    guard,
                    body,
                    else_body,
                });
            }
            other => out.push(other),
        }
    }
    (out, any)
}

/// Whether `stmts` only compute, bind runtime indices, branch, loop and store to buffers:
/// no local arrays (a row's scratch, which the rows would share), no atomics, barriers,
/// shuffles or loops over threads. A runtime index is bound per row; [`lanes_of`] refuses
/// the rewrite when one is read outside the run that binds it.
fn plain(stmts: &[Stmt]) -> bool {
    stmts.iter().all(|s| match s {
        Stmt::Comment(_) => true,
        Stmt::Loop { kind, body, .. } => *kind != LoopKind::Threads && plain(body),
        Stmt::Let { value, .. } | Stmt::Decl { value, .. } | Stmt::Assign { value, .. } => {
            !reads_local(value)
        }
        Stmt::Store { value, .. } => !reads_local(value),
        Stmt::If {
            body, else_body, ..
        } => plain(body) && plain(else_body),
        Stmt::BindIndex { value, .. } => !reads_local(value),
        Stmt::LocalStore { .. } | Stmt::Barrier | Stmt::Shuffle { .. } | Stmt::Atomic { .. } => {
            false
        }
    })
}

/// Whether a condition in `stmts` (an `if` or a conditional value) depends on the row
/// variable `d`: a lane loop would branch per lane, which the C compiler leaves scalar
/// (a segmented cumulative sum's window guards ran 1.5x slower as lanes).
fn branches_on(stmts: &[Stmt], d: Var) -> bool {
    let guard_on = |g: &crate::kir::Guard| g.conds.iter().any(|(e, _, _)| e.may_use(d));
    stmts.iter().any(|s| match s {
        Stmt::If {
            guard,
            body,
            else_body,
        } => guard_on(guard) || branches_on(body, d) || branches_on(else_body, d),
        Stmt::Loop { body, .. } => branches_on(body, d),
        Stmt::Let { value, .. }
        | Stmt::Decl { value, .. }
        | Stmt::Assign { value, .. }
        | Stmt::Store { value, .. } => cond_on(value, d),
        _ => false,
    })
}

/// Whether a conditional value in `v` has a condition depending on `d`.
fn cond_on(v: &Value, d: Var) -> bool {
    match v {
        Value::Cond(g, a, b) => {
            g.conds.iter().any(|(e, _, _)| e.may_use(d)) || cond_on(a, d) || cond_on(b, d)
        }
        Value::Const(..)
        | Value::Var(..)
        | Value::Index(_)
        | Value::Load { .. }
        | Value::LocalLoad { .. } => false,
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => cond_on(a, d),
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) => cond_on(a, d) || cond_on(b, d),
        Value::Select(p, a, b) => cond_on(p, d) || cond_on(a, d) || cond_on(b, d),
    }
}

/// Whether `v` reads a local array.
fn reads_local(v: &Value) -> bool {
    match v {
        Value::LocalLoad { .. } => true,
        Value::Const(..) | Value::Var(..) | Value::Index(_) | Value::Load { .. } => false,
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
            reads_local(a)
        }
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => {
            reads_local(a) || reads_local(b)
        }
        Value::Select(p, a, b) => reads_local(p) || reads_local(a) || reads_local(b),
    }
}

/// The reduced loops of a row body, as [`distribute`] will move them: loops over variables
/// that are not rows, reached through other such loops. `Some(true)` when there is at
/// least one and all are short ([`MAX_REDUCED`], [`MAX_CHAIN`] nested) with no row loop
/// inside; `Some(false)` when there is none; `None` when one is too long.
fn short_reductions(stmts: &[Stmt], rows: &[Var], chain: i64) -> Option<bool> {
    let mut found = false;
    for s in stmts {
        if let Stmt::Loop {
            var, lo, hi, body, ..
        } = s
        {
            if rows.contains(var) {
                continue;
            }
            let n = hi - lo + 1;
            if n > MAX_REDUCED || chain * n > MAX_CHAIN || has_loop_over(body, rows) {
                return None;
            }
            short_reductions(body, rows, chain * n)?;
            found = true;
        }
    }
    Some(found)
}

/// Whether `stmts` hold a loop over one of `rows` at any depth.
fn has_loop_over(stmts: &[Stmt], rows: &[Var]) -> bool {
    stmts.iter().any(|s| match s {
        Stmt::Loop { var, body, .. } => rows.contains(var) || has_loop_over(body, rows),
        Stmt::If {
            body, else_body, ..
        } => has_loop_over(body, rows) || has_loop_over(else_body, rows),
        _ => false,
    })
}

/// The row loop `for d in [lo, hi]` (of `kind`) over `body`, its reduced loops outside
/// the rows, or `None` when it does not qualify (see [`rows_as_lanes`]).
fn as_lanes(
    b: &mut Builder<'_>,
    (d, lo, hi, kind): (Var, i64, i64, LoopKind),
    body: &[Stmt],
    rows: &[Var],
) -> Option<Vec<Stmt>> {
    let n = hi - lo + 1;
    if n < MIN_ROWS
        || !plain(body)
        || branches_on(body, d)
        || short_reductions(body, rows, 1) != Some(true)
    {
        return None;
    }
    if n <= MAX_LANES {
        let lane = b.simplify(Expr::var(d) - Expr::constant(lo));
        return lanes_of(b, body.to_vec(), rows, (d, lo, hi), lane, n);
    }
    // Chunks of STRIP rows: row `lo + c * STRIP + l` is lane `l` of chunk `c`.
    let chunks = n / STRIP;
    let ranges_before = b.ranges.len();
    let c = b.new_range(Interval::new(0, chunks - 1));
    let l = b.new_range(Interval::new(0, STRIP - 1));
    let row = Expr::constant(lo) + Expr::var(c) * Expr::constant(STRIP) + Expr::var(l);
    let mut strip = body.to_vec();
    crate::kir::rewrite_exprs(&mut strip, &mut |e| {
        let e = e.substitute(&mut |v| (v == d).then_some(row));
        b.simplify(e)
    });
    let Some(lanes) = lanes_of(b, strip, rows, (l, 0, STRIP - 1), Expr::var(l), STRIP) else {
        b.ranges.truncate(ranges_before);
        return None;
    };
    let mut out = vec![Stmt::serial_loop(c, 0, chunks - 1, lanes)];
    if chunks * STRIP < n {
        out.push(Stmt::Loop {
            kind,
            var: d,
            lo: lo + chunks * STRIP,
            hi,
            body: body.to_vec(),
        });
    }
    Some(out)
}

/// `body` (one row's statements, in the lane loop's variable) distributed over lane loops
/// `for lane_var in [a, z]` (`width` lanes, lane number `lane`), its reduced loops outside
/// them, every scalar defined in one lane loop and used in another kept in a local array
/// of `width` elements. `None` when those arrays would exceed [`MAX_LANE_BYTES`].
fn lanes_of(
    b: &mut Builder<'_>,
    body: Vec<Stmt>,
    rows: &[Var],
    loop_var: (Var, i64, i64),
    lane: Expr,
    width: i64,
) -> Option<Vec<Stmt>> {
    let mut out = distribute(body, rows, loop_var);
    if bindings_cross(&out, loop_var.0) {
        return None;
    }
    // Which lane loops define and use each scalar.
    let mut defined = BTreeSet::new();
    let mut seen: BTreeMap<VarId, BTreeSet<usize>> = BTreeMap::new();
    let mut g = 0usize;
    visit_lane_loops(&out, loop_var.0, &mut |body| {
        scalars(body, &mut defined, &mut |v| {
            seen.entry(v).or_default().insert(g);
        });
        g += 1;
    });
    let crossing: Vec<VarId> = seen
        .into_iter()
        .filter(|(v, gs)| gs.len() > 1 && defined.contains(v))
        .map(|(v, _)| v)
        .collect();
    let bytes: i64 = crossing
        .iter()
        .map(|v| b.vars[v.0 as usize].byte_width() as i64 * width)
        .sum();
    if bytes > MAX_LANE_BYTES {
        return None;
    }
    let mut arrays = BTreeMap::new();
    for v in crossing {
        let ty = b.vars[v.0 as usize];
        let local = b.new_local(format!("v{} {}", v.0, crate::kir::ROW_LANES), ty, width);
        arrays.insert(v, (local, ty));
    }
    if !arrays.is_empty() {
        in_lane_loops(&mut out, loop_var.0, &mut |body| {
            privatize(body, &arrays, lane);
        });
    }
    Some(out)
}

/// Moves the lane loop over `loop_var` (`(var, first, last)`) inside the reduced loops of
/// `stmts`: each straight run of other statements becomes one lane loop; a reduced loop
/// keeps its bounds around its own body, distributed the same way.
fn distribute(stmts: Vec<Stmt>, rows: &[Var], loop_var: (Var, i64, i64)) -> Vec<Stmt> {
    let (var, lo, hi) = loop_var;
    let mut out = Vec::new();
    let mut run = Vec::new();
    let flush = |run: &mut Vec<Stmt>, out: &mut Vec<Stmt>| {
        if !run.is_empty() {
            out.push(Stmt::Loop {
                kind: LoopKind::Vectorized,
                var,
                lo,
                hi,
                body: std::mem::take(run),
            });
        }
    };
    for s in stmts {
        match s {
            Stmt::Loop {
                kind,
                var: r,
                lo: rlo,
                hi: rhi,
                body,
            } if !rows.contains(&r) => {
                flush(&mut run, &mut out);
                out.push(Stmt::Loop {
                    kind,
                    var: r,
                    lo: rlo,
                    hi: rhi,
                    body: distribute(body, rows, loop_var),
                });
            }
            other => run.push(other),
        }
    }
    flush(&mut run, &mut out);
    out
}

/// Calls `f` on the body of every lane loop (a loop over `lane_var`) in `stmts`, in order.
fn visit_lane_loops(stmts: &[Stmt], lane_var: Var, f: &mut dyn FnMut(&[Stmt])) {
    for s in stmts {
        if let Stmt::Loop { var, body, .. } = s {
            if *var == lane_var {
                f(body);
            } else {
                visit_lane_loops(body, lane_var, f);
            }
        }
    }
}

/// Whether a runtime index bound in one lane loop of `stmts` is read in another. A
/// binding holds one row's value (a gather's index, say) and is rebound by the next row:
/// read in a later lane loop it would hold the last lane's value for every lane. Kept
/// within its own run (a gather inside a short reduced loop, as a tree ensemble's per-level
/// feature test), each lane binds and reads its own.
fn bindings_cross(stmts: &[Stmt], lane_var: Var) -> bool {
    let mut bodies: Vec<Vec<Stmt>> = Vec::new();
    visit_lane_loops(stmts, lane_var, &mut |body| bodies.push(body.to_vec()));
    let bound: Vec<Vec<Var>> = bodies.iter().map(|b| bound_indices(b)).collect();
    bound.iter().enumerate().any(|(g, vars)| {
        !vars.is_empty()
            && bodies.iter_mut().enumerate().any(|(h, body)| {
                let mut reads = false;
                if h != g {
                    crate::kir::rewrite_exprs(body, &mut |e| {
                        reads |= vars.iter().any(|&v| e.may_use(v));
                        e
                    });
                }
                reads
            })
    })
}

/// The runtime index variables `stmts` bind, at any depth.
fn bound_indices(stmts: &[Stmt]) -> Vec<Var> {
    let mut out = Vec::new();
    for s in stmts {
        match s {
            Stmt::BindIndex { var, .. } => out.push(*var),
            Stmt::Loop { body, .. } => out.extend(bound_indices(body)),
            Stmt::If {
                body, else_body, ..
            } => {
                out.extend(bound_indices(body));
                out.extend(bound_indices(else_body));
            }
            _ => {}
        }
    }
    out
}

/// [`visit_lane_loops`] with mutable bodies.
fn in_lane_loops(stmts: &mut [Stmt], lane_var: Var, f: &mut dyn FnMut(&mut Vec<Stmt>)) {
    for s in stmts {
        if let Stmt::Loop { var, body, .. } = s {
            if *var == lane_var {
                f(body);
            } else {
                in_lane_loops(body, lane_var, f);
            }
        }
    }
}

/// Adds the scalars `stmts` define to `defined` and calls `touch` on every scalar they
/// define, assign or read.
fn scalars(stmts: &[Stmt], defined: &mut BTreeSet<VarId>, touch: &mut dyn FnMut(VarId)) {
    for s in stmts {
        match s {
            Stmt::Let { var, value } | Stmt::Decl { var, value } => {
                defined.insert(*var);
                touch(*var);
                value_vars(value, touch);
            }
            Stmt::Assign { var, value } => {
                touch(*var);
                value_vars(value, touch);
            }
            Stmt::Store { value, .. }
            | Stmt::LocalStore { value, .. }
            | Stmt::BindIndex { value, .. } => value_vars(value, touch),
            Stmt::Loop { body, .. } => scalars(body, defined, touch),
            Stmt::If {
                body, else_body, ..
            } => {
                scalars(body, defined, touch);
                scalars(else_body, defined, touch);
            }
            // Refused by `plain` before distribution.
            Stmt::Comment(_) | Stmt::Barrier | Stmt::Shuffle { .. } | Stmt::Atomic { .. } => {}
        }
    }
}

/// Calls `touch` on every scalar `v` reads.
fn value_vars(v: &Value, touch: &mut dyn FnMut(VarId)) {
    match v {
        Value::Var(id, _) => touch(*id),
        Value::Const(..) | Value::Index(_) | Value::Load { .. } | Value::LocalLoad { .. } => {}
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
            value_vars(a, touch)
        }
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => {
            value_vars(a, touch);
            value_vars(b, touch);
        }
        Value::Select(p, a, b) => {
            value_vars(p, touch);
            value_vars(a, touch);
            value_vars(b, touch);
        }
    }
}

/// Rewrites the scalars of `arrays` in `stmts` (a lane loop's body) as their lane of
/// their local array: definitions and assignments store it, reads load it.
fn privatize(
    stmts: &mut [Stmt],
    arrays: &BTreeMap<VarId, (usize, crate::kir::ScalarType)>,
    lane: Expr,
) {
    for s in stmts.iter_mut() {
        match s {
            Stmt::Let { var, value } | Stmt::Decl { var, value } | Stmt::Assign { var, value } => {
                lane_reads(value, arrays, lane);
                if let Some(&(local, _)) = arrays.get(var) {
                    *s = Stmt::LocalStore {
                        local,
                        offset: lane,
                        value: std::mem::replace(value, Value::Index(lane)),
                    };
                }
            }
            Stmt::Store { value, .. }
            | Stmt::LocalStore { value, .. }
            | Stmt::BindIndex { value, .. } => lane_reads(value, arrays, lane),
            Stmt::Loop { body, .. } => privatize(body, arrays, lane),
            Stmt::If {
                body, else_body, ..
            } => {
                privatize(body, arrays, lane);
                privatize(else_body, arrays, lane);
            }
            Stmt::Comment(_) | Stmt::Barrier | Stmt::Shuffle { .. } | Stmt::Atomic { .. } => {}
        }
    }
}

/// Rewrites reads of the scalars of `arrays` in `v` as loads of their lane.
fn lane_reads(
    v: &mut Value,
    arrays: &BTreeMap<VarId, (usize, crate::kir::ScalarType)>,
    lane: Expr,
) {
    match v {
        Value::Var(id, _) => {
            if let Some(&(local, ty)) = arrays.get(id) {
                *v = Value::LocalLoad {
                    local,
                    offset: lane,
                    ty,
                };
            }
        }
        Value::Const(..) | Value::Index(_) | Value::Load { .. } | Value::LocalLoad { .. } => {}
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
            lane_reads(a, arrays, lane)
        }
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => {
            lane_reads(a, arrays, lane);
            lane_reads(b, arrays, lane);
        }
        Value::Select(p, a, b) => {
            lane_reads(p, arrays, lane);
            lane_reads(a, arrays, lane);
            lane_reads(b, arrays, lane);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kir::ScalarType;

    /// A lane loop over `d0` binding `rt0` to a load, then (in `second`'s lane loop or the
    /// same one) a store at an offset read through `rt0`.
    fn lanes(same_run: bool) -> Vec<Stmt> {
        let (d, rt) = (Var::dim(0), Var::runtime(0));
        let bind = Stmt::BindIndex {
            var: rt,
            value: Value::Load {
                buf: 0,
                offset: Expr::var(d),
                ty: ScalarType::S32,
            },
        };
        let store = Stmt::Store {
            buf: 1,
            offset: Expr::var(d),
            value: Value::Load {
                buf: 2,
                offset: Expr::var(rt),
                ty: ScalarType::F32,
            },
        };
        let lane = |body| Stmt::Loop {
            kind: LoopKind::Vectorized,
            var: d,
            lo: 0,
            hi: 31,
            body,
        };
        if same_run {
            vec![lane(vec![bind, store])]
        } else {
            vec![
                lane(vec![bind]),
                Stmt::serial_loop(Var::range(0), 0, 3, vec![lane(vec![store])]),
            ]
        }
    }

    #[test]
    fn a_binding_read_in_its_own_lane_loop_does_not_cross() {
        assert!(!bindings_cross(&lanes(true), Var::dim(0)));
    }

    #[test]
    fn a_binding_read_in_a_later_lane_loop_crosses() {
        assert!(bindings_cross(&lanes(false), Var::dim(0)));
    }
}
