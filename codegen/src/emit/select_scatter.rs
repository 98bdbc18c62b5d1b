//! `select-and-scatter` (a max-pool gradient) as a compiled kernel: the select and scatter
//! computations inlined, the windows' taps as loops, in one of the two parallel forms of
//! [`fusion::select_scatter`] (its module comment says which covers what):
//! - tiled: one iteration per window (the source's elements): the select folds the window's
//!   valid taps into the chosen tap, then every valid tap is written once, the scattered
//!   `scatter(init, source)` at the chosen one and the init elsewhere;
//! - gather: one iteration per operand element, folding `scatter(acc, source)` over the
//!   windows covering it (in the source's row-major order) whose select chose it.
//!
//! On a GPU the same body runs a thread per iteration (`gpu_select_scatter.rs`).
//!
//! The select's fold is XLA's (and the evaluator's, `hlo_eval::numeric::WindowTaps`): the
//! first valid tap, replaced by each later one for which `select(chosen, candidate)` is
//! false; taps in the padding are skipped. Branch-free: the choice is a `select` of the
//! value and of the tap's number.

use affine::{Expr, Interval, Var};
use fusion::select_scatter::{SasForm, SasPlan};
use hlo::attrs::{AttrName, AttrValue, WindowDim};
use hlo::{CompId, InstrId, Opcode};

use super::assemble::{finish, EmittedKernel};
use super::builder::{BufferSource, Builder, Leaf};
use crate::error::CodegenError;
use crate::kir::{self, Access, BinOp, CmpOp, Const, Guard, ScalarType, Stmt, UnOp, Value};

/// Emits select-and-scatter `id` of `comp` as kernel `name`. Buffers: the operand, the
/// source, the init value (a scalar constant is an immediate instead), then the result.
/// [`CodegenError::Unsupported`] for what [`fusion::select_scatter::plan`] refuses (the
/// caller then runs the runtime's library routine). On a GPU target whose windows take
/// two launches this is the one-launch form; the program builder launches the two
/// kernels of `emit_select_scatter_pass` instead.
pub fn emit_select_and_scatter(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    let (mut b, k) = Sas::prepare(module, target, comp, id)?;
    let x = k.add_operand(&mut b, 0)?;
    let src = k.add_operand(&mut b, 1)?;
    k.add_init(&mut b)?;
    let out = k.add_result(&mut b)?;
    let io = Io { src, out };
    // Loops over the iteration space (the source's windows or the operand's elements) in
    // the physical order of the buffer indexed by it.
    let (space, over) = match k.plan.form {
        SasForm::Tiled => (k.sdims.clone(), src),
        SasForm::Gather => (k.xdims.clone(), out),
    };
    b.dims = space.iter().map(|&n| Interval::new(0, n - 1)).collect();
    let index: Vec<Expr> = (0..space.len() as u32).map(Expr::dim).collect();
    let mut body = Vec::new();
    match k.plan.form {
        SasForm::Tiled => k.tiled(&mut b, x, io, &index, &mut body)?,
        SasForm::Gather => {
            k.gather(&mut b, io, &index, &mut body, &mut |k, b, s, own, inner| {
                let chosen = k.select_window(b, x, s, inner)?;
                Ok(Value::Compare(
                    CmpOp::Eq,
                    false,
                    Box::new(chosen),
                    Box::new(Value::Index(own)),
                ))
            })?
        }
    }
    let order: Vec<usize> = b.buffers[over]
        .minor_to_major
        .iter()
        .rev()
        .map(|&d| d as usize)
        .collect();
    let form = match k.plan.form {
        SasForm::Tiled => "tiled: one iteration per window",
        SasForm::Gather => "gather: one iteration per operand element over its windows",
    };
    let instr = module.computation(comp).instr(id);
    let title = format!("select-and-scatter {} ({form})", instr.name());
    if target.gpu_emitters {
        let bufs = super::gpu_select_scatter::SasBuffers {
            window: &k.window,
            operand: x,
            source: src,
            out,
        };
        return super::gpu_select_scatter::gpu_kernel(b, name, title, body, &bufs);
    }
    finish(b, name, title, body, &space, &order).map(|e| super::assemble::threaded(target, e))
}

/// The source's and the result's buffers of a kernel writing the result.
#[derive(Clone, Copy)]
pub(super) struct Io {
    /// The source's buffer.
    pub src: usize,
    /// The result's buffer.
    pub out: usize,
}

/// The chosen-tap test of the gather form: given the window's source index `s` and the
/// number of the element's own tap in it, a `pred` that the window chose that tap, its
/// statements appended to the last argument.
pub(super) type Chose<'f> = dyn FnMut(&Sas, &mut Builder<'_>, &[Expr], Expr, &mut Vec<Stmt>) -> Result<Value, CodegenError>
    + 'f;

