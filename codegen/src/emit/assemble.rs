//! Assembling an emitted kernel, shared by every emitter: storing a root's values into
//! the outputs, loop nests over index variables (unswitched where a guard splits a range),
//! and the kernel itself with its grid and the maps of its accesses ([`EmittedKernel`]).

use affine::{Expr, Var};
use hlo::{CompId, InstrId};

use super::builder::{BufferSource, Builder};
use crate::error::CodegenError;
use crate::kir::{self, Grid, Kernel, Stmt};

/// A kernel and where each of its buffer parameters comes from.
#[derive(Clone, Debug)]
pub struct EmittedKernel {
    /// The kernel.
    pub kernel: Kernel,
    /// `sources[i]` describes `kernel.buffers[i]`.
    pub sources: Vec<BufferSource>,
}

/// `emitted` in `target`'s blocks of threads ([`crate::EmitTarget::threads_per_block`]).
pub(super) fn threaded(target: &crate::EmitTarget, mut emitted: EmittedKernel) -> EmittedKernel {
    if target.threads_per_block <= 1 {
        return emitted;
    }
    emitted.kernel = kir::blocks_as_threads(&emitted.kernel, target.threads_per_block);
    emitted
}

/// Computes the root's values at `index` and stores them into the outputs.
pub(super) fn store_outputs(
    b: &mut Builder<'_>,
    (comp, root): (CompId, InstrId),
    out_bufs: &[usize],
    index: &[Expr],
    body: &mut Vec<Stmt>,
) -> Result<(), CodegenError> {
    let vals = b.values(comp, root, index, false, body)?;
    if vals.len() != out_bufs.len() {
        return Err(CodegenError::Internal(format!(
            "`{}` gives {} values for {} outputs",
            b.instr_name,
            vals.len(),
            out_bufs.len()
        )));
    }
    for (&o, v) in out_bufs.iter().zip(vals) {
        store_output(b, o, index, v, body)?;
    }
    Ok(())
}

/// Stores value `v` into output buffer `o` at `index` (its type checked against the
/// buffer's).
pub(super) fn store_output(
    b: &mut Builder<'_>,
    o: usize,
    index: &[Expr],
    v: kir::Value,
    body: &mut Vec<Stmt>,
) -> Result<(), CodegenError> {
    if v.ty() != b.buffers[o].ty {
        return Err(CodegenError::Internal(format!(
            "`{}` computes {} for a {} output",
            b.instr_name,
            v.ty(),
            b.buffers[o].ty
        )));
    }
    let offset = b.offset(o, index);
    b.note(o, index, &kir::Guard::default());
    body.push(Stmt::Store {
        buf: o,
        offset,
        value: v,
    });
    Ok(())
}

/// `body` inside loops `(variable, extent)`, the first outermost; the innermost one
/// unswitched (see [`unswitch`]) within the usual budget.
pub(super) fn loop_nest(loops: &[(Var, i64)], mut body: Vec<Stmt>) -> Vec<Stmt> {
    for (i, &(var, n)) in loops.iter().enumerate().rev() {
        body = if i + 1 == loops.len() {
            let mut budget = MAX_UNSWITCHED_LOOPS;
            unswitch(var, (0, n - 1), body, &mut budget)
        } else {
            vec![Stmt::Loop {
                kind: crate::kir::LoopKind::Serial,
                var,
                lo: 0,
                hi: n - 1,
                body,
            }]
        };
    }
    body
}

/// Most copies of an innermost loop that unswitching may make.
const MAX_UNSWITCHED_LOOPS: usize = 32;

