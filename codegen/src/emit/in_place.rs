//! The in-place dynamic-update-slice: the output buffer already holds the base operand
//! (the same buffer when the base dies here, else a copy of it), and the kernel writes only
//! the update's elements, at the indices of the update-to-output map
//! (`indexing::input_to_output`, start indices as runtime variables, clamped by the map);
//! on a GPU, by the loop emitter's threads over the update's elements.

use hlo::{CompId, InstrId, Opcode};

use super::assemble::EmittedKernel;
use super::builder::Builder;
use super::update_element::{scatter_body, update_setup};
use crate::error::CodegenError;
use crate::kir::{self, Stmt};

/// Emits the in-place kernel of dynamic-update-slice `id`: buffers are the update and the
/// start indices (operands 1.., scalar constants read as immediates), then the output
/// (read-write, holding the base on entry). The grid runs over the update's elements.
pub fn emit_dus_in_place(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let mut b = Builder::new(module, target, instr.name());
    if instr.opcode() != Opcode::DynamicUpdateSlice || instr.operands().len() < 2 {
        return Err(CodegenError::Internal(format!(
            "`{}` is not a dynamic-update-slice",
            instr.name()
        )));
    }
    let operands: Vec<usize> = (1..instr.operands().len()).collect();
    let (out, udims, index, m) = update_setup(&mut b, (comp, id), &operands, 1)?;
    let update = instr.operands()[1];
    let mut body = Vec::new();
    let a = b
        .apply(&m, &index, None, false, &mut body)?
        .ok_or_else(|| CodegenError::Internal("the update is never written".into()))?;
    if !a.guard.is_true() || !a.ranges.is_empty() {
        return Err(b.unsupported("dynamic-update-slice", "a conditional update map"));
    }
    let v = b.value(comp, update, &index, false, &mut body)?;
    let offset = b.offset(out, &a.index);
    b.note(out, &a.index, &kir::Guard::default());
    body.push(Stmt::Store {
        buf: out,
        offset,
        value: v,
    });
    let title = format!("dynamic-update-slice {} (in place)", instr.name());
    if target.gpu_emitters {
        // The loop emitter's threads over the update's elements, in the update buffer's
        // physical order (the output's, same rank, for an update read as an immediate).
        let over = match b.leaves.get(&(comp, update)) {
            Some(super::builder::Leaf::Buffer(u)) => *u,
            _ => out,
        };
        return super::gpu_loop::loop_kernel(b, name, title, body, &udims, over);
    }
    let layout = c
        .instr(update)
        .shape()
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_else(|| (0..udims.len() as i64).rev().collect());
    let order: Vec<usize> = layout.iter().rev().map(|&d| d as usize).collect();
    super::assemble::finish(b, name, title, body, &udims, &order)
        .map(|e| super::assemble::threaded(target, e))
}

/// Emits the in-place kernel of a single-operand scatter `id`: buffers are the indices and
/// the updates (operands 1 and 2; scalar constants read as immediates), then the output
/// (read-write, holding the operand on entry). One block runs over the updates in row-major
/// order, as indices may repeat and the combiner need not commute: each update element
/// lands at the update-to-output map's index (`indexing::input_to_output`, the scatter
/// indices as runtime variables) and is combined there with the element already stored;
/// an update whose window leaves the operand is skipped, as the map's constraints say.
pub fn emit_scatter_in_place(
    module: &hlo::Module,
    target: &crate::EmitTarget,
    comp: CompId,
    id: InstrId,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    if target.gpu_emitters {
        if let Some(k) = super::gpu_scatter::scatter_kernel(module, target, comp, id, name)? {
            return Ok(k);
        }
    }
    let instr = module.computation(comp).instr(id);
    let mut b = Builder::new(module, target, instr.name());
    let (udims, body) = scatter_body(&mut b, comp, id, false)?;
    // Every update dimension is a loop, in row-major order, in one block.
    let loops: Vec<(affine::Var, i64)> = udims
        .iter()
        .enumerate()
        .map(|(d, &n)| (affine::Var::dim(d as u32), n))
        .collect();
    let body = super::assemble::loop_nest(&loops, body);
    super::assemble::finish_grid(
        b,
        name,
        format!("scatter {} (in place, updates in order)", instr.name()),
        body,
        None,
    )
}