/// A select-and-scatter: what its kernels' statements are built from (the buffers are
/// each kernel's own).
pub(super) struct Sas {
    comp: CompId,
    id: InstrId,
    init: InstrId,
    select: CompId,
    scatter: CompId,
    /// The window.
    pub window: Vec<WindowDim>,
    /// The operand's (and the result's) dimensions.
    pub xdims: Vec<i64>,
    /// The source's dimensions (the windows).
    pub sdims: Vec<i64>,
    /// The CPU form's plan (its `covering` counts also drive the GPU gathers).
    pub plan: SasPlan,
}

impl Sas {
    /// The builder of a kernel of select-and-scatter `id` of `comp` (no buffers yet) and
    /// the instruction's parts; `Unsupported` for what the kernels do not take.
    pub(super) fn prepare<'m>(
        module: &'m hlo::Module,
        target: &'m crate::EmitTarget,
        comp: CompId,
        id: InstrId,
    ) -> Result<(Builder<'m>, Sas), CodegenError> {
        let c = module.computation(comp);
        let instr = c.instr(id);
        let b = Builder::new(module, target, instr.name());
        if instr.opcode() != Opcode::SelectAndScatter || instr.operands().len() != 3 {
            return Err(CodegenError::Internal(format!(
                "`{}` is not a select-and-scatter",
                instr.name()
            )));
        }
        let called = |n: AttrName| match instr.attr(&n) {
            Some(AttrValue::Computation(cc)) => Ok(*cc),
            _ => Err(b.unsupported("select-and-scatter", "no select or scatter computation")),
        };
        let (select, scatter) = (called(AttrName::Select)?, called(AttrName::Scatter)?);
        let window: Vec<WindowDim> = instr
            .window()
            .ok_or_else(|| b.unsupported("select-and-scatter", "no window"))?
            .dims
            .clone();
        let [x, src, init] = [0, 1, 2].map(|k| instr.operands()[k]);
        let xdims = c.instr(x).shape().dims().to_vec();
        let sdims = c.instr(src).shape().dims().to_vec();
        let plan = fusion::select_scatter::plan(&window, &xdims, &sdims).ok_or_else(|| {
            b.unsupported(
                "select-and-scatter",
                "a dilated, reversed or negatively padded window",
            )
        })?;
        if instr.shape().element_type() != c.instr(src).shape().element_type() {
            return Err(b.unsupported(
                "select-and-scatter",
                "a result of another type than the source",
            ));
        }
        let k = Sas {
            comp,
            id,
            init,
            select,
            scatter,
            window,
            xdims,
            sdims,
            plan,
        };
        Ok((b, k))
    }

    /// Adds operand `k` (0: the operand, 1: the source) as an input buffer.
    pub(super) fn add_operand(&self, b: &mut Builder<'_>, k: usize) -> Result<usize, CodegenError> {
        let c = b.module.computation(self.comp);
        let op = c.instr(self.id).operands()[k];
        let oi = c.instr(op);
        let buf = b.add_buffer(oi.name(), oi.shape(), Access::In, BufferSource::Operand(k))?;
        b.leaves.insert((self.comp, op), Leaf::Buffer(buf));
        Ok(buf)
    }

    /// Adds the init value's buffer unless it is a constant (an immediate).
    pub(super) fn add_init(&self, b: &mut Builder<'_>) -> Result<(), CodegenError> {
        let ii = b.module.computation(self.comp).instr(self.init);
        if ii.opcode() != Opcode::Constant && !b.leaves.contains_key(&(self.comp, self.init)) {
            let buf = b.add_buffer(ii.name(), ii.shape(), Access::In, BufferSource::Operand(2))?;
            b.leaves.insert((self.comp, self.init), Leaf::Buffer(buf));
        }
        Ok(())
    }

    /// Adds the result's buffer.
    pub(super) fn add_result(&self, b: &mut Builder<'_>) -> Result<usize, CodegenError> {
        let instr = b.module.computation(self.comp).instr(self.id);
        b.add_buffer(
            instr.name(),
            instr.shape(),
            Access::Out,
            BufferSource::Output(0),
        )
    }

    /// Per dimension, the operand index of tap `k` of window `s`, and the guard that keeps
    /// it inside the operand (conditions only where a window can reach the padding).
    fn tap_index(&self, b: &Builder<'_>, s: &[Expr], k: &[Expr]) -> (Vec<Expr>, Guard) {
        let mut index = Vec::with_capacity(s.len());
        let mut guard = Guard::default();
        for (d, w) in self.window.iter().enumerate() {
            let t = b.simplify(s[d] * w.stride + k[d] - w.padding_low);
            let r = b.range_of(t).unwrap_or(Interval::new(i64::MIN, i64::MAX));
            if r.lo < 0 || r.hi > self.xdims[d] - 1 {
                guard.conds.push((t, 0, self.xdims[d] - 1));
            }
            index.push(t);
        }
        (index, guard)
    }

    /// The tap loops: a range variable per dimension whose window has more than one tap
    /// (others are tap 0), and the tap's number, row-major over the window.
    fn tap_vars(&self, b: &mut Builder<'_>) -> (Vec<Expr>, Vec<(Var, i64)>, Expr) {
        let mut k = Vec::with_capacity(self.window.len());
        let mut loops = Vec::new();
        let mut number = Expr::constant(0);
        for w in &self.window {
            let e = if w.size > 1 {
                let v = b.new_range(Interval::new(0, w.size - 1));
                loops.push((v, w.size));
                Expr::var(v)
            } else {
                Expr::constant(0)
            };
            number = number * w.size + e;
            k.push(e);
        }
        (k, loops, b.simplify(number))
    }

    /// The select over the taps of window `s` of operand buffer `x`, its statements appended to `body`: the
    /// chosen tap's number (row-major over the window; 0 when no tap is valid).
    pub(super) fn select_window(
        &self,
        b: &mut Builder<'_>,
        x: usize,
        s: &[Expr],
        body: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        let ty = b.buffers[x].ty;
        let found = b.new_var(ScalarType::Pred);
        let best = b.new_var(ty);
        let tap = b.new_var(ScalarType::S64);
        body.push(Stmt::Decl {
            var: found,
            value: Value::Const(ScalarType::Pred, Const::Bool(false)),
        });
        body.push(Stmt::Decl {
            var: best,
            value: Value::Load {
                buf: x,
                offset: Expr::constant(0),
                ty,
            },
        });
        body.push(Stmt::Decl {
            var: tap,
            value: Value::Const(ScalarType::S64, Const::Int(0)),
        });
        let (k, loops, number) = self.tap_vars(b);
        let (at, guard) = self.tap_index(b, s, &k);
        let mut inner = Vec::new();
        let cand = self.load(b, x, &at, &guard);
        let keep = b.in_memo_frame(|b| {
            call_scalar(
                b,
                self.select,
                vec![Value::Var(best, ty), cand.clone()],
                ScalarType::Pred,
                &mut inner,
            )
        })?;
        let not = |v: Value| Value::Unary(UnOp::Not, Box::new(v), ScalarType::Pred);
        let take = Value::Binary(
            BinOp::Or,
            Box::new(not(Value::Var(found, ScalarType::Pred))),
            Box::new(not(keep)),
            ScalarType::Pred,
        );
        let took = b.new_var(ScalarType::Pred);
        inner.push(Stmt::Let {
            var: took,
            value: take,
        });
        let took = Value::Var(took, ScalarType::Pred);
        let pick = |a: Value, old: Value| {
            Value::Select(Box::new(took.clone()), Box::new(a), Box::new(old))
        };
        inner.push(Stmt::Assign {
            var: best,
            value: pick(cand, Value::Var(best, ty)),
        });
        inner.push(Stmt::Assign {
            var: tap,
            value: pick(Value::Index(number), Value::Var(tap, ScalarType::S64)),
        });
        inner.push(Stmt::Assign {
            var: found,
            value: Value::Const(ScalarType::Pred, Const::Bool(true)),
        });
        body.extend(serial_nest(&loops, Stmt::guarded(guard, inner)));
        Ok(Value::Var(tap, ScalarType::S64))
    }

    /// A load of buffer `buf` at `index` (noted for the kernel's comment).
    pub(super) fn load(
        &self,
        b: &mut Builder<'_>,
        buf: usize,
        index: &[Expr],
        guard: &Guard,
    ) -> Value {
        b.note(buf, index, guard);
        Value::Load {
            buf,
            offset: b.offset(buf, index),
            ty: b.buffers[buf].ty,
        }
    }

    /// The init value (an immediate or a load of its scalar buffer).
    fn init(&self, b: &mut Builder<'_>, body: &mut Vec<Stmt>) -> Result<Value, CodegenError> {
        b.value(self.comp, self.init, &[], false, body)
    }

    /// The tiled form's body at window `s`: select over operand buffer `x`, then write
    /// every valid tap.
    fn tiled(
        &self,
        b: &mut Builder<'_>,
        x: usize,
        io: Io,
        s: &[Expr],
        body: &mut Vec<Stmt>,
    ) -> Result<(), CodegenError> {
        let ty = b.buffers[io.out].ty;
        let chosen = self.select_window(b, x, s, body)?;
        let init = self.init(b, body)?;
        let source = self.load(b, io.src, s, &Guard::default());
        let scattered = call_scalar(b, self.scatter, vec![init.clone(), source], ty, body)?;
        let (k, loops, number) = self.tap_vars(b);
        let (at, guard) = self.tap_index(b, s, &k);
        let is_chosen = Value::Compare(
            CmpOp::Eq,
            false,
            Box::new(Value::Index(number)),
            Box::new(chosen),
        );
        b.note(io.out, &at, &guard);
        let store = Stmt::Store {
            buf: io.out,
            offset: b.offset(io.out, &at),
            value: Value::Select(Box::new(is_chosen), Box::new(scattered), Box::new(init)),
        };
        body.extend(serial_nest(&loops, Stmt::guarded(guard, vec![store])));
        Ok(())
    }

    /// The gather form's body at operand element `t`: fold the source values of the
    /// covering windows that chose `t` (`chose` says whether one did), then store.
    pub(super) fn gather(
        &self,
        b: &mut Builder<'_>,
        io: Io,
        t: &[Expr],
        body: &mut Vec<Stmt>,
        chose: &mut Chose<'_>,
    ) -> Result<(), CodegenError> {
        let ty = b.buffers[io.out].ty;
        let init = self.init(b, body)?;
        let acc = b.new_var(ty);
        body.push(Stmt::Decl {
            var: acc,
            value: init,
        });
        // Window s_d = floor((t_d + pad_d) / stride_d) - (J_d - 1) + j_d for j_d in
        // [0, J_d): ascending, so the windows come in the source's row-major order.
        let covering = &self.plan.covering;
        let mut s = Vec::with_capacity(t.len());
        let mut loops = Vec::new();
        let mut guard = Guard::default();
        let mut own_number = Expr::constant(0);
        for (d, w) in self.window.iter().enumerate() {
            let last = (t[d] + w.padding_low).floor_div(Expr::constant(w.stride));
            let j = if covering[d] > 1 {
                let v = b.new_range(Interval::new(0, covering[d] - 1));
                loops.push((v, covering[d]));
                Expr::var(v)
            } else {
                Expr::constant(0)
            };
            let sd = b.simplify(last - (covering[d] - 1) + j);
            // The tap of t in window s_d (never negative: s_d starts at or before t).
            let kd = b.simplify(t[d] + w.padding_low - sd * w.stride);
            for (e, hi) in [(sd, self.sdims[d] - 1), (kd, w.size - 1)] {
                let r = b.range_of(e).unwrap_or(Interval::new(i64::MIN, i64::MAX));
                if r.lo < 0 || r.hi > hi {
                    guard.conds.push((e, 0, hi));
                }
            }
            own_number = own_number * w.size + kd;
            s.push(sd);
        }
        let own_number = b.simplify(own_number);
        b.guards.push(guard.clone());
        let inner = b.in_memo_frame(|b| -> Result<Vec<Stmt>, CodegenError> {
            let mut inner = Vec::new();
            let mine = chose(self, b, &s, own_number, &mut inner)?;
            let source = self.load(b, io.src, &s, &Guard::default());
            let old = Value::Var(acc, ty);
            let folded = call_scalar(b, self.scatter, vec![old.clone(), source], ty, &mut inner)?;
            inner.push(Stmt::Assign {
                var: acc,
                value: Value::Select(Box::new(mine), Box::new(folded), Box::new(old)),
            });
            Ok(inner)
        });
        b.guards.pop();
        body.extend(serial_nest(&loops, Stmt::guarded(guard, inner?)));
        b.note(io.out, t, &Guard::default());
        body.push(Stmt::Store {
            buf: io.out,
            offset: b.offset(io.out, t),
            value: Value::Var(acc, ty),
        });
        Ok(())
    }
}

/// `body` inside serial loops `(variable, extent)`, the first outermost.
fn serial_nest(loops: &[(Var, i64)], mut body: Vec<Stmt>) -> Vec<Stmt> {
    for &(var, n) in loops.iter().rev() {
        body = vec![Stmt::Loop {
            kind: kir::LoopKind::Serial,
            var,
            lo: 0,
            hi: n - 1,
            body,
        }];
    }
    body
}

/// Scalar computation `f` applied to `args` (its parameters, in order), inlined into
/// `body`; its result must be one scalar of type `ty`.
fn call_scalar(
    b: &mut Builder<'_>,
    f: CompId,
    args: Vec<Value>,
    ty: ScalarType,
    body: &mut Vec<Stmt>,
) -> Result<Value, CodegenError> {
    let r = b.inline_scalar_call(f, args, "select-and-scatter", "a computation", body)?;
    if r.ty() != ty {
        return Err(b.unsupported(
            "select-and-scatter",
            format!("a computation giving {} where {ty} is needed", r.ty()),
        ));
    }
    Ok(r)
}
