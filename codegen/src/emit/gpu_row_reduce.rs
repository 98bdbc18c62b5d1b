//! The GPU row-reduction emitter: a kernel whose hero is a reduce over its input's
//! minor-most physical dimensions runs with the launch and thread map of
//! [`fusion::gpu_row_reduction::row_reduction_launch`]. After each thread's fold
//! ([`super::gpu_reduce::thread_partial`]), the lanes of a row combine their partials by a
//! tree of warp shuffles toward lane 0; a row of several warps leaves each warp's result
//! in shared memory, and after a barrier the first warp's lanes combine those. Lane 0
//! stores the row's output.

use affine::{Expr, Interval, Var};
use hlo::CompId;

use super::builder::Builder;
use super::gpu_reduce::{
    declare_partials, kept_index, lane_tree, reduce_types, store_result, thread_partial,
    threads_loop, ReductionPlan,
};
use crate::error::CodegenError;
use crate::kir::{self, Stmt, Value, WARP_LANES};

/// The body of a row-reduction kernel of `lanes` threads per row: its block variable and
/// its statements.
pub(super) fn row_body<'m>(
    mut b: Builder<'m>,
    comp: CompId,
    out_bufs: &[usize],
    plan: &ReductionPlan,
    lanes: i64,
) -> Result<(Builder<'m>, Var, Vec<Stmt>), CodegenError> {
    let launch = &plan.launch;
    let types = reduce_types(&b, comp, plan.reduce)?;
    let block = b.new_range(Interval::new(0, launch.blocks - 1));
    let thread = b.new_range(Interval::new(0, launch.threads - 1));
    let folded = thread_partial(&mut b, comp, plan, thread, block)?;
    let mut body = folded.body;
    let mut partials = folded.partials;
    // The lanes' tree toward lane 0; a lane without an element (a row shorter than the
    // lanes) is never combined in.
    let width = lanes.min(WARP_LANES);
    let lane = Expr::var(thread).modulo(Expr::constant(width));
    body.extend(lane_tree(
        &mut b,
        plan.reducer,
        &partials,
        lane,
        width,
        plan.elements.min(width),
    )?);
    let mut loops = Vec::new();
    let (store_thread, row_guard) = if lanes > WARP_LANES {
        // A row of several warps: each warp's lane 0 leaves its results in shared memory
        // (an array per operand), and after a barrier the first warp combines those.
        let warps = lanes / WARP_LANES;
        let shared: Vec<usize> = types
            .iter()
            .map(|&ty| {
                let l = b.new_local("the row's warp results".into(), ty, warps);
                b.locals[l].space = kir::MemorySpace::Block;
                l
            })
            .collect();
        let warp = b.simplify(Expr::var(thread).floor_div(Expr::constant(WARP_LANES)));
        body.push(Stmt::If {
            guard: kir::Guard {
                conds: vec![(b.simplify(lane), 0, 0)],
            },
            body: shared
                .iter()
                .zip(&partials)
                .map(|(&local, &(var, ty))| Stmt::LocalStore {
                    local,
                    offset: warp,
                    value: Value::Var(var, ty),
                })
                .collect(),
            else_body: Vec::new(),
        });
        loops.push(threads_loop(
            thread,
            launch.threads,
            std::mem::take(&mut body),
        ));
        loops.push(Stmt::Barrier);
        if !folded.outer_guard.is_true() {
            return Err(CodegenError::Internal(format!(
                "a row of several warps with rows out of range in `{}`",
                b.instr_name
            )));
        }
        let second = b.new_range(Interval::new(0, launch.threads - 1));
        let partials2 = declare_partials(&mut b, &types, &mut body);
        body.push(Stmt::If {
            guard: kir::Guard {
                conds: vec![(Expr::var(second), 0, warps - 1)],
            },
            body: shared
                .iter()
                .zip(&partials2)
                .map(|(&local, &(var, ty))| Stmt::Assign {
                    var,
                    value: Value::LocalLoad {
                        local,
                        offset: Expr::var(second),
                        ty,
                    },
                })
                .collect(),
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
            plan.reducer,
            &partials2,
            lane2,
            width2,
            warps,
        )?);
        partials = partials2;
        (second, kir::Guard::default())
    } else {
        (thread, folded.outer_guard)
    };
    // Lane 0 of a row in range stores; a row of a whole block has the block's index,
    // whichever thread stores.
    let out_index: Vec<Expr> = kept_index(&b, comp, plan.reduce, &folded.first_index)
        .into_iter()
        .map(|e| {
            b.simplify(e.substitute(&mut |v| {
                (v == thread && store_thread != thread).then_some(Expr::constant(0))
            }))
        })
        .collect();
    let store = store_result(&mut b, comp, plan, out_bufs, &partials, &out_index)?;
    let mut store_guard = row_guard;
    let store_lane = Expr::var(store_thread).modulo(Expr::constant(lanes));
    store_guard.conds.push((b.simplify(store_lane), 0, 0));
    body.extend(Stmt::guarded(store_guard, store));
    loops.push(threads_loop(store_thread, launch.threads, body));
    Ok((b, block, loops))
}
