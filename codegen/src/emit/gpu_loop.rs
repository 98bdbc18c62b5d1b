//! The GPU loop emitter: a kernel's per-element body run by the threads its thread map
//! assigns ([`fusion::gpu_launch::loop_launch`]). The output index is the thread map's
//! result with the map's variables bound to the kernel's block, thread and unroll
//! variables, substituted into the body and simplified; the map's domain constraints guard
//! the body. So the loops and indices are the thread map composed with the fusion's
//! output-to-operand maps, the same map `hloc indexing --coalescing` counts.

use affine::{Expr, Interval, Var, VarKind};
use fusion::gpu_launch::{coords, loop_launch, Launch};

use super::assemble::{finish_launch, EmittedKernel};
use super::builder::Builder;
use super::gpu_coords::LaunchVars;
use crate::error::CodegenError;
use crate::kir::{self, Grid, LoopKind, Stmt};

/// Wraps `body` (which computes and stores the output element at logical index `(d0, ..)`
/// of an output of `dims`, stored in buffer `out`) in the loop emitter's launch.
pub(super) fn loop_kernel(
    b: Builder<'_>,
    name: &str,
    title: String,
    body: Vec<Stmt>,
    dims: &[i64],
    out: usize,
) -> Result<EmittedKernel, CodegenError> {
    let buffer = &b.buffers[out];
    let bytes = i64::from(buffer.ty.byte_width());
    let launch = loop_launch(dims, &buffer.minor_to_major, bytes, &b.target.device)
        .map_err(|e| CodegenError::Internal(format!("loop launch: {e}")))?;
    let title = format!("{title}\n{}", launch.dims_text());
    launch_kernel(b, name, title, body, &launch)
}

/// Wraps `body` (at the logical index `(d0, ..)` of the thread map's results) in
/// `launch`: a thread per point of the map's domain (and unroll step), the map's results
/// substituted for the index; the title gains the thread map.
pub(super) fn launch_kernel(
    mut b: Builder<'_>,
    name: &str,
    title: String,
    mut body: Vec<Stmt>,
    launch: &Launch,
) -> Result<EmittedKernel, CodegenError> {
    let Launch {
        blocks,
        threads,
        unroll,
        ref thread_map,
        ..
    } = *launch;
    let block = b.new_range(Interval::new(0, blocks - 1));
    let thread = b.new_range(Interval::new(0, threads - 1));
    let step = (unroll > 1).then(|| b.new_range(Interval::new(0, unroll - 1)));
    // The thread map's variables as the kernel's: th_x, bl_x and unroll_id; the other
    // coordinates (y, z, the chunk) are 0 in this launch.
    let vars = LaunchVars {
        thread: Expr::var(thread),
        block: Expr::var(block),
        chunk: Expr::constant(0),
        unroll: step.map_or(Expr::constant(0), Expr::var),
    };
    let index: Vec<Expr> = thread_map
        .results()
        .iter()
        .map(|&e| b.simplify(vars.apply(e)))
        .collect();
    // The map's domain: its constraints, and the bounds of the launch's coordinates where
    // the map's are tighter (a tiny output's block has more threads than elements).
    let launch_bounds = [
        (Var::dim(coords::TH_X), threads),
        (Var::dim(coords::BL_X), blocks),
        (Var::range(coords::UNROLL), unroll),
    ];
    let mut conds = vars.tighter_bounds(thread_map, &launch_bounds);
    for c in thread_map.constraints() {
        let e = b.simplify(vars.apply(c.expr));
        conds.push((e, c.interval.lo, c.interval.hi));
    }
    let guard = kir::Guard { conds };
    kir::rewrite_exprs(&mut body, &mut |e| {
        let e = e.substitute(&mut |v| {
            (v.kind == VarKind::Dim)
                .then(|| index.get(v.index as usize).copied())
                .flatten()
        });
        b.simplify(e)
    });
    if !guard.is_true() {
        body = vec![Stmt::If {
            guard,
            body,
            else_body: Vec::new(),
        }];
    }
    if let Some(step) = step {
        body = vec![Stmt::Loop {
            kind: LoopKind::Serial,
            var: step,
            lo: 0,
            hi: unroll - 1,
            body,
        }];
    }
    let body = vec![Stmt::Loop {
        kind: LoopKind::Threads,
        var: thread,
        lo: 0,
        hi: threads - 1,
        body,
    }];
    let title = format!("{title}\nthread map: {}", launch.thread_map_text());
    let grid = Grid {
        blocks,
        block_var: Some(block),
        threads,
    };
    finish_launch(b, name, title, body, grid)
}
