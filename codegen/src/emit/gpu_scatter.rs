//! The GPU scatter emitter: a single-operand scatter, its output holding the operand on
//! entry, runs with the launch of [`fusion::gpu_scatter::scatter_launch`]. The statements
//! applying one update element (at the update index `(d0, d1, ...)`: read its start
//! indices, skip a window leaving the operand, combine with the stored element) are the
//! sequential kernel's; the update index is the thread map's result with its variables
//! bound to the kernel's block, thread and chunk variables, and the map's domain guards
//! them. Under the atomic strategy the combine is an atomic update; under the ordered one
//! each thread walks its window element's updates in order (`chunk_id`, a serial loop).

use affine::{Expr, Interval, Var, VarKind};
use fusion::gpu_launch::coords;
use fusion::gpu_scatter::{scatter_launch, ScatterLaunch, ScatterStrategy};
use hlo::{CompId, InstrId};

use super::assemble::{finish_launch, EmittedKernel};
use super::builder::Builder;
use super::gpu_coords::LaunchVars;
use crate::error::CodegenError;
use crate::kir::{self, Grid, LoopKind, Stmt};

/// The GPU kernel of scatter `id` of computation `comp`, or `None` where no GPU strategy
/// takes it (the sequential kernel then runs it).
pub(super) fn scatter_kernel(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
    name: &str,
) -> Result<Option<EmittedKernel>, CodegenError> {
    let Some(sl) = scatter_launch(module, comp, id)
        .map_err(|e| CodegenError::Internal(format!("scatter launch: {e}")))?
    else {
        return Ok(None);
    };
    let instr = module.computation(comp).instr(id);
    let mut b = Builder::new(module, target, instr.name());
    let atomic = sl.strategy == ScatterStrategy::Atomic;
    let (_, body) = match super::update_element::scatter_body(&mut b, comp, id, atomic) {
        Ok(r) => r,
        Err(CodegenError::Unsupported { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let title = format!(
        "scatter {}\n{}\nthread map: {}",
        instr.name(),
        sl.dims_text(),
        sl.launch.thread_map_text()
    );
    launch_kernel(b, name, title, body, &sl).map(Some)
}

/// `body` (at the update index `(d0, ..)`) at the thread map's update index, under its
/// domain, in a serial loop over the chunks inside the loop over the block's threads.
fn launch_kernel(
    mut b: Builder<'_>,
    name: &str,
    title: String,
    mut body: Vec<Stmt>,
    sl: &ScatterLaunch,
) -> Result<EmittedKernel, CodegenError> {
    let launch = &sl.launch;
    let map = &launch.thread_map;
    let chunks = map.ranges()[coords::CHUNK as usize].hi + 1;
    let block = b.new_range(Interval::new(0, launch.blocks - 1));
    let thread = b.new_range(Interval::new(0, launch.threads - 1));
    let chunk = (chunks > 1).then(|| b.new_range(Interval::new(0, chunks - 1)));
    let vars = LaunchVars {
        thread: Expr::var(thread),
        block: Expr::var(block),
        chunk: chunk.map_or(Expr::constant(0), Expr::var),
        unroll: Expr::constant(0),
    };
    let index: Vec<Expr> = map
        .results()
        .iter()
        .map(|&e| b.simplify(vars.apply(e)))
        .collect();
    // The map's domain: its constraints, and the bounds of the launch's coordinates where
    // the map's are tighter (fewer update elements than threads).
    let mut conds = vars.tighter_bounds(
        map,
        &[
            (Var::dim(coords::TH_X), launch.threads),
            (Var::dim(coords::BL_X), launch.blocks),
        ],
    );
    for c in map.constraints() {
        let e = b.simplify(vars.apply(c.expr));
        conds.push((e, c.interval.lo, c.interval.hi));
    }
    kir::rewrite_exprs(&mut body, &mut |e| {
        let e = e.substitute(&mut |v| {
            (v.kind == VarKind::Dim)
                .then(|| index.get(v.index as usize).copied())
                .flatten()
        });
        b.simplify(e)
    });
    if let Some(chunk) = chunk {
        body = vec![Stmt::serial_loop(chunk, 0, chunks - 1, body)];
    }
    let body = vec![Stmt::Loop {
        kind: LoopKind::Threads,
        var: thread,
        lo: 0,
        hi: launch.threads - 1,
        body: Stmt::guarded(kir::Guard { conds }, body),
    }];
    let grid = Grid {
        blocks: launch.blocks,
        block_var: Some(block),
        threads: launch.threads,
    };
    finish_launch(b, name, title, body, grid)
}
