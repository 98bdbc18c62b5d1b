//! The GPU sort of long rows: one merge pass of [`fusion::gpu_merge_sort`] as a kernel.
//! A thread per element (the launch's thread map) loads its element of every operand,
//! binary-searches the run it is merged with for its rank there (the comparator inlined
//! in each step), and stores the element at its run's start plus its rank in its own run
//! plus that rank. The program builder launches the passes in order over the buffers
//! [`merge_pass_writes_scratch`] names.

use affine::{Expr, Interval};
use fusion::gpu_merge_sort::{merge_base, merge_sort_launch, MergeSortLaunch};
use hlo::{CompId, InstrId};

use super::assemble::EmittedKernel;
use super::builder::{BufferSource, Builder};
use crate::error::CodegenError;
use crate::kir::{self, Access, BinOp, CmpOp, Const, ScalarType, Stmt, UnOp, Value};

/// The merge sort's passes of instruction `id` of `comp` on `target` (a sort whose rows
/// exceed the bitonic emitter's shared memory), or `None` where it takes none.
pub fn gpu_merge_sort_passes(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
) -> Option<usize> {
    launch(module, target, comp, id).map(|l| l.widths().len())
}

/// Whether pass `pass` of `passes` writes the scratch buffers (else the outputs): the
/// last pass writes the outputs, each pass what the next one reads.
pub fn merge_pass_writes_scratch(pass: usize, passes: usize) -> bool {
    MergeSortLaunch::writes_scratch(pass, passes)
}

fn launch(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
) -> Option<MergeSortLaunch> {
    if !target.gpu_emitters {
        return None;
    }
    let fits = super::gpu_sort::gpu_sort_applies(module, target, comp, id);
    merge_sort_launch(module, comp, id, fits).ok().flatten()
}

/// Pass `pass` of the merge sort of `id` as kernel `name`. Buffers: the pass's inputs
/// (one per operand: the operands themselves in the first pass, sources `Operand(j)`;
/// afterwards buffers of the outputs' shapes, sources `Output(k)`), then the buffers it
/// writes (the outputs' shapes, sources `Output(k)`); the program builder binds them to
/// the operands, the outputs or the scratch buffers.
pub fn emit_gpu_merge_pass(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
    pass: usize,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let mut b = Builder::new(module, target, instr.name());
    let ml = launch(module, target, comp, id)
        .ok_or_else(|| b.unsupported("sort", "a GPU merge sort of rows over shared memory"))?;
    let widths = ml.widths();
    let Some(&w) = widths.get(pass) else {
        return Err(CodegenError::Internal(format!(
            "merge pass {pass} of {}",
            widths.len()
        )));
    };
    let leaves: Vec<hlo::Shape> = if instr.shape().is_tuple() {
        instr.shape().tuple_shapes().to_vec()
    } else {
        vec![instr.shape().clone()]
    };
    let mut src = Vec::new();
    for (k, &op) in instr.operands().iter().enumerate() {
        let buf = if pass == 0 {
            let oi = c.instr(op);
            b.add_buffer(oi.name(), oi.shape(), Access::In, BufferSource::Operand(k))?
        } else {
            let nm = format!("{}.{k} (runs of {w})", instr.name());
            b.add_buffer(&nm, &leaves[k], Access::In, BufferSource::Output(k))?
        };
        src.push(buf);
    }
    let mut dst = Vec::new();
    for (k, s) in leaves.iter().enumerate() {
        let nm = format!("{}.{k} (runs of {})", instr.name(), 2 * w);
        dst.push(b.add_buffer(&nm, s, Access::Out, BufferSource::Output(k))?);
    }
    b.dims = ml.dims.iter().map(|&n| Interval::new(0, n - 1)).collect();
    let index: Vec<Expr> = (0..ml.dims.len() as u32).map(Expr::dim).collect();
    let m = Merge {
        launch: &ml,
        w,
        src,
        dst,
        index,
    };
    let mut body = Vec::new();
    let mine: Vec<Value> = m
        .src
        .iter()
        .map(|&buf| {
            let ty = b.buffers[buf].ty;
            b.note(buf, &m.index, &kir::Guard::default());
            let var = b.new_var(ty);
            body.push(Stmt::Let {
                var,
                value: Value::Load {
                    buf,
                    offset: b.offset(buf, &m.index),
                    ty,
                },
            });
            Value::Var(var, ty)
        })
        .collect();
    let i = m.index[ml.dim];
    let left = b.in_memo_frame(|b| m.place(b, &mine, true))?;
    let right = b.in_memo_frame(|b| m.place(b, &mine, false))?;
    body.push(Stmt::If {
        guard: kir::Guard {
            conds: vec![(b.simplify(i.modulo(Expr::constant(2 * w))), 0, w - 1)],
        },
        body: left,
        else_body: right,
    });
    let title = format!(
        "sort {} ({} of {})\n{}",
        instr.name(),
        if pass == 0 {
            "the operands' runs of 1".to_string()
        } else {
            format!("runs of {w}")
        },
        ml.n,
        ml.dims_text(pass)
    );
    super::gpu_loop::launch_kernel(b, name, title, body, &ml.launch)
}

