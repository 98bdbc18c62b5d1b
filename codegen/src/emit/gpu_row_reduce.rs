//! The GPU row-reduction emitter: a kernel whose root is a reduce over its input's
//! minor-most physical dimensions (or elementwise ops over one, an epilogue) runs with the launch and thread map of
//! [`fusion::gpu_row_reduction::row_reduction_launch`]. Each thread folds the elements the
//! map gives it at chunks `0, 1, ..` (its first element starts its partial, so the
//! reduce's initial value enters once per row, whatever it is), the lanes of a row combine
//! their partials by a tree of warp shuffles toward lane 0, and lane 0 combines the
//! initial value with the row's result and stores the output. The indices are the thread
//! map's results with its variables bound to the kernel's thread, block and chunk
//! variables: the loads are the ones `hloc indexing --coalescing` counts.
//!
//! Only reducers that are one associative and commutative operation (`hlo::ir::reducer`)
//! run this way, on types of 32 bits or more, and the max or min of narrower floats (exact
//! in any order): the lanes reassociate the reduction, as XLA's GPU emitter does. A 16-bit
//! float sum keeps the loop emitter's in-order loop per output.

use affine::{Expr, Interval, Var, VarKind};
use fusion::gpu_launch::{coords, GpuEmitter, Launch};
use fusion::gpu_row_reduction::row_reduction_of;
use hlo::{CompId, InstrId};

use super::assemble::{finish_launch, store_outputs, EmittedKernel};
use super::builder::{Builder, Leaf};
use super::gpu_coords::LaunchVars;
use crate::error::CodegenError;
use crate::kir::{self, Const, Grid, LoopKind, ShuffleKind, Stmt, Value, WARP_LANES};

/// A kernel that the row-reduction emitter takes.
pub(super) struct RowPlan {
    /// The reduce (the hero).
    reduce: InstrId,
    /// The kernel's root: the reduce, or elementwise ops over it (an epilogue).
    root: InstrId,
    /// Its reducer computation.
    reducer: CompId,
    /// The launch and thread map.
    launch: Launch,
    /// Threads per row.
    lanes: i64,
    /// Elements per row.
    row_len: i64,
}

impl Builder<'_> {
    /// The row-reduction plan of the kernel rooted at `(comp, root)` (`fused`: `comp` is a
    /// fusion's computation), where [`row_reduction_of`] takes it.
    pub(super) fn row_reduction_plan(
        &self,
        comp: CompId,
        root: InstrId,
        fused: bool,
    ) -> Option<RowPlan> {
        let c = self.module.computation(comp);
        let (hero, launch) = row_reduction_of(self.module, c, root, fused, &self.target.device)?;
        let instr = c.instr(hero);
        let GpuEmitter::RowReduction { lanes } = launch.emitter else {
            return None;
        };
        let input = c.instr(instr.operands()[0]).shape();
        let row_len = instr
            .dimensions()?
            .iter()
            .map(|&d| input.dims()[d as usize])
            .product();
        Some(RowPlan {
            reduce: hero,
            root,
            reducer: instr.to_apply()?,
            launch,
            lanes,
            row_len,
        })
    }
}

