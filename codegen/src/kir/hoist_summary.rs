//! What one statement touches, summarized once for loop-invariant code motion
//! (`hoist.rs`): the variables it mentions, the scalars, local arrays and runtime variables
//! it reads before binding them and those it binds, stores, barriers, and the reads of
//! written buffers that keep it in its loop.

use std::collections::{HashMap, HashSet};

use affine::{Expr, Var, VarKind};

use super::kernel::{Access, BufferParam, Local, LoopKind, MemorySpace, Stmt};
use super::value::{Guard, Value, VarId};

/// Something a statement reads or writes besides buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Slot {
    Scalar(VarId),
    Local(usize),
    Runtime(u32),
}

/// What one statement touches, whatever the loop it is asked about: computed once per
/// statement, from its children's summaries for a loop or an `if`, and carried with the
/// statement as it moves out of loop after loop. A chain of fused reductions nests loops
/// hundreds deep and each loop's invariants leave it one level at a time, so a walk of
/// every statement's subtree at every level made hoisting quadratic in the depth (a
/// quarter of a 10,000-instruction module's compile).
#[derive(Default)]
pub(super) struct Summary {
    /// Every variable its expressions mention and every loop variable it declares: it
    /// depends on a loop when this holds the loop's variable.
    pub(super) vars: HashSet<Var>,
    pub(super) stores: bool,
    pub(super) reads_written_buffer: bool,
    /// A barrier or a warp shuffle at any depth ([`super::kernel::has_barrier`]).
    pub(super) barrier: bool,
    /// The values it reads from before it (not those it binds itself first).
    pub(super) reads: HashSet<Slot>,
    pub(super) writes: HashSet<Slot>,
    /// Scalars, runtime variables and whole local arrays it binds on every path: a read
    /// of one after it is internal to an enclosing statement.
    pub(super) bound: HashSet<Slot>,
    /// The scalars it defines (`let`, `var`) at any depth, of those the kernel defines more
    /// than once (see [`Cx::multi`]).
    pub(super) defines: HashSet<VarId>,
}

/// The kernel a body is hoisted in.
pub(super) struct Cx<'a> {
    pub(super) buffers: &'a [BufferParam],
    pub(super) locals: &'a [Local],
    /// Scalars defined by more than one statement of the kernel (a loop copied by
    /// unswitching or splitting). Only these can be defined around a statement as well
    /// as inside it ([`Taken`]); a kernel without any skips that bookkeeping.
    pub(super) multi: HashSet<VarId>,
}

impl Summary {
    pub(super) fn expr(&mut self, e: Expr) {
        for v in e.variables() {
            if v.kind == VarKind::Runtime {
                self.read(Slot::Runtime(v.index));
            }
            self.vars.insert(v);
        }
    }

    pub(super) fn read(&mut self, slot: Slot) {
        if !self.bound.contains(&slot) {
            self.reads.insert(slot);
        }
    }

    /// A write of a whole scalar, runtime variable or local array (a local array's
    /// element store is partial: its other elements keep their values, so it binds
    /// nothing).
    pub(super) fn bind(&mut self, slot: Slot) {
        self.writes.insert(slot);
        self.bound.insert(slot);
    }

    pub(super) fn guard(&mut self, g: &Guard) {
        for (e, _, _) in &g.conds {
            self.expr(*e);
        }
    }

