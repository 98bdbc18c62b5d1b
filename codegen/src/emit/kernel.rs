//! One kernel per instruction: an unfused instruction of a computation, or a fusion
//! (its called computation evaluated elementally, its parameters read from the fusion's
//! operand buffers). The kernel loops over the output in its physical order, the most
//! major dimension split into blocks; every output element is the elemental value of the
//! root at that index.

use affine::{Expr, Interval, Var};
use hlo::{CompId, InstrId, Opcode};

use super::builder::{BufferSource, Builder, Leaf};
use super::column::column_kernel;
use super::scan::scan_kernel;
use super::tiles;
use super::transpose;
use crate::error::CodegenError;
use crate::kir::{self, Access, Grid, Kernel, Stmt};

/// A kernel and where each of its buffer parameters comes from.
#[derive(Clone, Debug)]
pub struct EmittedKernel {
    /// The kernel.
    pub kernel: Kernel,
    /// `sources[i]` describes `kernel.buffers[i]`.
    pub sources: Vec<BufferSource>,
}

/// Emits the kernel computing instruction `id` of computation `comp`, named `name` (a C
/// identifier), for `target`. Its buffers are: every operand (in order), then every output
/// (one per tuple element), then constants it reads from a fused computation.
pub fn emit_instruction(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    emit(module, target, (comp, id), name, Stage::Kernel)?
        .ok_or_else(|| CodegenError::Internal("a kernel emitted without its loops".into()))
}

/// Whether [`emit_instruction`] can emit instruction `id` of computation `comp` for
/// `target`: the same code builds the kernel's body (and gives the same
/// [`CodegenError::Unsupported`]), and stops before its root tiling and loop nest, which
/// refuse nothing.
pub fn check_instruction(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
) -> Result<(), CodegenError> {
    emit(module, target, (comp, id), "check", Stage::Body).map(|_| ())
}

/// How far [`emit`] goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// The per-element body only (`None` comes back unless another emitter took the
    /// kernel whole).
    Body,
    /// The whole kernel.
    Kernel,
}

/// [`emit_instruction`] of `(comp, id)` as far as `stage`.
fn emit(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    (comp, id): (CompId, InstrId),
    name: &str,
    stage: Stage,
) -> Result<Option<EmittedKernel>, CodegenError> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let mut b = Builder::new(module, target, instr.name());
    for (j, &op) in instr.operands().iter().enumerate() {
        let oi = c.instr(op);
        let scalar_constant = oi.opcode() == Opcode::Constant
            && instr.opcode() != Opcode::Fusion
            && oi.shape().element_count().is_ok_and(|n| n == 1);
        if scalar_constant {
            // Read as an immediate value, not through a buffer.
            continue;
        }
        let buf = b.add_buffer(oi.name(), oi.shape(), Access::In, BufferSource::Operand(j))?;
        if instr.opcode() != Opcode::Fusion {
            b.leaves.insert((comp, op), Leaf::Buffer(buf));
        }
    }
    let (ecomp, eroot) = if instr.opcode() == Opcode::Fusion {
        let fc = instr
            .calls()
            .ok_or_else(|| b.unsupported("fusion", "no called computation"))?;
        let fcomp = module.computation(fc);
        for j in 0..instr.operands().len() {
            let p = fcomp.parameter(j).ok_or_else(|| {
                CodegenError::Internal(format!("fusion `{}` lacks parameter {j}", instr.name()))
            })?;
            b.leaves.insert((fc, p), Leaf::Buffer(j));
        }
        (fc, fcomp.root())
    } else {
        (comp, id)
    };
    let outputs: Vec<hlo::Shape> = if instr.shape().is_tuple() {
        instr.shape().tuple_shapes().to_vec()
    } else {
        vec![instr.shape().clone()]
    };
    let mut out_bufs = Vec::with_capacity(outputs.len());
    for (k, s) in outputs.iter().enumerate() {
        let name = if outputs.len() > 1 {
            format!("{}.{k}", instr.name())
        } else {
            instr.name().to_string()
        };
        out_bufs.push(b.add_buffer(&name, s, Access::Out, BufferSource::Output(k))?);
    }
    let dims = b.buffers[out_bufs[0]].dims.clone();
    if out_bufs.iter().any(|&o| b.buffers[o].dims != dims) {
        let title = format!("{} {}", instr.opcode().as_str(), instr.name());
        return super::grouped::grouped_kernel(b, name, title, (ecomp, eroot), &out_bufs).map(Some);
    }
    if dims.iter().any(|&d| d <= 0) {
        return Err(CodegenError::Internal(format!(
            "kernel for `{}` has no elements",
            instr.name()
        )));
    }
    b.dims = dims.iter().map(|&n| Interval::new(0, n - 1)).collect();
    let index: Vec<Expr> = (0..dims.len() as u32).map(Expr::dim).collect();
    let order: Vec<usize> = b.buffers[out_bufs[0]]
        .minor_to_major
        .iter()
        .rev()
        .map(|&d| d as usize)
        .collect();
    let title = format!("{} {}", instr.opcode().as_str(), instr.name());
    if let Some(plan) = b.scan_plan(ecomp, eroot, &dims) {
        return scan_kernel(
            b,
            name,
            title,
            (ecomp, eroot),
            &out_bufs,
            plan,
            &dims,
            &order,
        )
        .map(Some);
    }
    if let Some(plan) = b.column_plan(ecomp, eroot, &dims, &order) {
        return column_kernel(
            b,
            name,
            title,
            (ecomp, eroot),
            &out_bufs,
            plan,
            &dims,
            &order,
        )
        .map(Some);
    }
    let mut body = Vec::new();
    store_outputs(&mut b, (ecomp, eroot), &out_bufs, &index, &mut body)?;
    if stage == Stage::Body {
        return Ok(None);
    }
    if let Some(tiled) = transpose::tile_transposed(&mut b, &body, &dims, &order) {
        let title = format!("{title}\n{}", tiled.note);
        return finish_grid(b, name, title, tiled.body, Some(tiled.grid)).map(Some);
    }
    if instr.opcode() == Opcode::Fusion {
        if let Some(fusion) = module.instr_ref(comp, id) {
            match tiles::decide(&fusion, &target.device, &dims, &order) {
                tiles::Decision::Tiled(t) => {
                    return finish_tiled(b, name, title, body, &dims, &order, &t).map(Some)
                }
                tiles::Decision::Untiled(why) => {
                    return finish(b, name, format!("{title}\n{why}"), body, &dims, &order)
                        .map(Some)
                }
            }
        }
    }
    finish(b, name, title, body, &dims, &order).map(Some)
}