/// The kernel of `plan` for the reduce at `(comp, plan.reduce)`, storing into `out_bufs`.
pub(super) fn row_reduction_kernel(
    mut b: Builder<'_>,
    name: &str,
    title: String,
    comp: CompId,
    out_bufs: &[usize],
    plan: RowPlan,
) -> Result<EmittedKernel, CodegenError> {
    let RowPlan {
        reduce,
        root,
        reducer,
        ref launch,
        lanes,
        row_len,
    } = plan;
    let module = b.module;
    let instr = module.computation(comp).instr(reduce);
    let (input, init) = (instr.operands()[0], instr.operands()[1]);
    let reduced = instr.dimensions().unwrap_or(&[]).to_vec();
    let ty = instr
        .shape()
        .element_type()
        .and_then(kir::ScalarType::from_element)
        .ok_or_else(|| b.unsupported("reduce", "a row reduction of this element type"))?;
    let map = &launch.thread_map;
    let chunks = map.ranges()[coords::CHUNK as usize].hi + 1;
    let block = b.new_range(Interval::new(0, launch.blocks - 1));
    let thread = b.new_range(Interval::new(0, launch.threads - 1));
    // The map's index at chunk `chunk` in the kernel's variables, and its domain split in
    // two: the row's conditions (the last block's rows past the end), the same at every
    // chunk, and the element's (a row's last chunk), each without the conditions that
    // the variables' bounds already decide.
    let at = |b: &Builder<'_>, chunk: Expr| {
        let vars = LaunchVars {
            thread: Expr::var(thread),
            block: Expr::var(block),
            chunk,
            unroll: Expr::constant(0),
        };
        let index: Vec<Expr> = map
            .results()
            .iter()
            .map(|&e| b.simplify(vars.apply(e)))
            .collect();
        // The constraints, and the map's bounds of its thread, block and chunk variables
        // (the simplifier moves a constraint on one variable into its bounds).
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
        let (mut row, mut element) = (kir::Guard::default(), kir::Guard::default());
        for (expr, interval) in conds {
            let e = b.simplify(vars.apply(expr));
            let decided = b.range_of(e).is_ok_and(|r| interval.contains_interval(r));
            if decided {
                continue;
            }
            let side = if expr.uses_kind(VarKind::Range) {
                &mut element
            } else {
                &mut row
            };
            side.conds.push((e, interval.lo, interval.hi));
        }
        (index, row, element)
    };
    let guarded = |guard: kir::Guard, body: Vec<Stmt>| {
        if guard.is_true() {
            body
        } else {
            vec![Stmt::If {
                guard,
                body,
                else_body: Vec::new(),
            }]
        }
    };
    let mut body = Vec::new();
    let mut partial = b.new_var(ty);
    body.push(Stmt::Decl {
        var: partial,
        value: zero(ty),
    });
    // The input's values are built at an index of fresh dimension variables (the
    // elemental emitter checks accesses against their bounds), then those variables are
    // replaced by the thread map's index: the map's constraints guard instead.
    let in_dims: Vec<i64> = module
        .computation(comp)
        .instr(input)
        .shape()
        .dims()
        .to_vec();
    let first_dim = b.dims.len();
    b.dims
        .extend(in_dims.iter().map(|&n| Interval::new(0, n - 1)));
    let in_index: Vec<Expr> = (0..in_dims.len())
        .map(|i| Expr::dim((first_dim + i) as u32))
        .collect();
    let at_threads = |b: &Builder<'_>, stmts: &mut Vec<Stmt>, from: usize, index: &[Expr]| {
        kir::rewrite_exprs(stmts, &mut |e| {
            let e = e.substitute(&mut |v| {
                let i = (v.index as usize).checked_sub(from)?;
                (v.kind == VarKind::Dim)
                    .then(|| index.get(i).copied())
                    .flatten()
            });
            b.simplify(e)
        })
    };
    // The first chunk starts the thread's partial.
    let (first_index, row_guard, first_guard) = at(&b, Expr::constant(0));
    let mut row_body = Vec::new();
    let mut first = Vec::new();
    let v = b.in_memo_frame(|b| b.value(comp, input, &in_index, false, &mut first))?;
    first.push(Stmt::Assign {
        var: partial,
        value: v,
    });
    at_threads(&b, &mut first, first_dim, &first_index);
    row_body.extend(guarded(first_guard, first));
    // Each further chunk folds one element in: a loop over the chunks whole in every row,
    // then the partial last chunk under its condition.
    let whole = row_len / lanes;
    let fold_at = |b: &mut Builder<'_>, chunk: Expr| -> Result<Vec<Stmt>, CodegenError> {
        let (index, _, guard) = at(b, chunk);
        let mut step = Vec::new();
        let fold = b.in_memo_frame(|b| -> Result<Value, CodegenError> {
            let v = b.value(comp, input, &in_index, false, &mut step)?;
            b.combine(reducer, Value::Var(partial, ty), v, &mut step)
        })?;
        step.push(Stmt::Assign {
            var: partial,
            value: fold,
        });
        at_threads(b, &mut step, first_dim, &index);
        Ok(guarded(guard, step))
    };
    if whole >= 2 {
        let s = b.new_range(Interval::new(1, whole - 1));
        let step = fold_at(&mut b, Expr::var(s))?;
        row_body.push(Stmt::serial_loop(s, 1, whole - 1, step));
    }
    if chunks > whole.max(1) {
        row_body.extend(fold_at(&mut b, Expr::constant(chunks - 1))?);
    }
    body.extend(guarded(row_guard.clone(), row_body));
    // The lanes' tree toward lane 0; a lane without an element (a row shorter than the
    // lanes) is never combined in. A row of several warps: each warp's lane 0 leaves its
    // result in shared memory, and after a barrier the first warp combines those.
    let width = lanes.min(WARP_LANES);
    let lane = Expr::var(thread).modulo(Expr::constant(width));
    body.extend(lane_tree(
        &mut b,
        reducer,
        (partial, ty),
        lane,
        width,
        row_len.min(width),
    )?);
    let mut loops = Vec::new();
    let (store_thread, row_guard) = if lanes > WARP_LANES {
        let warps = lanes / WARP_LANES;
        let shared = b.new_local("the row's warp results".into(), ty, warps);
        b.locals[shared].space = kir::MemorySpace::Block;
        body.push(Stmt::If {
            guard: kir::Guard {
                conds: vec![(b.simplify(lane), 0, 0)],
            },
            body: vec![Stmt::LocalStore {
                local: shared,
                offset: b.simplify(Expr::var(thread).floor_div(Expr::constant(WARP_LANES))),
                value: Value::Var(partial, ty),
            }],
            else_body: Vec::new(),
        });
        loops.push(threads_loop(
            thread,
            launch.threads,
            std::mem::take(&mut body),
        ));
        loops.push(Stmt::Barrier);
        if !row_guard.is_true() {
            return Err(CodegenError::Internal(format!(
                "a row of several warps with rows out of range in `{}`",
                b.instr_name
            )));
        }
        let second = b.new_range(Interval::new(0, launch.threads - 1));
        let partial2 = b.new_var(ty);
        body.push(Stmt::Decl {
            var: partial2,
            value: zero(ty),
        });
        body.push(Stmt::If {
            guard: kir::Guard {
                conds: vec![(Expr::var(second), 0, warps - 1)],
            },
            body: vec![Stmt::Assign {
                var: partial2,
                value: Value::LocalLoad {
                    local: shared,
                    offset: Expr::var(second),
                    ty,
                },
            }],
            else_body: Vec::new(),
        });
        // The first warp's lanes below the warp count hold a value: groups as wide as
        // that count rounded up to a power of two combine them.
        let width2 = (warps as u64)
            .next_power_of_two()
            .clamp(2, WARP_LANES as u64) as i64;
        let lane2 = Expr::var(second).modulo(Expr::constant(width2));
        body.extend(lane_tree(
            &mut b,
            reducer,
            (partial2, ty),
            lane2,
            width2,
            warps,
        )?);
        partial = partial2;
        (second, kir::Guard::default())
    } else {
        (thread, row_guard)
    };
    // Lane 0 of a row in range: the initial value, then the row's result, as the reduce's
    // first step combines them; the root is computed from it at the output index.
    let out_index: Vec<Expr> = first_index
        .iter()
        .enumerate()
        .filter(|(d, _)| !reduced.contains(&(*d as i64)))
        .map(|(_, &e)| {
            // A row of a whole block: its index is the block's, whichever thread stores.
            b.simplify(e.substitute(&mut |v| {
                (v == thread && store_thread != thread).then_some(Expr::constant(0))
            }))
        })
        .collect();
    let mut store = Vec::new();
    let result = b.in_memo_frame(|b| -> Result<Value, CodegenError> {
        let init = b.value(comp, init, &[], false, &mut store)?;
        b.combine(reducer, init, Value::Var(partial, ty), &mut store)
    })?;
    let acc = b.new_var(ty);
    store.push(Stmt::Let {
        var: acc,
        value: result,
    });
    b.leaves
        .insert((comp, reduce), Leaf::Value(Value::Var(acc, ty)));
    let out_dims: Vec<Expr> = (0..out_index.len() as u32).map(Expr::dim).collect();
    let stored =
        b.in_memo_frame(|b| store_outputs(b, (comp, root), out_bufs, &out_dims, &mut store));
    b.leaves.remove(&(comp, reduce));
    stored?;
    at_threads(&b, &mut store, 0, &out_index);
    let mut store_guard = row_guard;
    let store_lane = Expr::var(store_thread).modulo(Expr::constant(lanes));
    store_guard.conds.push((b.simplify(store_lane), 0, 0));
    body.extend(guarded(store_guard, store));
    loops.push(threads_loop(store_thread, launch.threads, body));
    let body = loops;
    let title = format!(
        "{title}\n{}\nthread map: {}",
        launch.dims_text(),
        launch.thread_map_text()
    );
    let grid = Grid {
        blocks: launch.blocks,
        block_var: Some(block),
        threads: launch.threads,
    };
    finish_launch(b, name, title, body, grid)
}