/// What a pass's statements are built from.
struct Merge<'l> {
    launch: &'l MergeSortLaunch,
    /// The run width merged.
    w: i64,
    /// The buffers read, one per operand.
    src: Vec<usize>,
    /// The buffers written.
    dst: Vec<usize>,
    /// The thread's element (`(d0, ..)`).
    index: Vec<Expr>,
}

impl Merge<'_> {
    /// `index` with the sorted dimension at `at`.
    fn at(&self, at: Expr) -> Vec<Expr> {
        let mut index = self.index.clone();
        index[self.launch.dim] = at;
        index
    }

    /// The statements placing the thread's element `mine` (its operands' values), which
    /// lies in the left run (`left`) or the right one: its rank in the other run by a
    /// binary search, then the stores at its merged position.
    fn place(
        &self,
        b: &mut Builder<'_>,
        mine: &[Value],
        left: bool,
    ) -> Result<Vec<Stmt>, CodegenError> {
        let (w, n) = (self.w, self.launch.n);
        let i = self.index[self.launch.dim];
        let base = merge_base(i, w);
        let other = b.simplify(if left { base + w } else { base });
        let s64 = |v: i64| Value::Const(ScalarType::S64, Const::Int(i128::from(v)));
        let bin = |op: BinOp, x: Value, y: Value| {
            Value::Binary(op, Box::new(x), Box::new(y), ScalarType::S64)
        };
        // The other run's length: a right run may be cut short (or empty) at the row's end.
        let len = if left {
            let rest = Value::Index(b.simplify(Expr::constant(n) - other));
            bin(BinOp::Max, s64(0), bin(BinOp::Min, s64(w), rest))
        } else {
            s64(w)
        };
        let mut body = Vec::new();
        let (lo, hi) = (b.new_var(ScalarType::S64), b.new_var(ScalarType::S64));
        body.push(Stmt::Decl {
            var: lo,
            value: s64(0),
        });
        body.push(Stmt::Decl {
            var: hi,
            value: len,
        });
        let (lov, hiv) = (
            Value::Var(lo, ScalarType::S64),
            Value::Var(hi, ScalarType::S64),
        );
        let step = b.new_range(Interval::new(0, MergeSortLaunch::search_steps(w) - 1));
        let mut inner = Vec::new();
        let bind = |b: &mut Builder<'_>, value: Value, inner: &mut Vec<Stmt>| {
            let ty = value.ty();
            let var = b.new_var(ty);
            inner.push(Stmt::Let { var, value });
            Value::Var(var, ty)
        };
        let mid = bind(
            b,
            bin(
                BinOp::Div,
                bin(BinOp::Add, lov.clone(), hiv.clone()),
                s64(2),
            ),
            &mut inner,
        );
        // Clamped into the run's extent (`mid` reaches `len` only once the search ended).
        let probe = b.new_runtime(Interval::new(0, w - 1));
        inner.push(Stmt::BindIndex {
            var: probe,
            value: bin(BinOp::Min, mid.clone(), s64(w - 1)),
        });
        let at = b.simplify(other + Expr::var(probe));
        let guard = kir::Guard {
            conds: vec![(at, 0, n - 1)],
        };
        let index = self.at(at);
        let theirs: Vec<Value> = self
            .src
            .iter()
            .zip(mine)
            .map(|(&buf, own)| {
                let ty = b.buffers[buf].ty;
                b.note(buf, &index, &guard);
                let load = Value::Load {
                    buf,
                    offset: b.offset(buf, &index),
                    ty,
                };
                let v = Value::Cond(guard.clone(), Box::new(load), Box::new(own.clone()));
                bind(b, v, &mut inner)
            })
            .collect();
        // Left: the other element goes first when strictly before; right: unless the
        // thread's is strictly before it (ties: the left run first).
        let not = |v: Value| Value::Unary(UnOp::Not, Box::new(v), ScalarType::Pred);
        let after = if left {
            self.before(b, &theirs, mine, &mut inner)?
        } else {
            not(self.before(b, mine, &theirs, &mut inner)?)
        };
        let after = bind(b, after, &mut inner);
        let active = bind(
            b,
            Value::Compare(
                CmpOp::Lt,
                false,
                Box::new(lov.clone()),
                Box::new(hiv.clone()),
            ),
            &mut inner,
        );
        let and = |x: Value, y: Value| {
            Value::Binary(BinOp::And, Box::new(x), Box::new(y), ScalarType::Pred)
        };
        inner.push(Stmt::Assign {
            var: lo,
            value: Value::Select(
                Box::new(and(active.clone(), after.clone())),
                Box::new(bin(BinOp::Add, mid.clone(), s64(1))),
                Box::new(lov.clone()),
            ),
        });
        inner.push(Stmt::Assign {
            var: hi,
            value: Value::Select(
                Box::new(and(active, not(after))),
                Box::new(mid),
                Box::new(hiv),
            ),
        });
        let last = MergeSortLaunch::search_steps(w) - 1;
        body.push(Stmt::serial_loop(step, 0, last, inner));
        // The merged position: the run's start, the rank in its own run, the rank found.
        let own = b.simplify(if left { i } else { i - w });
        let dest = b.new_runtime(Interval::new(0, n - 1));
        body.push(Stmt::BindIndex {
            var: dest,
            value: bin(BinOp::Add, Value::Index(own), lov),
        });
        let index = self.at(Expr::var(dest));
        for (&buf, v) in self.dst.iter().zip(mine) {
            b.note(buf, &index, &kir::Guard::default());
            body.push(Stmt::Store {
                buf,
                offset: b.offset(buf, &index),
                value: v.clone(),
            });
        }
        Ok(body)
    }

    /// Whether the element `x` (its operands' values) is strictly before `y` by the
    /// comparator, inlined into `body`.
    fn before(
        &self,
        b: &mut Builder<'_>,
        x: &[Value],
        y: &[Value],
        body: &mut Vec<Stmt>,
    ) -> Result<Value, CodegenError> {
        let args: Vec<Value> = x
            .iter()
            .zip(y)
            .flat_map(|(a, z)| [a.clone(), z.clone()])
            .collect();
        let r = b.inline_scalar_call(self.launch.comparator, args, "sort", "a comparator", body)?;
        if r.ty() != ScalarType::Pred {
            return Err(b.unsupported("sort", format!("a comparator giving {}", r.ty())));
        }
        Ok(r)
    }
}
