//! What the GPU reduction emitters share (`gpu_row_reduce`, `gpu_column_reduce`): a
//! kernel whose hero is a reduce the launch of [`fusion::gpu_reduction::reduction_of`]
//! takes. Each thread folds the input elements the thread map gives it at chunks
//! `0, 1, ..` (its first element starts its partial, so the reduce's initial value
//! enters once per output, whatever it is); each emitter then combines the partials of
//! one output in its own way; and one thread per output combines the initial value with
//! the result and stores the root (the reduce or its elementwise epilogue) at the output
//! index. The indices are the thread map's results with its variables bound to the
//! kernel's thread, block and chunk variables: the loads are the ones `hloc indexing
//! --coalescing` counts.
//!
//! Only reducers that are one associative and commutative operation (`hlo::ir::reducer`)
//! run this way, on types of 32 bits or more, and the max or min of narrower floats (exact
//! in any order): the threads reassociate the reduction, as XLA's GPU emitters do. A
//! 16-bit float sum keeps the loop emitter's in-order loop per output.

use affine::{Expr, Interval, Var, VarKind};
use fusion::gpu_launch::{coords, GpuEmitter, Launch};
use fusion::gpu_reduction::reduction_of;
use hlo::{CompId, InstrId};

use super::assemble::store_outputs;
use super::builder::{Builder, Leaf};
use super::gpu_coords::LaunchVars;
use crate::error::CodegenError;
use crate::kir::{self, Const, LoopKind, ShuffleKind, Stmt, Value};

/// A kernel that a GPU reduction emitter takes.
pub(super) struct ReductionPlan {
    /// The reduce (the hero).
    pub reduce: InstrId,
    /// The kernel's root: the reduce, or elementwise ops over it (an epilogue).
    pub root: InstrId,
    /// Its reducer computation.
    pub reducer: CompId,
    /// The launch and thread map.
    pub launch: Launch,
    /// Input elements per output (the product of the reduced dimensions).
    pub elements: i64,
    /// Chunks at which every thread of an output in range has an element.
    pub full_chunks: i64,
}

impl Builder<'_> {
    /// The reduction plan of the kernel rooted at `(comp, root)` (`fused`: `comp` is a
    /// fusion's computation), where [`reduction_of`] takes it.
    pub(super) fn reduction_plan(
        &self,
        comp: CompId,
        root: InstrId,
        fused: bool,
    ) -> Option<ReductionPlan> {
        let c = self.module.computation(comp);
        let (hero, launch) = reduction_of(self.module, c, root, fused, &self.target.device)?;
        let instr = c.instr(hero);
        let input = c.instr(instr.operands()[0]).shape();
        let elements: i64 = instr
            .dimensions()?
            .iter()
            .map(|&d| input.dims()[d as usize])
            .product();
        let per_chunk = match launch.emitter {
            GpuEmitter::RowReduction { lanes } => lanes,
            GpuEmitter::ColumnReduction { parts, .. } => parts,
            GpuEmitter::Loop | GpuEmitter::Transpose => return None,
        };
        Some(ReductionPlan {
            reduce: hero,
            root,
            reducer: instr.to_apply()?,
            elements,
            full_chunks: elements / per_chunk,
            launch,
        })
    }
}

/// The element type of each result of the reduce at `(comp, reduce)` in the kernel IR
/// (one for a single-operand reduce, one per tuple element for a variadic one).
pub(super) fn reduce_types(
    b: &Builder<'_>,
    comp: CompId,
    reduce: InstrId,
) -> Result<Vec<kir::ScalarType>, CodegenError> {
    let shape = b.module.computation(comp).instr(reduce).shape();
    let shapes: Vec<&hlo::Shape> = if shape.is_tuple() {
        shape.tuple_shapes().iter().collect()
    } else {
        vec![shape]
    };
    shapes
        .into_iter()
        .map(|s| {
            s.element_type()
                .and_then(kir::ScalarType::from_element)
                .ok_or_else(|| b.unsupported("reduce", "a GPU reduction of this element type"))
        })
        .collect()
}

/// Typed partials: one variable per operand of the reduce.
pub(super) type Partials = Vec<(kir::VarId, kir::ScalarType)>;

/// `partials` as values.
pub(super) fn partial_values(partials: &[(kir::VarId, kir::ScalarType)]) -> Vec<Value> {
    partials.iter().map(|&(v, t)| Value::Var(v, t)).collect()
}