/// A loop over the block's threads giving each one iteration.
fn threads_loop(var: Var, threads: i64, body: Vec<Stmt>) -> Stmt {
    Stmt::Loop {
        kind: LoopKind::Threads,
        var,
        lo: 0,
        hi: threads - 1,
        body,
    }
}

/// The shuffle tree combining the partials `(acc, ty)` of groups of `width` lanes toward
/// each group's lane 0 (`lane` is a thread's lane in its group), where only lanes below
/// `holding` hold a value.
fn lane_tree(
    b: &mut Builder<'_>,
    reducer: CompId,
    (acc, ty): (kir::VarId, kir::ScalarType),
    lane: Expr,
    width: i64,
    holding: i64,
) -> Result<Vec<Stmt>, CodegenError> {
    let mut out = Vec::new();
    let mut offset = width / 2;
    while offset >= 1 {
        let other = b.new_var(ty);
        out.push(Stmt::Shuffle {
            var: other,
            value: Value::Var(acc, ty),
            kind: ShuffleKind::Down,
            offset,
            width,
        });
        let mut step = Vec::new();
        let v = b.in_memo_frame(|b| {
            b.combine(
                reducer,
                Value::Var(acc, ty),
                Value::Var(other, ty),
                &mut step,
            )
        })?;
        step.push(Stmt::Assign { var: acc, value: v });
        if holding < width {
            let src = b.simplify(lane + Expr::constant(offset));
            out.push(Stmt::If {
                guard: kir::Guard {
                    conds: vec![(src, 0, holding - 1)],
                },
                body: step,
                else_body: Vec::new(),
            });
        } else {
            out.extend(step);
        }
        offset /= 2;
    }
    Ok(out)
}

/// A zero of type `ty` (a partial's value before its first element; never read then).
fn zero(ty: kir::ScalarType) -> Value {
    let c = if ty == kir::ScalarType::Pred {
        Const::Bool(false)
    } else if ty.is_float() {
        Const::Float(0.0)
    } else {
        Const::Int(0)
    };
    Value::Const(ty, c)
}
