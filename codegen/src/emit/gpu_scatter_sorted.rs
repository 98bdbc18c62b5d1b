//! The sorted form of an ordered GPU scatter ([`fusion::gpu_scatter::SortedScatter`]):
//! its kernels, launched in order by the program builder. Keys (`dest * positions +
//! position`, `s64`) by a thread per scatter position, groups of them sorted by rank,
//! merge passes over the groups, then a
//! thread per (sorted position, window element) at the head of each run of one
//! destination applying the run's updates in order with the sequential kernel's
//! statements (`update_element.rs`) at the update index the key's position gives. Every
//! output element is written by one thread, in the sequential order: the evaluator's bits
//! for any combiner, float adds included, without atomics.
//!
//! Buffers, bound by the builder by source: the scatter's indices and updates
//! (`Operand(1)`, `Operand(2)`) and output (`Output(0)`, read-write, holding the operand
//! on entry) where a kernel reads them, the keys read (`Output(1)`) and the keys written
//! (`Output(2)`).

use affine::{Expr, Interval, VarKind};
use fusion::gpu_scatter::{sorted_scatter, SortedScatter};
use hlo::{CompId, ElementType, InstrId};

use super::assemble::EmittedKernel;
use super::builder::{BufferSource, Builder};
use super::update_element::{scatter_body, scatter_target};
use crate::error::CodegenError;
use crate::kir::{self, Access, BinOp, CmpOp, Const, Guard, ScalarType, Stmt, UnOp, Value};

/// The sorted form of scatter `id` of `comp` on `target`, or `None` (a CPU target, or a
/// scatter another strategy takes).
pub fn gpu_sorted_scatter(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
) -> Option<SortedScatter> {
    if !target.gpu_emitters {
        return None;
    }
    sorted_scatter(module, comp, id).ok().flatten()
}

/// Kernel `k` of the sorted scatter `id` of `comp` (0: keys, 1: groups, `2..=passes + 1`:
/// merge passes, last: apply) as kernel `name`.
pub fn emit_sorted_scatter_kernel(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
    k: usize,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    let instr = module.computation(comp).instr(id);
    let mut b = Builder::new(module, target, instr.name());
    let ss = gpu_sorted_scatter(module, target, comp, id)
        .ok_or_else(|| b.unsupported("scatter", "the sorted form (an ordered GPU scatter)"))?;
    let keys_shape = hlo::Shape::array(ElementType::S64, vec![ss.positions]);
    let keys_name = format!("{}.keys", instr.name());
    let window_dims = window_dims(module, comp, id);
    let (body, space) = if k == 0 {
        let mut body = Vec::new();
        let t = scatter_target(&mut b, comp, id, &mut body)?;
        let keys = b.add_buffer(
            &keys_name,
            &keys_shape,
            Access::Out,
            BufferSource::Output(2),
        )?;
        let i = Expr::dim(0);
        let at = update_index(i, &t.udims, &window_dims, Expr::constant(0));
        let n = ss.positions;
        // The start indices' statements, the guard and the offset at position i.
        retarget(&mut b, &mut body, &at, &[n]);
        let mut guard = t.guard.clone();
        for c in &mut guard.conds {
            c.0 = at_index(&b, c.0, &at);
        }
        let offset = at_index(&b, t.offset, &at);
        let key = Value::Cond(
            guard,
            Box::new(Value::Index(b.simplify(offset * n + i))),
            Box::new(Value::Index(b.simplify(Expr::constant(ss.skipped * n) + i))),
        );
        body.push(Stmt::Store {
            buf: keys,
            offset: i,
            value: key,
        });
        (body, vec![n])
    } else if k <= ss.widths.len() + 1 {
        let src = b.add_buffer(&keys_name, &keys_shape, Access::In, BufferSource::Output(1))?;
        let dst = b.add_buffer(
            &keys_name,
            &keys_shape,
            Access::Out,
            BufferSource::Output(2),
        )?;
        b.dims = vec![Interval::new(0, ss.positions - 1)];
        let body = if k == 1 {
            group_ranks(&mut b, &ss, src, dst)
        } else {
            merge_pass(&mut b, &ss, ss.widths[k - 2], src, dst)
        };
        (body, vec![ss.positions])
    } else if k == ss.widths.len() + 2 {
        (
            apply(&mut b, &ss, comp, id, &window_dims)?,
            vec![ss.positions, ss.window],
        )
    } else {
        return Err(CodegenError::Internal(format!(
            "sorted scatter kernel {k} of {}",
            ss.launches()
        )));
    };
    let launch = fusion::gpu_launch::element_launch(&space, &[])
        .map_err(|e| CodegenError::Internal(format!("sorted scatter launch: {e}")))?;
    let title = format!(
        "scatter {}\n{}",
        instr.name(),
        ss.launch_text(k, (launch.blocks, launch.threads))
    );
    super::gpu_loop::launch_kernel(b, name, title, body, &launch)
}