/// New variables of `types`, each declared as a zero (a partial before its first
/// element; never read then).
pub(super) fn declare_partials(
    b: &mut Builder<'_>,
    types: &[kir::ScalarType],
    body: &mut Vec<Stmt>,
) -> Partials {
    types
        .iter()
        .map(|&ty| {
            let var = b.new_var(ty);
            body.push(Stmt::Decl {
                var,
                value: zero(ty),
            });
            (var, ty)
        })
        .collect()
}

/// `partials[k] = values[k]` for every operand.
pub(super) fn assign_all(
    partials: &[(kir::VarId, kir::ScalarType)],
    values: Vec<Value>,
) -> Vec<Stmt> {
    partials
        .iter()
        .zip(values)
        .map(|(&(var, _), value)| Stmt::Assign { var, value })
        .collect()
}

/// The reducer `red` applied to the tuples `a` (its first parameters) and `b` (its last):
/// its results, one per operand (statements appended to `body`). With one operand, the
/// reducer's one result, as [`Builder::combine`] computes it.
pub(super) fn combine_all(
    bld: &mut Builder<'_>,
    red: CompId,
    a: Vec<Value>,
    b: Vec<Value>,
    body: &mut Vec<Stmt>,
) -> Result<Vec<Value>, CodegenError> {
    let rc = bld.module.computation(red);
    let n = a.len();
    let mut params = Vec::with_capacity(2 * n);
    for (p, v) in a.into_iter().chain(b).enumerate() {
        let pid = rc
            .parameter(p)
            .ok_or_else(|| bld.unsupported("reduce", "reducer with too few parameters"))?;
        params.push(pid);
        bld.leaves.insert((red, pid), Leaf::Value(v));
    }
    bld.memo.push(Default::default());
    let r = bld.values(red, rc.root(), &[], false, body);
    bld.memo.pop();
    for pid in params {
        bld.leaves.remove(&(red, pid));
    }
    let r = r?;
    if r.len() != n {
        return Err(bld.unsupported("reduce", "reducer result count differs from the inputs"));
    }
    Ok(r)
}

/// A thread map's index at the kernel's `vars`, and its domain split in two guards: the
/// conditions without the chunk (the output's: the last block's rows or columns past the
/// end), and those with it (a thread's last chunk), each without the conditions the
/// variables' bounds already decide.
pub(super) fn map_at(
    b: &Builder<'_>,
    launch: &Launch,
    vars: LaunchVars,
) -> (Vec<Expr>, kir::Guard, kir::Guard) {
    let map = &launch.thread_map;
    let index: Vec<Expr> = map
        .results()
        .iter()
        .map(|&e| b.simplify(vars.apply(e)))
        .collect();
    // The constraints, and the map's bounds of its thread, block and chunk variables (the
    // simplifier moves a constraint on one variable into its bounds).
    let bounds = [
        (Var::dim(coords::TH_X), map.dims()[coords::TH_X as usize]),
        (Var::dim(coords::BL_X), map.dims()[coords::BL_X as usize]),
        (
            Var::range(coords::CHUNK),
            map.ranges()[coords::CHUNK as usize],
        ),
    ];
    let conds = bounds
        .into_iter()
        .map(|(v, iv)| (Expr::var(v), iv))
        .chain(map.constraints().iter().map(|c| (c.expr, c.interval)));
    let (mut outer, mut element) = (kir::Guard::default(), kir::Guard::default());
    for (expr, interval) in conds {
        let e = b.simplify(vars.apply(expr));
        let decided = b.range_of(e).is_ok_and(|r| interval.contains_interval(r));
        if decided {
            continue;
        }
        let side = if expr.uses_kind(VarKind::Range) {
            &mut element
        } else {
            &mut outer
        };
        side.conds.push((e, interval.lo, interval.hi));
    }
    (index, outer, element)
}

/// `stmts` with dimension variables `from, from + 1, ..` replaced by `index`, simplified.
pub(super) fn bind_dims(b: &Builder<'_>, stmts: &mut [Stmt], from: usize, index: &[Expr]) {
    kir::rewrite_exprs(stmts, &mut |e| {
        let e = e.substitute(&mut |v| {
            let i = (v.index as usize).checked_sub(from)?;
            (v.kind == VarKind::Dim)
                .then(|| index.get(i).copied())
                .flatten()
        });
        b.simplify(e)
    })
}