/// Wraps a kernel's per-element `body` in the loops of one tile of `tiling`: the grid's
/// block variable is the program id, each root dimension's index is its tile offset (the
/// tiled computation's map) plus a loop over the tile, in physical `order` (most major
/// first). Whole dimensions keep their own variable; dimensions of tile size 1 get no loop.
fn finish_tiled(
    mut b: Builder<'_>,
    name: &str,
    title: String,
    mut body: Vec<Stmt>,
    dims: &[i64],
    order: &[usize],
    tiling: &tiles::RootTiling,
) -> Result<EmittedKernel, CodegenError> {
    let pid = b.new_range(Interval::new(0, tiling.programs - 1));
    let offsets = tiles::offsets_at(tiling, pid);
    let mut loops: Vec<(Var, i64)> = Vec::new();
    let mut replace: Vec<Option<Expr>> = vec![None; dims.len()];
    for &d in order {
        let size = tiling.sizes[d];
        if size == dims[d] && size > 1 {
            loops.push((Var::dim(d as u32), size));
        } else if size == 1 {
            replace[d] = Some(offsets[d]);
        } else {
            let j = b.new_range(Interval::new(0, size - 1));
            replace[d] = Some(offsets[d] + Expr::var(j));
            loops.push((j, size));
        }
    }
    // Substituted offsets are simplified again over the tile's bounds: a program's tile
    // offsets recombine with the loop index into one affine term.
    kir::rewrite_exprs(&mut body, &mut |e| {
        let e = e.substitute(&mut |v| {
            (v.kind == affine::VarKind::Dim)
                .then(|| replace.get(v.index as usize).copied().flatten())
                .flatten()
        });
        b.simplify(e)
    });
    let body = loop_nest(&loops, body);
    let title = format!("{title}\n{}", tiling.note);
    finish_grid(b, name, title, body, Some((pid, tiling.programs)))
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
        return vec![Stmt::Loop { var, lo, hi, body }];
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
    let (block_var, blocks) = match grid {
        Some((v, n)) => (Some(v), n),
        None => (None, 1),
    };
    let mut notes = vec![title];
    notes.extend(b.notes.iter().cloned());
    let mut body = kir::hoist_invariants(body, &b.buffers);
    body.insert(0, Stmt::Comment(notes.join("\n")));
    let kernel = Kernel {
        name: name.to_string(),
        buffers: b.buffers,
        grid: Grid { blocks, block_var },
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
