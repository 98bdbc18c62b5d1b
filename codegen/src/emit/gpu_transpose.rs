//! The GPU transpose emitter: a kernel whose hero moves data across physical dimensions
//! runs with the launch of [`fusion::gpu_transpose::transpose_launch`]. Its threads first
//! compute the hero's values at the read map's output indices (consecutive lanes walk the
//! operand's minor dimension, so the prologue's loads are coalesced) into a shared tile
//! whose rows are padded by one element; after a barrier they read the tile transposed at
//! the write map's indices (consecutive lanes walk the output's minor dimension) and
//! compute the root there, the hero's value being the tile's element, so the epilogue's
//! loads and the stores are coalesced too.

use affine::{Expr, IndexingMap, Interval, Var, VarKind};
use fusion::gpu_launch::coords;
use fusion::gpu_transpose::{TransposeLaunch, TILE, TILE_ROWS};
use hlo::{CompId, InstrId};

use super::assemble::{finish_launch, store_outputs, EmittedKernel};
use super::builder::{Builder, Leaf};
use super::gpu_coords::LaunchVars;
use crate::error::CodegenError;
use crate::kir::{self, Grid, LoopKind, Stmt, Value};

/// The transpose kernel of the root `(comp, root)` whose hero is `hero`, storing into
/// `out_bufs`; the builder's dimensions are the output's.
pub(super) fn transpose_kernel(
    mut b: Builder<'_>,
    name: &str,
    title: String,
    (comp, root): (CompId, InstrId),
    out_bufs: &[usize],
    hero: InstrId,
    t: TransposeLaunch,
) -> Result<EmittedKernel, CodegenError> {
    let launch = &t.launch;
    let ty = b
        .module
        .computation(comp)
        .instr(hero)
        .shape()
        .element_type()
        .and_then(kir::ScalarType::from_element)
        .ok_or_else(|| b.unsupported("transpose", "a GPU transpose of this element type"))?;
    let block = b.new_range(Interval::new(0, launch.blocks - 1));
    let rank = b.dims.len();
    let index: Vec<Expr> = (0..rank as u32).map(Expr::dim).collect();
    let stride = TILE + 1;
    let tile = b.new_local("the transposed tile".into(), ty, TILE * stride);
    b.locals[tile].space = kir::MemorySpace::Block;
    // Tile element (x offset, y offset) of a thread at unroll step `step`: the read side
    // puts its lane on y, the write side on x.
    let local = |th: Expr, step: Expr, lane_on_y: bool| {
        let lane = th.modulo(Expr::constant(TILE));
        let row = th.floor_div(Expr::constant(TILE)) + step * Expr::constant(TILE_ROWS);
        let (xo, yo) = if lane_on_y { (row, lane) } else { (lane, row) };
        xo * Expr::constant(stride) + yo
    };
    // Read: the hero's value into the tile.
    let (thread, step) = launch_vars(&mut b, launch.threads, launch.unroll);
    let mut read = Vec::new();
    let value = b.in_memo_frame(|b| b.value(comp, hero, &index, false, &mut read))?;
    read.push(Stmt::LocalStore {
        local: tile,
        offset: b.simplify(local(Expr::var(thread), Expr::var(step), true)),
        value,
    });
    let read_loops = at_map(&b, &t.read_map, (thread, block, step), launch, read);
    // Write: the root at the output index, the hero's value from the tile.
    let (thread2, step2) = launch_vars(&mut b, launch.threads, launch.unroll);
    let held = b.new_var(ty);
    let mut write = vec![Stmt::Let {
        var: held,
        value: Value::LocalLoad {
            local: tile,
            offset: b.simplify(local(Expr::var(thread2), Expr::var(step2), false)),
            ty,
        },
    }];
    b.leaves
        .insert((comp, hero), Leaf::Value(Value::Var(held, ty)));
    let stored = b.in_memo_frame(|b| store_outputs(b, (comp, root), out_bufs, &index, &mut write));
    b.leaves.remove(&(comp, hero));
    stored?;
    let write_loops = at_map(
        &b,
        &launch.thread_map,
        (thread2, block, step2),
        launch,
        write,
    );
    let body = vec![read_loops, Stmt::Barrier, write_loops];
    let title = format!(
        "{title}\n{}\nthread map (write): {}\nread map: {}",
        launch.dims_text(),
        launch.thread_map_text(),
        fusion::gpu_launch::Launch {
            thread_map: t.read_map.clone(),
            ..launch.clone()
        }
        .thread_map_text()
    );
    let grid = Grid {
        blocks: launch.blocks,
        block_var: Some(block),
        threads: launch.threads,
    };
    finish_launch(b, name, title, body, grid)
}

/// A fresh thread variable and unroll-step variable.
fn launch_vars(b: &mut Builder<'_>, threads: i64, unroll: i64) -> (Var, Var) {
    (
        b.new_range(Interval::new(0, threads - 1)),
        b.new_range(Interval::new(0, unroll - 1)),
    )
}

/// `body`, built at the output index `(d0, ..)`, at `map`'s index for the kernel's
/// `(thread, block, step)`, under the map's constraints, in a loop over the unroll steps
/// inside the loop over the block's threads.
fn at_map(
    b: &Builder<'_>,
    map: &IndexingMap,
    (thread, block, step): (Var, Var, Var),
    launch: &fusion::gpu_launch::Launch,
    mut body: Vec<Stmt>,
) -> Stmt {
    let vars = LaunchVars {
        thread: Expr::var(thread),
        block: Expr::var(block),
        chunk: Expr::constant(0),
        unroll: Expr::var(step),
    };
    let index: Vec<Expr> = map
        .results()
        .iter()
        .map(|&e| b.simplify(vars.apply(e)))
        .collect();
    let mut conds = Vec::new();
    for c in map.constraints() {
        let e = b.simplify(vars.apply(c.expr));
        let decided = b.range_of(e).is_ok_and(|r| c.interval.contains_interval(r));
        if !decided {
            conds.push((e, c.interval.lo, c.interval.hi));
        }
    }
    // The map's bounds of its variables where tighter than the launch's (the simplifier
    // moves a constraint on one variable into its bounds).
    conds.extend(vars.tighter_bounds(
        map,
        &[
            (Var::dim(coords::TH_X), launch.threads),
            (Var::dim(coords::BL_X), launch.blocks),
            (Var::range(coords::UNROLL), launch.unroll),
        ],
    ));
    kir::rewrite_exprs(&mut body, &mut |e| {
        let e = e.substitute(&mut |v| {
            (v.kind == VarKind::Dim)
                .then(|| index.get(v.index as usize).copied())
                .flatten()
        });
        b.simplify(e)
    });
    let guard = kir::Guard { conds };
    if !guard.is_true() {
        body = vec![Stmt::If {
            guard,
            body,
            else_body: Vec::new(),
        }];
    }
    let steps = Stmt::Loop {
        kind: LoopKind::Serial,
        var: step,
        lo: 0,
        hi: launch.unroll - 1,
        body,
    };
    Stmt::Loop {
        kind: LoopKind::Threads,
        var: thread,
        lo: 0,
        hi: launch.threads - 1,
        body: vec![steps],
    }
}