/// `for var in [lo, hi] { body }`, with every `if` at the top of the body whose guard does
/// not depend on the loop moved outside it (the loop copied into each branch), so the
/// innermost loop runs straight-line code the C compiler vectorizes (a concatenate or
/// pad chooses its operand once per row, not per element). An `if` whose guard bounds the
/// loop variable itself (`var in [a, b]`, with conditions that do not depend on the loop)
/// splits the loop instead: `[lo, a - 1]` and `[b + 1, hi]` run the `else` branch,
/// `[a, b]` the `then` branch under the remaining conditions (a padded window's edges
/// apart from its interior). At most `budget` loops.
fn unswitch(var: Var, (lo, hi): (i64, i64), body: Vec<Stmt>, budget: &mut usize) -> Vec<Stmt> {
    let invariant = |e: &Expr| {
        e.variables()
            .iter()
            .all(|v| *v != var && v.kind != affine::VarKind::Runtime)
    };
    let is_var = |e: &Expr| e.as_var() == Some(var);
    let hoistable = |g: &kir::Guard| g.conds.iter().all(|(e, _, _)| invariant(e));
    let splittable = |g: &kir::Guard| {
        g.conds.iter().any(|(e, _, _)| is_var(e))
            && g.conds.iter().all(|(e, _, _)| is_var(e) || invariant(e))
    };
    // Hoisting makes two loops, splitting up to three.
    let at = body.iter().position(|st| match st {
        Stmt::If { guard, .. } => {
            (hoistable(guard) && *budget >= 2) || (splittable(guard) && *budget >= 3)
        }
        _ => false,
    });
    let Some(at) = at else {
        // The innermost loop of an elementwise nest: each iteration writes its own
        // output element.
        return vec![Stmt::Loop {
            kind: kir::LoopKind::Vectorized,
            var,
            lo,
            hi,
            body,
        }];
    };
    let mut pre = body;
    let mut post = pre.split_off(at);
    let Stmt::If {
        guard,
        body: then_body,
        else_body,
    } = post.remove(0)
    else {
        unreachable!("position() found an if");
    };
    let with = |mid: Vec<Stmt>| {
        let mut b = pre.clone();
        b.extend(mid);
        b.extend(post.iter().cloned());
        b
    };
    if hoistable(&guard) {
        *budget -= 1;
        let then_loops = unswitch(var, (lo, hi), with(then_body), budget);
        let else_loops = unswitch(var, (lo, hi), with(else_body), budget);
        return vec![Stmt::If {
            guard,
            body: then_loops,
            else_body: else_loops,
        }];
    }
    // Split at the bounds the guard puts on the loop variable.
    let (mut a, mut b) = (lo, hi);
    let mut rest = kir::Guard::default();
    for (e, clo, chi) in guard.conds {
        if is_var(&e) {
            (a, b) = (a.max(clo), b.min(chi));
        } else {
            rest.conds.push((e, clo, chi));
        }
    }
    let mut out = Vec::new();
    let mut part = |range: (i64, i64), body: Vec<Stmt>, budget: &mut usize| {
        if range.0 <= range.1 {
            *budget = budget.saturating_sub(1);
            out.extend(unswitch(var, range, body, budget));
        }
    };
    if a > b {
        // The guard never holds in the loop.
        part((lo, hi), with(else_body), budget);
        return out;
    }
    part((lo, a - 1), with(else_body.clone()), budget);
    let inside = if rest.is_true() {
        then_body
    } else {
        vec![Stmt::If {
            guard: rest,
            body: then_body,
            else_body: else_body.clone(),
        }]
    };
    part((a, b), with(inside), budget);
    part((b + 1, hi), with(else_body), budget);
    out
}

/// Wraps a kernel's per-element `body` in loops over `dims` in physical `order` (most
/// major first): the most-major dimension is the grid's block variable, the others loops
/// inside a block. Adds the kernel's comment (`title`, then the maps it was built from)
/// and verifies the kernel.
pub(super) fn finish(
    b: Builder<'_>,
    name: &str,
    title: String,
    body: Vec<Stmt>,
    dims: &[i64],
    order: &[usize],
) -> Result<EmittedKernel, CodegenError> {
    let (block_var, inner) = match order.split_first() {
        Some((&first, rest)) => (Some(Var::dim(first as u32)), rest.to_vec()),
        None => (None, vec![]),
    };
    let loops: Vec<(Var, i64)> = inner
        .iter()
        .map(|&d| (Var::dim(d as u32), dims[d]))
        .collect();
    let body = loop_nest(&loops, body);
    let grid = block_var.map(|v| (v, dims[v.index as usize]));
    finish_grid(b, name, title, body, grid)
}

/// Adds the kernel's comment (`title`, then the maps it was built from) to `body`, run
/// once per block of `grid` (its block variable and block count; one block without), and
/// verifies the kernel.
pub(super) fn finish_grid(
    b: Builder<'_>,
    name: &str,
    title: String,
    body: Vec<Stmt>,
    grid: Option<(Var, i64)>,
) -> Result<EmittedKernel, CodegenError> {
    let grid = match grid {
        Some((v, n)) => Grid::blocks(n, Some(v)),
        None => Grid::blocks(1, None),
    };
    finish_launch(b, name, title, body, grid)
}

/// [`finish_grid`] for a launch `grid` of blocks of any number of threads.
pub(super) fn finish_launch(
    mut b: Builder<'_>,
    name: &str,
    title: String,
    body: Vec<Stmt>,
    grid: Grid,
) -> Result<EmittedKernel, CodegenError> {
    let mut notes = vec![title];
    notes.extend(b.notes.iter().cloned());
    // On the CPU, a concatenate's single-point piece leaves the innermost loops (a GPU's
    // loops are its threads).
    let body = if b.target.threads_per_block <= 1 {
        let block = grid.block_var.map(|v| (v, 0, grid.blocks - 1));
        kir::peel_guarded_points(body, block.as_slice())
    } else {
        body
    };
    let mut body = kir::hoist_invariants(body, &b.buffers, &b.locals);
    // On the CPU, independent output rows whose bodies are chains of short reductions
    // run those chains as vector lanes (after hoisting: a row's invariants are already
    // out of its reduced loops).
    let rows = std::mem::take(&mut b.row_loops);
    if b.target.threads_per_block <= 1 && !rows.is_empty() {
        body = super::row_lanes::rows_as_lanes(&mut b, body, &rows);
    }
    body.insert(0, Stmt::Comment(notes.join("\n")));
    let kernel = Kernel {
        name: name.to_string(),
        buffers: b.buffers,
        grid,
        dims: b.dims,
        ranges: b.ranges,
        runtimes: b.runtimes,
        vars: b.vars,
        locals: b.locals,
        body,
    };
    kir::verify(&kernel)?;
    Ok(EmittedKernel {
        kernel,
        sources: b.sources,
    })
}
