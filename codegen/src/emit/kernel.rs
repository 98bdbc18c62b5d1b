//! One kernel per instruction: an unfused instruction of a computation, or a fusion
//! (its called computation evaluated elementally, its parameters read from the fusion's
//! operand buffers). The kernel loops over the output in its physical order, the most
//! major dimension split into blocks; every output element is the elemental value of the
//! root at that index.

use affine::{Expr, Interval, Var};
use fusion::gpu_transpose::transpose_of;
use hlo::{CompId, InstrId, Opcode};

use super::assemble::{finish, finish_grid, loop_nest, store_outputs, EmittedKernel};
use super::builder::{BufferSource, Builder, Leaf};
use super::column::column_kernel;
use super::scan::scan_kernel;
use super::tiles;
use super::transpose;
use crate::error::CodegenError;
use crate::kir::{self, Access, Stmt};

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
        .map(|e| super::assemble::threaded(target, e))
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
    if target.gpu_emitters && stage == Stage::Kernel {
        let fused = instr.opcode() == Opcode::Fusion;
        if let Some(plan) = b.reduction_plan(ecomp, eroot, fused) {
            return super::gpu_reduce_kernel::reduction_kernel(
                b, name, title, ecomp, &out_bufs, plan,
            )
            .map(Some);
        }
        let out_m2m = b.buffers[out_bufs[0]].minor_to_major.clone();
        let body = module.computation(ecomp);
        if let Some((hero, t)) = transpose_of(body, eroot, fused, &out_m2m) {
            return super::gpu_transpose::transpose_kernel(
                b,
                name,
                title,
                (ecomp, eroot),
                &out_bufs,
                hero,
                t,
            )
            .map(Some);
        }
    }
    // The CPU's scan and column emitters walk many outputs per block, which a GPU would
    // run as one thread each: on the GPU those kernels take the loop emitter instead (a
    // thread per output element, its window or column folded in order).
    let cpu_tiles = !target.gpu_emitters;
    if let Some(plan) = cpu_tiles
        .then(|| b.scan_plan(ecomp, eroot, &dims))
        .flatten()
    {
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
    if let Some(plan) = cpu_tiles
        .then(|| b.column_plan(ecomp, eroot, &dims, &order))
        .flatten()
    {
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
    if target.gpu_emitters {
        return super::gpu_loop::loop_kernel(b, name, title, body, &dims, out_bufs[0]).map(Some);
    }
    if let Some(tiled) = transpose::tile_transposed(&mut b, &body, &dims, &order) {
        let title = format!("{title}\n{}", tiled.note);
        return finish_grid(b, name, title, tiled.body, Some(tiled.grid)).map(Some);
    }
    // Every loop of the output nest below the blocks computes its own outputs.
    b.row_loops = order.iter().skip(1).map(|&d| Var::dim(d as u32)).collect();
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
    // Each loop of the tile computes its own outputs.
    b.row_loops = loops.iter().map(|&(v, _)| v).collect();
    let title = format!("{title}\n{}", tiling.note);
    finish_grid(b, name, title, body, Some((pid, tiling.programs)))
}