    pub(super) fn value(&mut self, v: &Value, cx: &Cx<'_>) {
        match v {
            Value::Const(..) => {}
            Value::Var(id, _) => self.read(Slot::Scalar(*id)),
            Value::Index(e) => self.expr(*e),
            Value::Load { buf, offset, .. } => {
                if cx.buffers.get(*buf).is_none_or(|b| b.access != Access::In) {
                    self.reads_written_buffer = true;
                }
                self.expr(*offset);
            }
            Value::LocalLoad { local, offset, .. } => {
                self.read(Slot::Local(*local));
                self.expr(*offset);
            }
            Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
                self.value(a, cx)
            }
            Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) => {
                self.value(a, cx);
                self.value(b, cx);
            }
            Value::Select(p, a, b) => {
                self.value(p, cx);
                self.value(a, cx);
                self.value(b, cx);
            }
            Value::Cond(g, a, b) => {
                self.guard(g);
                self.value(a, cx);
                self.value(b, cx);
            }
        }
    }

    /// Everything but the binds of `inner`, which runs after what `self` holds (its reads
    /// of values `self` binds are internal).
    pub(super) fn absorb(&mut self, inner: Summary) {
        let bound = &self.bound;
        self.reads
            .extend(inner.reads.into_iter().filter(|s| !bound.contains(s)));
        self.writes.extend(inner.writes);
        self.vars.extend(inner.vars);
        self.defines.extend(inner.defines);
        self.stores |= inner.stores;
        self.reads_written_buffer |= inner.reads_written_buffer;
        self.barrier |= inner.barrier;
    }

    /// `next` run after what `self` holds, in the same scope: its binds hold after it.
    pub(super) fn then(&mut self, mut next: Summary) {
        let bound = std::mem::take(&mut next.bound);
        self.absorb(next);
        self.bound.extend(bound);
    }

    /// The statements of a block, in order, as one.
    pub(super) fn block(parts: impl IntoIterator<Item = Summary>) -> Summary {
        let mut s = Summary::default();
        for p in parts {
            s.then(p);
        }
        s
    }

    /// A loop over `var` in `lo..=hi` whose body's statements are summarized by `parts`
    /// (a loop runs at least once, so what its body binds is bound after it).
    pub(super) fn of_loop(
        cx: &Cx<'_>,
        (kind, var, lo, hi): (LoopKind, Var, i64, i64),
        body: &[Stmt],
        parts: impl IntoIterator<Item = Summary>,
    ) -> Summary {
        let mut s = Summary::block(parts);
        s.vars.insert(var);
        if let Some(local) = overwritten_local(cx, kind, var, (lo, hi), body) {
            s.bind(Slot::Local(local));
        }
        s
    }

    /// An `if` with branches summarized by `then_parts` and `else_parts`: what one branch
    /// binds is not bound after the `if`.
    pub(super) fn of_if(
        guard: &Guard,
        then_parts: impl IntoIterator<Item = Summary>,
        else_parts: impl IntoIterator<Item = Summary>,
    ) -> Summary {
        let mut s = Summary::default();
        s.guard(guard);
        s.absorb(Summary::block(then_parts));
        s.absorb(Summary::block(else_parts));
        s
    }

    /// The summary of `s`, walking it whole.
    pub(super) fn of(s: &Stmt, cx: &Cx<'_>) -> Summary {
        let mut out = Summary::default();
        match s {
            Stmt::Comment(_) => {}
            Stmt::Loop {
                kind,
                var,
                lo,
                hi,
                body,
            } => {
                let parts = body.iter().map(|t| Summary::of(t, cx));
                return Summary::of_loop(cx, (*kind, *var, *lo, *hi), body, parts);
            }
            Stmt::If {
                guard,
                body,
                else_body,
            } => {
                let then_parts = body.iter().map(|t| Summary::of(t, cx));
                let else_parts = else_body.iter().map(|t| Summary::of(t, cx));
                return Summary::of_if(guard, then_parts, else_parts);
            }
            Stmt::Let { var, value } | Stmt::Decl { var, value } => {
                out.value(value, cx);
                out.bind(Slot::Scalar(*var));
                if cx.multi.contains(var) {
                    out.defines.insert(*var);
                }
            }
            Stmt::Assign { var, value } => {
                out.value(value, cx);
                out.bind(Slot::Scalar(*var));
            }
            // A shuffle is a meeting point of the warp's threads: it never moves either.
            Stmt::Shuffle { var, value, .. } => {
                out.value(value, cx);
                out.bind(Slot::Scalar(*var));
                out.stores = true;
                out.barrier = true;
            }
            Stmt::BindIndex { var, value } => {
                out.value(value, cx);
                out.bind(Slot::Runtime(var.index));
            }
            Stmt::LocalStore {
                local,
                offset,
                value,
            } => {
                out.expr(*offset);
                out.value(value, cx);
                out.writes.insert(Slot::Local(*local));
            }
            // A barrier orders the block's threads: it never moves.
            Stmt::Barrier => {
                out.stores = true;
                out.barrier = true;
            }
            Stmt::Store { offset, value, .. } => {
                out.stores = true;
                out.expr(*offset);
                out.value(value, cx);
            }
            // An atomic update stores: it never moves. Its body binds only in its own
            // scope (the printers wrap it in one), where its value is read. Scalars it
            // defines are not counted (its scope is its own).
            Stmt::Atomic {
                offset,
                body,
                value,
                ..
            } => {
                out.stores = true;
                out.expr(*offset);
                let mut inner = Summary::block(body.iter().map(|t| Summary::of(t, cx)));
                inner.value(value, cx);
                inner.defines.clear();
                out.absorb(inner);
            }
        }
        out
    }
}

