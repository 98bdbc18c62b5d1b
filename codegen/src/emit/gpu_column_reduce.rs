//! The GPU column-reduction emitter: a kernel whose hero is a reduce with kept dimensions
//! minor to the reduced ones runs with the launch and thread map of
//! [`fusion::gpu_column_reduction::column_reduction_launch`]. A block's threads stand in a
//! tile of `columns` consecutive columns by `parts` rows; after each thread's fold
//! ([`super::gpu_reduce::thread_partial`]) the partials go to a shared tile (rows padded
//! by one element, so the transposed reads below hit distinct banks), and after a barrier
//! the tile is read transposed: the `parts` partials of one column sit in consecutive
//! lanes, which fold any partials beyond a warp serially, combine by warp shuffles, and
//! lane 0 stores the column's output.

use affine::{Expr, Interval, Var};
use hlo::CompId;

use super::builder::Builder;
use super::gpu_coords::LaunchVars;
use super::gpu_reduce::{
    assign_all, combine_all, declare_partials, kept_index, lane_tree, map_at, partial_values,
    reduce_types, store_result, thread_partial, threads_loop, ReductionPlan,
};
use crate::error::CodegenError;
use crate::kir::{self, Stmt, Value, WARP_LANES};

/// The body of a column-reduction kernel whose tile is `columns` by `parts`: its block
/// variable and its statements.
pub(super) fn column_body<'m>(
    mut b: Builder<'m>,
    comp: CompId,
    out_bufs: &[usize],
    plan: &ReductionPlan,
    columns: i64,
    parts: i64,
) -> Result<(Builder<'m>, Var, Vec<Stmt>), CodegenError> {
    let launch = &plan.launch;
    let threads = launch.threads;
    let types = reduce_types(&b, comp, plan.reduce)?;
    let block = b.new_range(Interval::new(0, launch.blocks - 1));
    let thread = b.new_range(Interval::new(0, threads - 1));
    let folded = thread_partial(&mut b, comp, plan, thread, block)?;
    let mut body = folded.body;
    // Thread t's partial is tile row t floordiv columns, column t mod columns (a tile per
    // operand of the reduce).
    let stride = columns + 1;
    let th = Expr::var(thread);
    let slot = b.simplify(
        th.floor_div(Expr::constant(columns)) * Expr::constant(stride)
            + th.modulo(Expr::constant(columns)),
    );
    let mut tiles = Vec::with_capacity(types.len());
    for &(var, ty) in &folded.partials {
        let tile = b.new_local("the tile's partials".into(), ty, parts * stride);
        b.locals[tile].space = kir::MemorySpace::Block;
        body.push(Stmt::LocalStore {
            local: tile,
            offset: slot,
            value: Value::Var(var, ty),
        });
        tiles.push(tile);
    }
    let mut loops = vec![threads_loop(thread, threads, body), Stmt::Barrier];
    // Read transposed: `width` consecutive lanes per column, each folding the tile rows
    // `lane, lane + width, ..` that hold a partial (rows below the reduced extent).
    let width = parts.min(WARP_LANES);
    let busy = columns * width;
    let second = b.new_range(Interval::new(0, threads - 1));
    let s = Expr::var(second);
    let column = s.floor_div(Expr::constant(width));
    let lane = s.modulo(Expr::constant(width));
    let mut body = Vec::new();
    let partials = declare_partials(&mut b, &types, &mut body);
    let mut reads = Vec::new();
    for k in 0..parts / width {
        let row = b.simplify(lane + Expr::constant(k * width));
        let offset = b.simplify(row * Expr::constant(stride) + column);
        let entries: Vec<Value> = tiles
            .iter()
            .zip(&types)
            .map(|(&local, &ty)| Value::LocalLoad { local, offset, ty })
            .collect();
        let mut step = Vec::new();
        let values = if k == 0 {
            entries
        } else {
            let reducer = plan.reducer;
            b.in_memo_frame(|b| {
                combine_all(b, reducer, partial_values(&partials), entries, &mut step)
            })?
        };
        step.extend(assign_all(&partials, values));
        let holds = b.range_of(row).is_ok_and(|r| r.hi < plan.elements);
        let guard = if holds {
            kir::Guard::default()
        } else {
            kir::Guard {
                conds: vec![(row, 0, plan.elements - 1)],
            }
        };
        reads.extend(Stmt::guarded(guard, step));
    }
    let busy_guard = if busy < threads {
        kir::Guard {
            conds: vec![(s, 0, busy - 1)],
        }
    } else {
        kir::Guard::default()
    };
    body.extend(Stmt::guarded(busy_guard.clone(), reads));
    body.extend(lane_tree(
        &mut b,
        plan.reducer,
        &partials,
        lane,
        width,
        plan.elements.min(width),
    )?);
    // Lane 0 of each column in range stores: the output index is the thread map's at the
    // thread that read the column's first row.
    let vars = LaunchVars {
        thread: b.simplify(column),
        block: Expr::var(block),
        chunk: Expr::constant(0),
        unroll: Expr::constant(0),
    };
    let (index, column_guard, _) = map_at(&b, launch, vars);
    let out_index = kept_index(&b, comp, plan.reduce, &index);
    let store = store_result(&mut b, comp, plan, out_bufs, &partials, &out_index)?;
    let mut store_guard = busy_guard;
    store_guard.conds.extend(column_guard.conds);
    store_guard.conds.push((b.simplify(lane), 0, 0));
    body.extend(Stmt::guarded(store_guard, store));
    loops.push(threads_loop(second, threads, body));
    Ok((b, block, loops))
}