/// A thread's partial result: the statements that fold its elements, under the output's
/// guard, into `partials`.
pub(super) struct ThreadPartial {
    /// The declaration of the partials and the folds.
    pub body: Vec<Stmt>,
    /// The partials, one per operand (meaningful where the thread had an element).
    pub partials: Partials,
    /// The input index of the thread's first element, in the kernel's variables.
    pub first_index: Vec<Expr>,
    /// The output's condition (the same at every chunk).
    pub outer_guard: kir::Guard,
}

/// The fold of the input elements thread `thread` of block `block` reads under `plan`'s
/// thread map: the first starts the partials, the chunks whole in every output fold in a
/// loop, the partial last chunk under its condition.
pub(super) fn thread_partial(
    b: &mut Builder<'_>,
    comp: CompId,
    plan: &ReductionPlan,
    thread: Var,
    block: Var,
) -> Result<ThreadPartial, CodegenError> {
    let module = b.module;
    let instr = module.computation(comp).instr(plan.reduce);
    let n = instr.operands().len() / 2;
    let inputs: Vec<InstrId> = instr.operands()[..n].to_vec();
    let types = reduce_types(b, comp, plan.reduce)?;
    let chunks = plan.launch.thread_map.ranges()[coords::CHUNK as usize].hi + 1;
    let vars = |chunk: Expr| LaunchVars {
        thread: Expr::var(thread),
        block: Expr::var(block),
        chunk,
        unroll: Expr::constant(0),
    };
    let mut body = Vec::new();
    let partials = declare_partials(b, &types, &mut body);
    // The input's values are built at an index of fresh dimension variables (the
    // elemental emitter checks accesses against their bounds), then those variables are
    // replaced by the thread map's index: the map's constraints guard instead.
    let in_dims: Vec<i64> = module
        .computation(comp)
        .instr(inputs[0])
        .shape()
        .dims()
        .to_vec();
    let first_dim = b.dims.len();
    b.dims
        .extend(in_dims.iter().map(|&n| Interval::new(0, n - 1)));
    let in_index: Vec<Expr> = (0..in_dims.len())
        .map(|i| Expr::dim((first_dim + i) as u32))
        .collect();
    let (first_index, outer_guard, first_guard) = map_at(b, &plan.launch, vars(Expr::constant(0)));
    let mut folds = Vec::new();
    let mut first = Vec::new();
    let vs = b.in_memo_frame(|b| -> Result<Vec<Value>, CodegenError> {
        inputs
            .iter()
            .map(|&input| b.value(comp, input, &in_index, false, &mut first))
            .collect()
    })?;
    first.extend(assign_all(&partials, vs));
    bind_dims(b, &mut first, first_dim, &first_index);
    folds.extend(Stmt::guarded(first_guard, first));
    let reducer = plan.reducer;
    let fold_at = |b: &mut Builder<'_>, chunk: Expr| -> Result<Vec<Stmt>, CodegenError> {
        let (index, _, guard) = map_at(b, &plan.launch, vars(chunk));
        let mut step = Vec::new();
        let fold = b.in_memo_frame(|b| -> Result<Vec<Value>, CodegenError> {
            let mut vs = Vec::with_capacity(inputs.len());
            for &input in &inputs {
                vs.push(b.value(comp, input, &in_index, false, &mut step)?);
            }
            combine_all(b, reducer, partial_values(&partials), vs, &mut step)
        })?;
        step.extend(assign_all(&partials, fold));
        bind_dims(b, &mut step, first_dim, &index);
        Ok(Stmt::guarded(guard, step))
    };
    let whole = plan.full_chunks;
    if whole >= 2 {
        let s = b.new_range(Interval::new(1, whole - 1));
        let step = fold_at(b, Expr::var(s))?;
        folds.push(Stmt::serial_loop(s, 1, whole - 1, step));
    }
    for chunk in whole.max(1)..chunks {
        folds.extend(fold_at(b, Expr::constant(chunk))?);
    }
    body.extend(Stmt::guarded(outer_guard.clone(), folds));
    Ok(ThreadPartial {
        body,
        partials,
        first_index,
        outer_guard,
    })
}

