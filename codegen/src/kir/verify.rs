//! The kernel verifier: types agree, variables are bound before use, buffers are used as
//! declared, every output is written, and unguarded accesses stay in range where the
//! loop bounds decide it.

use std::collections::HashSet;

use affine::{Expr, IndexingMap, Interval, Var, VarKind};

use super::kernel::{Access, Kernel, LoopKind, MemorySpace, Stmt, WARP_LANES};
use super::types::ScalarType;
use super::value::{BinOp, Guard, UnOp, Value, VarId};

/// Why a kernel is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernel `{kernel}`: {message}")]
pub struct VerifyError {
    /// The kernel's name.
    pub kernel: String,
    /// What is wrong.
    pub message: String,
}

struct Verifier<'k> {
    k: &'k Kernel,
    bound: HashSet<Var>,
    defined: HashSet<VarId>,
    mutable: HashSet<VarId>,
    stored: HashSet<usize>,
    guards: usize,
    /// The bounds of the loops being checked (a loop may run over part of its variable's
    /// declared bounds: a loop split at a guard's edges).
    loops: Vec<(Var, Interval)>,
    /// Whether the statements being checked are inside a loop over the block's threads.
    in_threads: bool,
    /// Loops over threads seen so far (the current one's number while `in_threads`).
    thread_loops: usize,
    /// Where each private local is used: `None` at block level, `Some(n)` inside thread
    /// loop `n`. A thread's copy does not outlive its loop.
    private_homes: std::collections::HashMap<usize, Option<usize>>,
    /// Whether a warp shuffle may stand here: directly inside a loop giving each thread
    /// of the block one iteration, under no guard or further loop of that loop.
    lanes_converged: bool,
}

/// Checks a kernel.
pub fn verify(k: &Kernel) -> Result<(), VerifyError> {
    let mut v = Verifier {
        k,
        bound: HashSet::new(),
        defined: HashSet::new(),
        mutable: HashSet::new(),
        stored: HashSet::new(),
        guards: 0,
        loops: Vec::new(),
        in_threads: false,
        thread_loops: 0,
        private_homes: Default::default(),
        lanes_converged: false,
    };
    let err = |message: String| VerifyError {
        kernel: k.name.clone(),
        message,
    };
    if k.grid.blocks < 1 {
        return Err(err(format!("grid of {} blocks", k.grid.blocks)));
    }
    if k.grid.threads < 1 {
        return Err(err(format!("blocks of {} threads", k.grid.threads)));
    }
    if let Some(b) = k.grid.block_var {
        let iv = v
            .bounds(b)
            .ok_or_else(|| err(format!("block variable {b} has no bounds")))?;
        if iv.lo != 0 || iv.hi != k.grid.blocks - 1 {
            return Err(err(format!(
                "block variable {b} in [{}, {}] but {} blocks",
                iv.lo, iv.hi, k.grid.blocks
            )));
        }
        v.bound.insert(b);
    }
    v.block(&k.body).map_err(err)?;
    for (i, b) in k.buffers.iter().enumerate() {
        if b.access == Access::Out && !v.stored.contains(&i) && !folded_into_in_out(k, i) {
            return Err(err(format!(
                "output buffer b{i} `{}` is never written",
                b.name
            )));
        }
    }
    Ok(())
}

/// Whether output `i` may stand unused because its bytes are written through an `InOut`
/// parameter: plan's one-pointer fold (`plan::memory::one_pointer`) renames an in-place
/// kernel's stores of its output to the operand's pointer holding the same bytes, leaving
/// the output bound but untouched (an `Out` parameter is never loaded, so "never stored"
/// means untouched). It needs an `InOut` parameter of the same element type and count.
fn folded_into_in_out(k: &Kernel, i: usize) -> bool {
    let out = &k.buffers[i];
    k.buffers.iter().any(|b| {
        b.access == Access::InOut && b.ty == out.ty && b.element_count() == out.element_count()
    })
}