/// The update dimensions of scatter `id` that are window dimensions.
fn window_dims(module: &hlo::Module, comp: CompId, id: InstrId) -> Vec<usize> {
    module
        .computation(comp)
        .instr(id)
        .scatter_dimension_numbers()
        .map(|dn| {
            dn.update_window_dims
                .iter()
                .filter_map(|&d| usize::try_from(d).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The update index of scatter position `pos` (row-major over the non-window update
/// dimensions: the sequential order) and window element `w` (row-major over the window
/// dimensions).
fn update_index(pos: Expr, udims: &[i64], window: &[usize], w: Expr) -> Vec<Expr> {
    let mut index = vec![Expr::constant(0); udims.len()];
    for (is_window, mut linear) in [(false, pos), (true, w)] {
        for d in (0..udims.len()).rev() {
            if window.contains(&d) == is_window {
                index[d] = linear.modulo(Expr::constant(udims[d]));
                linear = linear.floor_div(Expr::constant(udims[d]));
            }
        }
    }
    index
}

/// Rewrites `body`, built at the update index `(d0, d1, ...)`, to update index `at`
/// (over the kernel's dimensions `dims` and runtime variables), and makes `dims` the
/// builder's dimensions.
fn retarget(b: &mut Builder<'_>, body: &mut [Stmt], at: &[Expr], dims: &[i64]) {
    b.dims = dims.iter().map(|&n| Interval::new(0, n - 1)).collect();
    kir::rewrite_exprs(body, &mut |e| {
        let e = e.substitute(&mut |v| {
            (v.kind == VarKind::Dim)
                .then(|| at.get(v.index as usize).copied())
                .flatten()
        });
        b.simplify(e)
    });
}

/// `e` (over the update index `(d0, d1, ...)`) at update index `at`, simplified.
fn at_index(b: &Builder<'_>, e: Expr, at: &[Expr]) -> Expr {
    b.simplify(e.substitute(&mut |v| {
        (v.kind == VarKind::Dim)
            .then(|| at.get(v.index as usize).copied())
            .flatten()
    }))
}

fn s64(v: i64) -> Value {
    Value::Const(ScalarType::S64, Const::Int(i128::from(v)))
}

fn bin(op: BinOp, x: Value, y: Value) -> Value {
    Value::Binary(op, Box::new(x), Box::new(y), ScalarType::S64)
}

fn and(x: Value, y: Value) -> Value {
    Value::Binary(BinOp::And, Box::new(x), Box::new(y), ScalarType::Pred)
}

fn not(x: Value) -> Value {
    Value::Unary(UnOp::Not, Box::new(x), ScalarType::Pred)
}

fn lt(x: Value, y: Value) -> Value {
    Value::Compare(CmpOp::Lt, false, Box::new(x), Box::new(y))
}

/// Binds `value` to a fresh immutable variable (appended to `body`).
fn bind(b: &mut Builder<'_>, value: Value, body: &mut Vec<Stmt>) -> Value {
    let ty = value.ty();
    let var = b.new_var(ty);
    body.push(Stmt::Let { var, value });
    Value::Var(var, ty)
}

/// A binary search for the first offset in `[lo, hi)` (s64 values, relative to `base`)
/// of keys buffer `keys` whose key is not `below`: `steps` halvings, each probe at
/// `base + mid` clamped into the buffer's `[0, last]` (a probe past the end, once the
/// range is empty or cut short, reads an element it then ignores); returns the `lo`
/// variable, the offset found.
fn lower_bound(
    b: &mut Builder<'_>,
    keys: usize,
    (lo, hi): (Value, Value),
    (base, last): (Expr, i64),
    steps: i64,
    below: &dyn Fn(Value) -> Value,
    body: &mut Vec<Stmt>,
) -> Value {
    let (lo_v, hi_v) = (b.new_var(ScalarType::S64), b.new_var(ScalarType::S64));
    body.push(Stmt::Decl {
        var: lo_v,
        value: lo,
    });
    body.push(Stmt::Decl {
        var: hi_v,
        value: hi,
    });
    let (lo, hi) = (
        Value::Var(lo_v, ScalarType::S64),
        Value::Var(hi_v, ScalarType::S64),
    );
    let step = b.new_range(Interval::new(0, steps - 1));
    let mut inner = Vec::new();
    let mid = bind(
        b,
        bin(BinOp::Div, bin(BinOp::Add, lo.clone(), hi.clone()), s64(2)),
        &mut inner,
    );
    let probe = b.new_runtime(Interval::new(0, last));
    let at = bin(BinOp::Add, Value::Index(base), mid.clone());
    inner.push(Stmt::BindIndex {
        var: probe,
        value: bin(BinOp::Max, s64(0), bin(BinOp::Min, at, s64(last))),
    });
    let key = Value::Load {
        buf: keys,
        offset: Expr::var(probe),
        ty: ScalarType::S64,
    };
    let after = bind(b, below(key), &mut inner);
    let active = bind(b, lt(lo.clone(), hi.clone()), &mut inner);
    inner.push(Stmt::Assign {
        var: lo_v,
        value: Value::Select(
            Box::new(and(active.clone(), after.clone())),
            Box::new(bin(BinOp::Add, mid.clone(), s64(1))),
            Box::new(lo.clone()),
        ),
    });
    inner.push(Stmt::Assign {
        var: hi_v,
        value: Value::Select(
            Box::new(and(active, not(after))),
            Box::new(mid),
            Box::new(hi),
        ),
    });
    body.push(Stmt::serial_loop(step, 0, steps - 1, inner));
    lo
}

/// Search steps that empty a range of up to `n` elements.
fn steps_for(n: i64) -> i64 {
    64 - i64::from((n.max(1) as u64).leading_zeros())
}

/// The group pass at the thread's key `d0`: stored at its group's start plus its rank
/// among the group's keys (the count of those below it; keys are distinct), so each
/// group of `ss.group` keys (the last one cut short at the end) comes out sorted.
fn group_ranks(b: &mut Builder<'_>, ss: &SortedScatter, src: usize, dst: usize) -> Vec<Stmt> {
    let n = ss.positions;
    let i = Expr::dim(0);
    let load = |offset: Expr| Value::Load {
        buf: src,
        offset,
        ty: ScalarType::S64,
    };
    let mut body = Vec::new();
    let mine = bind(b, load(i), &mut body);
    let base = b.simplify(i.floor_div(Expr::constant(ss.group)) * ss.group);
    let rank = b.new_var(ScalarType::S64);
    body.push(Stmt::Decl {
        var: rank,
        value: s64(0),
    });
    let g = b.new_range(Interval::new(0, ss.group - 1));
    let other = b.simplify(base + Expr::var(g));
    let below = Value::Select(
        Box::new(lt(load(other), mine.clone())),
        Box::new(s64(1)),
        Box::new(s64(0)),
    );
    let count = vec![Stmt::Assign {
        var: rank,
        value: bin(BinOp::Add, Value::Var(rank, ScalarType::S64), below),
    }];
    let in_keys = Guard {
        conds: vec![(other, 0, n - 1)],
    };
    body.push(Stmt::serial_loop(
        g,
        0,
        ss.group - 1,
        Stmt::guarded(in_keys, count),
    ));
    let dest = b.new_runtime(Interval::new(0, n - 1));
    body.push(Stmt::BindIndex {
        var: dest,
        value: bin(
            BinOp::Add,
            Value::Index(base),
            Value::Var(rank, ScalarType::S64),
        ),
    });
    body.push(Stmt::Store {
        buf: dst,
        offset: Expr::var(dest),
        value: mine,
    });
    body
}

/// A merge pass of width `w` at the thread's key `d0`: its rank in the other run by a
/// binary search (keys are distinct: no ties), stored at its merged position.
fn merge_pass(
    b: &mut Builder<'_>,
    ss: &SortedScatter,
    w: i64,
    src: usize,
    dst: usize,
) -> Vec<Stmt> {
    let n = ss.positions;
    let i = Expr::dim(0);
    let mut body = Vec::new();
    let mine = bind(
        b,
        Value::Load {
            buf: src,
            offset: i,
            ty: ScalarType::S64,
        },
        &mut body,
    );
    let base = b.simplify(i.floor_div(Expr::constant(2 * w)) * (2 * w));
    let mut sides = Vec::new();
    for left in [true, false] {
        let mut side = Vec::new();
        let other = b.simplify(if left { base + w } else { base });
        // A left run's partner may be cut short (or empty) at the end.
        let len = if left {
            let rest = Value::Index(b.simplify(Expr::constant(n) - other));
            bin(BinOp::Max, s64(0), bin(BinOp::Min, s64(w), rest))
        } else {
            s64(w)
        };
        let m = mine.clone();
        let found = lower_bound(
            b,
            src,
            (s64(0), len),
            (other, n - 1),
            steps_for(w),
            &|key| lt(key, m.clone()),
            &mut side,
        );
        let own = b.simplify(if left { i - base } else { i - base - w });
        let dest = b.new_runtime(Interval::new(0, n - 1));
        side.push(Stmt::BindIndex {
            var: dest,
            value: bin(BinOp::Add, Value::Index(b.simplify(base + own)), found),
        });
        side.push(Stmt::Store {
            buf: dst,
            offset: Expr::var(dest),
            value: mine.clone(),
        });
        sides.push(side);
    }
    let right = sides.pop().unwrap_or_default();
    let left = sides.pop().unwrap_or_default();
    body.push(Stmt::If {
        guard: Guard {
            conds: vec![(b.simplify(i.modulo(Expr::constant(2 * w))), 0, w - 1)],
        },
        body: left,
        else_body: right,
    });
    body
}

/// The apply kernel at (sorted position `d0`, window element `d1`): the head of a run of
/// one destination applies the run's updates in order.
fn apply(
    b: &mut Builder<'_>,
    ss: &SortedScatter,
    comp: CompId,
    id: InstrId,
    window: &[usize],
) -> Result<Vec<Stmt>, CodegenError> {
    let n = ss.positions;
    let (udims, mut update) = scatter_body(b, comp, id, false)?;
    let pos = b.new_runtime(Interval::new(0, n - 1));
    let at = update_index(Expr::var(pos), &udims, window, Expr::dim(1));
    retarget(b, &mut update, &at, &[n, ss.window]);
    let keys_shape = hlo::Shape::array(ElementType::S64, vec![n]);
    let name = format!("{}.keys", b.module.computation(comp).instr(id).name());
    let keys = b.add_buffer(&name, &keys_shape, Access::In, BufferSource::Output(1))?;
    let key = |offset: Expr| Value::Load {
        buf: keys,
        offset,
        ty: ScalarType::S64,
    };
    let p = Expr::dim(0);
    let mut body = Vec::new();
    let dest = bind(b, bin(BinOp::Div, key(p), s64(n)), &mut body);
    let prev = b.simplify(p - 1);
    let differs = Value::Compare(
        CmpOp::Ne,
        false,
        Box::new(bin(BinOp::Div, key(prev), s64(n))),
        Box::new(dest.clone()),
    );
    let head = Value::Cond(
        Guard {
            conds: vec![(p, 1, n - 1)],
        },
        Box::new(differs),
        Box::new(Value::Const(ScalarType::Pred, Const::Bool(true))),
    );
    let live = and(
        head,
        Value::Compare(
            CmpOp::Ne,
            false,
            Box::new(dest.clone()),
            Box::new(s64(ss.skipped)),
        ),
    );
    let live_var = b.new_runtime(Interval::new(0, 1));
    body.push(Stmt::BindIndex {
        var: live_var,
        value: Value::Select(Box::new(live), Box::new(s64(1)), Box::new(s64(0))),
    });
    // The run's end: the first key of a later destination.
    let mut run = Vec::new();
    let limit = bind(
        b,
        bin(BinOp::Mul, bin(BinOp::Add, dest, s64(1)), s64(n)),
        &mut run,
    );
    let end = lower_bound(
        b,
        keys,
        (Value::Index(b.simplify(p + 1)), s64(n)),
        (Expr::constant(0), n - 1),
        ss.search_steps,
        &|k| lt(k, limit.clone()),
        &mut run,
    );
    let end_var = b.new_runtime(Interval::new(1, n));
    run.push(Stmt::BindIndex {
        var: end_var,
        value: end,
    });
    let end = Expr::var(end_var);
    // The run's positions `p + c * chunk + j` while below `end` (which is at most `n`, so
    // every key read lies in the buffer): one bound per guard, not chunk-aligned starts
    // with both edges checked, which left NVRTC 13.0 spilling registers in this loop.
    let (c, j) = (
        b.new_range(Interval::new(0, ss.chunks - 1)),
        b.new_range(Interval::new(0, ss.chunk - 1)),
    );
    let start = b.simplify(p + Expr::var(c) * ss.chunk);
    let q = b.simplify(start + Expr::var(j));
    let mut each = vec![Stmt::BindIndex {
        var: pos,
        value: bin(BinOp::Rem, key(q), s64(n)),
    }];
    each.extend(update);
    let in_run = Guard {
        conds: vec![(b.simplify(end - q), 1, n)],
    };
    let chunk = vec![Stmt::serial_loop(
        j,
        0,
        ss.chunk - 1,
        Stmt::guarded(in_run, each),
    )];
    let chunk_live = Guard {
        conds: vec![(b.simplify(end - start), 1, n)],
    };
    run.push(Stmt::serial_loop(
        c,
        0,
        ss.chunks - 1,
        Stmt::guarded(chunk_live, chunk),
    ));
    body.push(Stmt::If {
        guard: Guard {
            conds: vec![(Expr::var(live_var), 1, 1)],
        },
        body: run,
        else_body: Vec::new(),
    });
    Ok(body)
}
