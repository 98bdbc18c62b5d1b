//! A kernel written for single-thread blocks (the CPU emitters' kernels), run with each
//! of its blocks as one thread of a larger block: block `b` of the original becomes
//! thread `b mod T` of block `b floordiv T`. The simplest GPU form of any kernel — every
//! original block's work on its own thread, neighbouring blocks on neighbouring threads —
//! until an emitter gives a kernel its own thread map.

use affine::{Expr, Interval, Var};

use super::kernel::{Grid, Kernel, LoopKind, Stmt};
use super::subst::substitute_stmts;
use super::value::Guard;

/// `k` with its blocks as threads of blocks of at most `threads` threads (fewer when the
/// kernel has fewer blocks). A kernel without a block variable, or of one block, or
/// already threaded, comes back unchanged.
pub fn blocks_as_threads(k: &Kernel, threads: i64) -> Kernel {
    let Some(old) = k.grid.block_var else {
        return k.clone();
    };
    if k.grid.threads > 1 || k.grid.blocks < 2 || threads < 2 {
        return k.clone();
    }
    let t = threads.min(k.grid.blocks);
    let blocks = (k.grid.blocks + t - 1) / t;
    let mut out = k.clone();
    out.dims.push(Interval::new(0, blocks - 1));
    let block = Var::dim(out.dims.len() as u32 - 1);
    out.ranges.push(Interval::new(0, t - 1));
    let thread = Var::range(out.ranges.len() as u32 - 1);
    let id = Expr::var(block) * Expr::constant(t) + Expr::var(thread);
    // Leading comments stay at the top of the block.
    let comments = out
        .body
        .iter()
        .take_while(|s| matches!(s, Stmt::Comment(_)))
        .count();
    let mut body = out.body.split_off(comments);
    substitute_stmts(&mut body, &mut |v| (v == old).then_some(id));
    if k.grid.blocks % t != 0 {
        body = vec![Stmt::If {
            guard: Guard {
                conds: vec![(id, 0, k.grid.blocks - 1)],
            },
            body,
            else_body: Vec::new(),
        }];
    }
    out.body.push(Stmt::Loop {
        kind: LoopKind::Threads,
        var: thread,
        lo: 0,
        hi: t - 1,
        body,
    });
    out.grid = Grid {
        blocks,
        block_var: Some(block),
        threads: t,
    };
    out
}