/// The private local array that a serial loop over `var` in `lo..=hi` overwrites whole:
/// its body is scalar bindings (`let`, `var`, assignments, as the emitters compute a
/// lane's value: a load, a select, a square) and exactly one store `l[var] = v`, none of
/// them reading `l`, and the loop covers `0..len` (a loop runs at least once, so every
/// element is written and none is read first).
pub(super) fn overwritten_local(
    cx: &Cx<'_>,
    kind: LoopKind,
    var: Var,
    (lo, hi): (i64, i64),
    body: &[Stmt],
) -> Option<usize> {
    let mut stores = body.iter().filter_map(|s| match s {
        Stmt::LocalStore {
            local,
            offset,
            value,
        } => Some((*local, *offset, value)),
        _ => None,
    });
    let (local, offset, value) = stores.next()?;
    if stores.next().is_some() {
        return None;
    }
    let bindings_only = body.iter().all(|s| match s {
        Stmt::Comment(_) | Stmt::LocalStore { .. } => true,
        Stmt::Let { value, .. } | Stmt::Decl { value, .. } | Stmt::Assign { value, .. } => {
            !reads_local(value, local)
        }
        _ => false,
    });
    let l = cx.locals.get(local)?;
    let whole = kind == LoopKind::Serial
        && l.space == MemorySpace::Private
        && offset == Expr::var(var)
        && lo == 0
        && hi >= l.len - 1;
    (whole && bindings_only && !reads_local(value, local)).then_some(local)
}

/// Whether `v` reads local array `local`.
pub(super) fn reads_local(v: &Value, local: usize) -> bool {
    match v {
        Value::Const(..) | Value::Var(..) | Value::Index(_) | Value::Load { .. } => false,
        Value::LocalLoad { local: l, .. } => *l == local,
        Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
            reads_local(a, local)
        }
        Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) => {
            reads_local(a, local) || reads_local(b, local)
        }
        Value::Select(p, a, b) => {
            reads_local(p, local) || reads_local(a, local) || reads_local(b, local)
        }
        Value::Cond(_, a, b) => reads_local(a, local) || reads_local(b, local),
    }
}

/// Counts the statements defining each scalar (`let`, `var`), at any depth (an atomic
/// update's body is a scope of its own and is not counted, as [`Summary::of`] does not).
pub(super) fn count_defines(body: &[Stmt], counts: &mut HashMap<VarId, usize>) {
    for s in body {
        match s {
            Stmt::Let { var, .. } | Stmt::Decl { var, .. } => *counts.entry(*var).or_default() += 1,
            Stmt::Loop { body, .. } => count_defines(body, counts),
            Stmt::If {
                body, else_body, ..
            } => {
                count_defines(body, counts);
                count_defines(else_body, counts);
            }
            _ => {}
        }
    }
}

/// The scalars of `cx.multi` that `s` defines (`let`, `var`), at any depth.
pub(super) fn defines(s: &Stmt, cx: &Cx<'_>, out: &mut HashSet<VarId>) {
    match s {
        Stmt::Let { var, .. } | Stmt::Decl { var, .. } if cx.multi.contains(var) => {
            out.insert(*var);
        }
        Stmt::Loop { body, .. } => body.iter().for_each(|t| defines(t, cx, out)),
        Stmt::If {
            body, else_body, ..
        } => body
            .iter()
            .chain(else_body)
            .for_each(|t| defines(t, cx, out)),
        _ => {}
    }
}