/// The statements storing the kernel's root for the output at `out_index` (in the
/// kernel's variables) from `partials`, the reduce's results without its initial values:
/// the initial values, then the results, as the reduce's first step combines them.
pub(super) fn store_result(
    b: &mut Builder<'_>,
    comp: CompId,
    plan: &ReductionPlan,
    out_bufs: &[usize],
    partials: &[(kir::VarId, kir::ScalarType)],
    out_index: &[Expr],
) -> Result<Vec<Stmt>, CodegenError> {
    let instr = b.module.computation(comp).instr(plan.reduce);
    let n = instr.operands().len() / 2;
    let inits: Vec<InstrId> = instr.operands()[n..].to_vec();
    let reducer = plan.reducer;
    let mut store = Vec::new();
    let results = b.in_memo_frame(|b| -> Result<Vec<Value>, CodegenError> {
        let mut init = Vec::with_capacity(n);
        for &i in &inits {
            init.push(b.value(comp, i, &[], false, &mut store)?);
        }
        combine_all(b, reducer, init, partial_values(partials), &mut store)
    })?;
    let mut accs = Vec::with_capacity(n);
    for value in results {
        let ty = value.ty();
        let acc = b.new_var(ty);
        store.push(Stmt::Let { var: acc, value });
        accs.push(Value::Var(acc, ty));
    }
    let out_dims: Vec<Expr> = (0..out_index.len() as u32).map(Expr::dim).collect();
    let stored = if let [acc] = &accs[..] {
        b.leaves
            .insert((comp, plan.reduce), Leaf::Value(acc.clone()));
        let stored = b.in_memo_frame(|b| {
            store_outputs(b, (comp, plan.root), out_bufs, &out_dims, &mut store)
        });
        b.leaves.remove(&(comp, plan.reduce));
        stored
    } else {
        // A variadic reduce's results, as the elemental emitter would find them computed
        // at the output index (its tuple elements read through `get-tuple-element`).
        b.in_memo_frame(|b| {
            b.memo_put((comp, plan.reduce, out_dims.clone()), accs);
            store_outputs(b, (comp, plan.root), out_bufs, &out_dims, &mut store)
        })
    };
    stored?;
    bind_dims(b, &mut store, 0, out_index);
    Ok(store)
}

/// The kept dimensions of an input index `index` of the reduce at `(comp, reduce)`: the
/// output index it contributes to.
pub(super) fn kept_index(
    b: &Builder<'_>,
    comp: CompId,
    reduce: InstrId,
    index: &[Expr],
) -> Vec<Expr> {
    let reduced = b
        .module
        .computation(comp)
        .instr(reduce)
        .dimensions()
        .unwrap_or(&[]);
    index
        .iter()
        .enumerate()
        .filter(|(d, _)| !reduced.contains(&(*d as i64)))
        .map(|(_, &e)| e)
        .collect()
}

/// A loop over the block's threads giving each one iteration.
pub(super) fn threads_loop(var: Var, threads: i64, body: Vec<Stmt>) -> Stmt {
    Stmt::Loop {
        kind: LoopKind::Threads,
        var,
        lo: 0,
        hi: threads - 1,
        body,
    }
}

/// The shuffle tree combining the partials `partials` (one per operand) of groups of
/// `width` lanes toward each group's lane 0 (`lane` is a thread's lane in its group),
/// where only lanes below `holding` hold a value.
pub(super) fn lane_tree(
    b: &mut Builder<'_>,
    reducer: CompId,
    partials: &[(kir::VarId, kir::ScalarType)],
    lane: Expr,
    width: i64,
    holding: i64,
) -> Result<Vec<Stmt>, CodegenError> {
    let mut out = Vec::new();
    let mut offset = width / 2;
    while offset >= 1 {
        let mut others = Vec::with_capacity(partials.len());
        for &(acc, ty) in partials {
            let other = b.new_var(ty);
            out.push(Stmt::Shuffle {
                var: other,
                value: Value::Var(acc, ty),
                kind: ShuffleKind::Down,
                offset,
                width,
            });
            others.push(Value::Var(other, ty));
        }
        let mut step = Vec::new();
        let v = b.in_memo_frame(|b| {
            combine_all(b, reducer, partial_values(partials), others, &mut step)
        })?;
        step.extend(assign_all(partials, v));
        if holding < width {
            let src = b.simplify(lane + Expr::constant(offset));
            out.extend(Stmt::guarded(
                kir::Guard {
                    conds: vec![(src, 0, holding - 1)],
                },
                step,
            ));
        } else {
            out.extend(step);
        }
        offset /= 2;
    }
    Ok(out)
}

/// A zero of type `ty` (a partial's value before its first element; never read then).
pub(super) fn zero(ty: kir::ScalarType) -> Value {
    let c = if ty == kir::ScalarType::Pred {
        Const::Bool(false)
    } else if ty.is_float() {
        Const::Float(0.0)
    } else {
        Const::Int(0)
    };
    Value::Const(ty, c)
}