impl Verifier<'_> {
    fn bounds(&self, var: Var) -> Option<Interval> {
        let list = match var.kind {
            VarKind::Dim => &self.k.dims,
            VarKind::Range => &self.k.ranges,
            VarKind::Runtime => &self.k.runtimes,
        };
        list.get(var.index as usize).copied()
    }

    fn block(&mut self, body: &[Stmt]) -> Result<(), String> {
        let saved_vars = self.defined.clone();
        let saved_bound = self.bound.clone();
        for s in body {
            self.stmt(s)?;
        }
        self.defined = saved_vars;
        self.bound = saved_bound;
        Ok(())
    }

    fn var_type(&self, var: VarId) -> Result<ScalarType, String> {
        self.k
            .vars
            .get(var.0 as usize)
            .copied()
            .ok_or_else(|| format!("v{} has no declared type", var.0))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), String> {
        match s {
            Stmt::Comment(_) => Ok(()),
            // Inside a loop over threads, some threads could wait for others that never
            // arrive: barriers are block-level statements only.
            Stmt::Barrier if self.in_threads => {
                Err("barrier inside a loop over the block's threads".into())
            }
            Stmt::Barrier => Ok(()),
            Stmt::Loop {
                kind,
                var,
                lo,
                hi,
                body,
            } => {
                let threads = *kind == LoopKind::Threads;
                if threads && self.in_threads {
                    return Err(format!(
                        "loop {var} over the block's threads inside another one"
                    ));
                }
                let iv = self
                    .bounds(*var)
                    .ok_or_else(|| format!("loop variable {var} has no bounds"))?;
                if *lo < iv.lo || *hi > iv.hi {
                    return Err(format!(
                        "loop {var} in [{lo}, {hi}] leaves its bounds [{}, {}]",
                        iv.lo, iv.hi
                    ));
                }
                if self.bound.contains(var) {
                    return Err(format!("loop variable {var} is already bound"));
                }
                self.bound.insert(*var);
                self.loops.push((*var, Interval::new(*lo, *hi)));
                let outer_threads = self.in_threads;
                if threads {
                    self.thread_loops += 1;
                }
                self.in_threads |= threads;
                let outer_converged = self.lanes_converged;
                self.lanes_converged = threads && *lo == 0 && *hi == self.k.grid.threads - 1;
                let r = self.block(body);
                self.lanes_converged = outer_converged;
                self.in_threads = outer_threads;
                self.loops.pop();
                self.bound.remove(var);
                r
            }
            Stmt::Let { var, value } | Stmt::Decl { var, value } => {
                let t = self.value(value)?;
                if t != self.var_type(*var)? {
                    return Err(format!(
                        "v{} declared {} but bound to {t}",
                        var.0,
                        self.var_type(*var)?
                    ));
                }
                if !self.defined.insert(*var) {
                    return Err(format!("v{} is defined twice", var.0));
                }
                if matches!(s, Stmt::Decl { .. }) {
                    self.mutable.insert(*var);
                }
                Ok(())
            }
            Stmt::Assign { var, value } => {
                let t = self.value(value)?;
                if !self.defined.contains(var) || !self.mutable.contains(var) {
                    return Err(format!(
                        "assignment to v{} which is not a declared variable",
                        var.0
                    ));
                }
                if t != self.var_type(*var)? {
                    return Err(format!(
                        "v{} is {} but assigned {t}",
                        var.0,
                        self.var_type(*var)?
                    ));
                }
                Ok(())
            }
            Stmt::Shuffle {
                var,
                value,
                offset,
                width,
                ..
            } => {
                let t = self.value(value)?;
                if !self.lanes_converged {
                    return Err(format!(
                        "shuffle into v{} outside a loop giving every thread of the block one \
                         iteration, or under a guard or loop there",
                        var.0
                    ));
                }
                let w = *width;
                if !(2..=WARP_LANES).contains(&w)
                    || w & (w - 1) != 0
                    || self.k.grid.threads % w != 0
                {
                    return Err(format!(
                        "shuffle width {w}: not a power of two in [2, {WARP_LANES}] dividing \
                         the block's {} threads",
                        self.k.grid.threads
                    ));
                }
                if *offset < 1 || *offset >= w {
                    return Err(format!("shuffle offset {offset} outside [1, {}]", w - 1));
                }
                if t.is_complex() {
                    return Err(format!("shuffle of a {t} value"));
                }
                if t != self.var_type(*var)? {
                    return Err(format!(
                        "v{} declared {} but shuffles {t}",
                        var.0,
                        self.var_type(*var)?
                    ));
                }
                if !self.defined.insert(*var) {
                    return Err(format!("v{} is defined twice", var.0));
                }
                Ok(())
            }
            Stmt::BindIndex { var, value } => {
                let t = self.value(value)?;
                if !(t.is_int() || t == ScalarType::Pred) {
                    return Err(format!("index variable {var} bound to a {t} value"));
                }
                if var.kind != VarKind::Runtime || self.bounds(*var).is_none() {
                    return Err(format!("{var} is not a declared runtime variable"));
                }
                self.bound.insert(*var);
                Ok(())
            }
            Stmt::If {
                guard,
                body,
                else_body,
            } => {
                self.guard(guard)?;
                self.guards += 1;
                let outer_converged = std::mem::replace(&mut self.lanes_converged, false);
                let r = self.block(body).and_then(|()| self.block(else_body));
                self.lanes_converged = outer_converged;
                self.guards -= 1;
                r
            }
            Stmt::LocalStore {
                local,
                offset,
                value,
            } => {
                let t = self.value(value)?;
                let ty = self.local(*local, *offset)?;
                if t != ty {
                    return Err(format!("store of {t} into {ty} local l{local}"));
                }
                Ok(())
            }
            Stmt::Store { buf, offset, value } => {
                let t = self.value(value)?;
                let b = self
                    .k
                    .buffers
                    .get(*buf)
                    .ok_or_else(|| format!("store to missing buffer b{buf}"))?;
                if b.access == Access::In {
                    return Err(format!("store to input buffer b{buf} `{}`", b.name));
                }
                if t != b.ty {
                    return Err(format!("store of {t} into {} buffer b{buf}", b.ty));
                }
                self.offset(*buf, *offset)?;
                self.stored.insert(*buf);
                Ok(())
            }
            Stmt::Atomic {
                buf,
                offset,
                old,
                body,
                value,
            } => self.atomic(*buf, *offset, *old, body, value),
        }
    }

    /// An atomic update: of an element of a read-write buffer (it reads the element) of
    /// at most 8 bytes (the widest compare-and-swap), its body only computing.
    fn atomic(
        &mut self,
        buf: usize,
        offset: Expr,
        old: VarId,
        body: &[Stmt],
        value: &Value,
    ) -> Result<(), String> {
        fn computes_only(body: &[Stmt]) -> bool {
            body.iter().all(|s| match s {
                Stmt::Comment(_) | Stmt::Let { .. } | Stmt::Decl { .. } | Stmt::Assign { .. } => {
                    true
                }
                Stmt::If {
                    body, else_body, ..
                } => computes_only(body) && computes_only(else_body),
                _ => false,
            })
        }
        let b = self
            .k
            .buffers
            .get(buf)
            .ok_or_else(|| format!("atomic update of missing buffer b{buf}"))?;
        if b.access != Access::InOut {
            return Err(format!(
                "atomic update of b{buf} `{}`, which is not a read-write buffer",
                b.name
            ));
        }
        let ty = self.var_type(old)?;
        if ty != b.ty {
            return Err(format!(
                "atomic update of {} buffer b{buf} binds v{} of type {ty}",
                b.ty, old.0
            ));
        }
        if ty.byte_width() > 8 {
            return Err(format!(
                "atomic update of a {ty} element: wider than 8 bytes"
            ));
        }
        if !computes_only(body) {
            return Err(format!(
                "atomic update of b{buf} with a store, loop, barrier, shuffle or atomic in its body"
            ));
        }
        self.offset(buf, offset)?;
        let (saved, saved_mut) = (self.defined.clone(), self.mutable.clone());
        if !self.defined.insert(old) {
            return Err(format!("v{} is defined twice", old.0));
        }
        let r = body
            .iter()
            .try_for_each(|s| self.stmt(s))
            .and_then(|()| self.value(value));
        self.defined = saved;
        self.mutable = saved_mut;
        let t = r?;
        if t != ty {
            return Err(format!(
                "atomic update of {ty} buffer b{buf} to a {t} value"
            ));
        }
        self.stored.insert(buf);
        Ok(())
    }

    fn guard(&self, g: &Guard) -> Result<(), String> {
        g.conds.iter().try_for_each(|(e, _, _)| self.expr(*e))
    }

    fn expr(&self, e: Expr) -> Result<(), String> {
        for v in e.variables() {
            if !self.bound.contains(&v) {
                return Err(format!("index expression `{e}` uses unbound {v}"));
            }
        }
        Ok(())
    }

    /// Checks an access offset: variables bound and, outside guards, the offset's range
    /// (from the variables' bounds) inside the buffer.
    fn offset(&self, buf: usize, offset: Expr) -> Result<(), String> {
        self.expr(offset)?;
        if self.guards > 0 {
            return Ok(());
        }
        let Some(b) = self.k.buffers.get(buf) else {
            return Err(format!("access to missing buffer b{buf}"));
        };
        let r = self.range(offset)?;
        if r.lo < 0 || r.hi >= b.element_count() {
            return Err(format!(
                "offset `{offset}` of b{buf} ranges over [{}, {}], outside [0, {}]",
                r.lo,
                r.hi,
                b.element_count() - 1
            ));
        }
        Ok(())
    }

    /// Checks an access of local array `local` like [`Self::offset`]; gives its type.
    fn local(&mut self, local: usize, offset: Expr) -> Result<ScalarType, String> {
        let l = self
            .k
            .locals
            .get(local)
            .ok_or_else(|| format!("access to missing local l{local}"))?;
        if l.space == MemorySpace::Private {
            let here = self.in_threads.then_some(self.thread_loops);
            if *self.private_homes.entry(local).or_insert(here) != here {
                return Err(format!(
                    "private local l{local} is used in two places that different threads \
                     run (a thread's copy lives in one loop over threads; share it with \
                     `shared` and a barrier)"
                ));
            }
        }
        self.expr(offset)?;
        if self.guards == 0 {
            let r = self.range(offset)?;
            if r.lo < 0 || r.hi >= l.len {
                return Err(format!(
                    "offset `{offset}` of l{local} ranges over [{}, {}], outside [0, {}]",
                    r.lo,
                    r.hi,
                    l.len - 1
                ));
            }
        }
        Ok(l.ty)
    }

    /// The range of an index expression over the kernel variables' bounds (a loop
    /// variable's, the loop's).
    fn range(&self, e: Expr) -> Result<Interval, String> {
        let (mut dims, mut ranges) = (self.k.dims.clone(), self.k.ranges.clone());
        for &(v, iv) in &self.loops {
            let list = match v.kind {
                VarKind::Dim => &mut dims,
                VarKind::Range => &mut ranges,
                VarKind::Runtime => continue,
            };
            if let Some(slot) = list.get_mut(v.index as usize) {
                *slot = iv;
            }
        }
        let map = IndexingMap::new(dims, ranges, self.k.runtimes.clone(), vec![e], vec![])
            .map_err(|err| format!("offset `{e}`: {err}"))?;
        Ok(map.range_of(e))
    }

    fn value(&mut self, v: &Value) -> Result<ScalarType, String> {
        match v {
            Value::Const(t, _) => Ok(*t),
            Value::Var(id, t) => {
                if !self.defined.contains(id) {
                    return Err(format!("v{} used before its definition", id.0));
                }
                if *t != self.var_type(*id)? {
                    return Err(format!("v{} used as {t}", id.0));
                }
                Ok(*t)
            }
            Value::Index(e) => {
                self.expr(*e)?;
                Ok(ScalarType::S64)
            }
            Value::Load { buf, offset, ty } => {
                let b = self
                    .k
                    .buffers
                    .get(*buf)
                    .ok_or_else(|| format!("load from missing buffer b{buf}"))?;
                if b.access == Access::Out {
                    return Err(format!("load from output buffer b{buf} `{}`", b.name));
                }
                if b.ty != *ty {
                    return Err(format!("load of {ty} from {} buffer b{buf}", b.ty));
                }
                self.offset(*buf, *offset)?;
                Ok(*ty)
            }
            Value::LocalLoad { local, offset, ty } => {
                let lt = self.local(*local, *offset)?;
                if lt != *ty {
                    return Err(format!("load of {ty} from {lt} local l{local}"));
                }
                Ok(*ty)
            }
            Value::Unary(op, a, t) => {
                let at = self.value(a)?;
                let ok = match op {
                    UnOp::Real | UnOp::Imag => at.is_complex() && *t == at.component(),
                    UnOp::Abs if at.is_complex() => *t == at.component(),
                    UnOp::Neg | UnOp::Exp | UnOp::Log | UnOp::Sqrt | UnOp::Sign
                        if at.is_complex() =>
                    {
                        at == *t
                    }
                    _ if at.is_complex() => false,
                    UnOp::Not => at == *t && (at.is_int() || at == ScalarType::Pred),
                    UnOp::Popcnt | UnOp::Clz => at == *t && at.is_int(),
                    UnOp::Neg | UnOp::Abs | UnOp::Sign => at == *t && at != ScalarType::Pred,
                    UnOp::IsFinite => at.is_float() && *t == ScalarType::Pred,
                    _ => at == *t && at.is_float(),
                };
                if !ok {
                    return Err(format!("{op:?} of {at} giving {t}"));
                }
                Ok(*t)
            }
            Value::Binary(op, a, b, t) => {
                let (at, bt) = (self.value(a)?, self.value(b)?);
                if *op == BinOp::Complex {
                    if !t.is_complex() || at != t.component() || bt != at {
                        return Err(format!("complex of {at} and {bt} giving {t}"));
                    }
                    return Ok(*t);
                }
                if at != *t || bt != *t {
                    return Err(format!("{op:?} of {at} and {bt} giving {t}"));
                }
                let ok = match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div if t.is_complex() => true,
                    _ if t.is_complex() => false,
                    BinOp::Atan2 => t.is_float(),
                    BinOp::Shl | BinOp::ShrLogical | BinOp::ShrArith => t.is_int(),
                    BinOp::And | BinOp::Or | BinOp::Xor => !t.is_float(),
                    BinOp::Div | BinOp::Rem | BinOp::Pow => *t != ScalarType::Pred,
                    _ => true,
                };
                if !ok {
                    return Err(format!("{op:?} is not defined on {t}"));
                }
                Ok(*t)
            }
            Value::Compare(_, total, a, b) => {
                let (at, bt) = (self.value(a)?, self.value(b)?);
                if at != bt {
                    return Err(format!("comparison of {at} with {bt}"));
                }
                if *total && !at.is_float() {
                    return Err(format!("total-order comparison of {at}"));
                }
                if at.is_complex()
                    && !matches!(v, Value::Compare(super::CmpOp::Eq | super::CmpOp::Ne, ..))
                {
                    return Err(format!("ordered comparison of {at}"));
                }
                Ok(ScalarType::Pred)
            }
            Value::Select(p, a, b) => {
                if self.value(p)? != ScalarType::Pred {
                    return Err("select predicate is not pred".into());
                }
                let (at, bt) = (self.value(a)?, self.value(b)?);
                if at != bt {
                    return Err(format!("select of {at} and {bt}"));
                }
                Ok(at)
            }
            Value::Cond(g, a, b) => {
                self.guard(g)?;
                self.guards += 1;
                let at = self.value(a);
                let bt = self.value(b);
                self.guards -= 1;
                let (at, bt) = (at?, bt?);
                if at != bt {
                    return Err(format!("conditional of {at} and {bt}"));
                }
                Ok(at)
            }
            Value::Convert(a, _) => {
                self.value(a)?;
                Ok(v.ty())
            }
            Value::BitcastConvert(a, t) => {
                let at = self.value(a)?;
                if at.byte_width() != t.byte_width()
                    || at == ScalarType::Pred
                    || *t == ScalarType::Pred
                {
                    return Err(format!("bitcast-convert of {at} to {t}"));
                }
                Ok(*t)
            }
        }
    }
}
