//! The in-place dynamic-update-slice: the output buffer already holds the base operand
//! (the same buffer when the base dies here, else a copy of it), and the kernel writes only
//! the update's elements, at the indices of the update-to-output map
//! (`indexing::input_to_output`, start indices as runtime variables, clamped by the map).

use affine::{Expr, Interval};
use hlo::{CompId, InstrId, Opcode};
use indexing::OperandIndexing;

use super::builder::{BufferSource, Builder, Leaf};
use super::kernel::EmittedKernel;
use crate::error::CodegenError;
use crate::kir::{self, Access, Stmt};

/// Emits the in-place kernel of dynamic-update-slice `id`: buffers are the update and the
/// start indices (operands 1.., scalar constants read as immediates), then the output
/// (read-write, holding the base on entry). The grid runs over the update's elements.
pub fn emit_dus_in_place(
    module: &hlo::Module,
    comp: CompId,
    id: InstrId,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let mut b = Builder::new(module, instr.name());
    if instr.opcode() != Opcode::DynamicUpdateSlice || instr.operands().len() < 2 {
        return Err(CodegenError::Internal(format!(
            "`{}` is not a dynamic-update-slice",
            instr.name()
        )));
    }
    for (j, &op) in instr.operands().iter().enumerate().skip(1) {
        let oi = c.instr(op);
        if oi.opcode() == Opcode::Constant && oi.shape().element_count().is_ok_and(|n| n == 1) {
            continue;
        }
        let buf = b.add_buffer(oi.name(), oi.shape(), Access::In, BufferSource::Operand(j))?;
        b.leaves.insert((comp, op), Leaf::Buffer(buf));
    }
    let out = b.add_buffer(
        instr.name(),
        instr.shape(),
        Access::InOut,
        BufferSource::Output(0),
    )?;
    let update = instr.operands()[1];
    let udims = c.instr(update).shape().dims().to_vec();
    if udims.iter().any(|&d| d <= 0) {
        return Err(CodegenError::Internal(format!(
            "`{}` updates no element",
            instr.name()
        )));
    }
    b.dims = udims.iter().map(|&n| Interval::new(0, n - 1)).collect();
    let index: Vec<Expr> = (0..udims.len() as u32).map(Expr::dim).collect();
    let handle = hlo::InstrRef::new(module, comp, id)
        .ok_or_else(|| CodegenError::Internal(format!("`{}` not found", instr.name())))?;
    let maps = indexing::input_to_output(&handle, 1).map_err(|source| CodegenError::Indexing {
        instr: instr.name().to_string(),
        source,
    })?;
    let m = match maps.first() {
        Some(OperandIndexing::Maps(ms)) if ms.len() == 1 => ms.values().next().cloned(),
        _ => None,
    }
    .ok_or_else(|| b.unsupported("dynamic-update-slice", "no single update-to-output map"))?;
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
    let layout = c
        .instr(update)
        .shape()
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_else(|| (0..udims.len() as i64).rev().collect());
    let order: Vec<usize> = layout.iter().rev().map(|&d| d as usize).collect();
    super::kernel::finish(
        b,
        name,
        format!("dynamic-update-slice {} (in place)", instr.name()),
        body,
        &udims,
        &order,
    )
}
