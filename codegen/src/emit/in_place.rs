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

/// Emits the in-place kernel of a single-operand scatter `id`: buffers are the indices and
/// the updates (operands 1 and 2; scalar constants read as immediates), then the output
/// (read-write, holding the operand on entry). One block runs over the updates in row-major
/// order, as indices may repeat and the combiner need not commute: each update element
/// lands at the update-to-output map's index (`indexing::input_to_output`, the scatter
/// indices as runtime variables) and is combined there with the element already stored;
/// an update whose window leaves the operand is skipped, as the map's constraints say.
pub fn emit_scatter_in_place(
    module: &hlo::Module,
    comp: CompId,
    id: InstrId,
    name: &str,
) -> Result<EmittedKernel, CodegenError> {
    let c = module.computation(comp);
    let instr = c.instr(id);
    let mut b = Builder::new(module, instr.name());
    if instr.opcode() != Opcode::Scatter {
        return Err(CodegenError::Internal(format!(
            "`{}` is not a scatter",
            instr.name()
        )));
    }
    if instr.operands().len() != 3 {
        return Err(b.unsupported("scatter", "several operands (a variadic scatter)"));
    }
    let combiner = instr
        .to_apply()
        .ok_or_else(|| b.unsupported("scatter", "no update computation"))?;
    for j in [1, 2] {
        let op = instr.operands()[j];
        let oi = c.instr(op);
        let scalar_constant =
            oi.opcode() == Opcode::Constant && oi.shape().element_count().is_ok_and(|n| n == 1);
        if scalar_constant || b.leaves.contains_key(&(comp, op)) {
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
    let update = instr.operands()[2];
    let udims = c.instr(update).shape().dims().to_vec();
    if udims.iter().any(|&d| d <= 0) {
        return Err(CodegenError::Internal(format!(
            "`{}` has no update element",
            instr.name()
        )));
    }
    b.dims = udims.iter().map(|&n| Interval::new(0, n - 1)).collect();
    let index: Vec<Expr> = (0..udims.len() as u32).map(Expr::dim).collect();
    let handle = hlo::InstrRef::new(module, comp, id)
        .ok_or_else(|| CodegenError::Internal(format!("`{}` not found", instr.name())))?;
    let maps = indexing::input_to_output(&handle, 2).map_err(|source| CodegenError::Indexing {
        instr: instr.name().to_string(),
        source,
    })?;
    let m = match maps.first() {
        Some(OperandIndexing::Maps(ms)) if ms.len() == 1 => ms.values().next().cloned(),
        _ => None,
    }
    .ok_or_else(|| b.unsupported("scatter", "no single update-to-output map"))?;
    let mut body = Vec::new();
    let a = b
        .apply(&m, &index, None, false, &mut body)?
        .ok_or_else(|| b.unsupported("scatter", "no update lands in the operand"))?;
    if !a.ranges.is_empty() {
        return Err(b.unsupported("scatter", "an update reaching several output elements"));
    }
    let upd = b.value(comp, update, &index, false, &mut body)?;
    let ty = b.buffers[out].ty;
    let offset = b.offset(out, &a.index);
    b.note(out, &a.index, &a.guard);
    let mut inner = Vec::new();
    b.guards.push(a.guard.clone());
    let combined = combine(&mut b, combiner, ty, offset, out, upd, &mut inner);
    b.guards.pop();
    let combined = combined?;
    inner.push(Stmt::Store {
        buf: out,
        offset,
        value: combined,
    });
    if a.guard.is_true() {
        body.extend(inner);
    } else {
        body.push(Stmt::If {
            guard: a.guard,
            body: inner,
            else_body: vec![],
        });
    }
    // Every update dimension is a loop, in row-major order, in one block.
    let loops: Vec<(affine::Var, i64)> = udims
        .iter()
        .enumerate()
        .map(|(d, &n)| (affine::Var::dim(d as u32), n))
        .collect();
    let body = super::kernel::loop_nest(&loops, body);
    super::kernel::finish_grid(
        b,
        name,
        format!("scatter {} (in place, updates in order)", instr.name()),
        body,
        None,
    )
}

/// The scatter's update computation applied to the element stored at `offset` of `out`
/// and the update `upd`, inlined into `body`.
fn combine(
    b: &mut Builder<'_>,
    combiner: CompId,
    ty: kir::ScalarType,
    offset: Expr,
    out: usize,
    upd: kir::Value,
    body: &mut Vec<Stmt>,
) -> Result<kir::Value, CodegenError> {
    let rc = b.module.computation(combiner);
    let old = kir::Value::Load {
        buf: out,
        offset,
        ty,
    };
    if upd.ty() != ty {
        return Err(b.unsupported("scatter", "updates of another type than the operand"));
    }
    let mut params = Vec::with_capacity(2);
    for (p, v) in [old, upd].into_iter().enumerate() {
        let pid = rc.parameter(p).ok_or_else(|| {
            b.unsupported("scatter", "update computation with too few parameters")
        })?;
        let pty = rc.instr(pid).shape().element_type();
        if pty.and_then(kir::ScalarType::from_element) != Some(ty) {
            return Err(b.unsupported("scatter", "update computation of another type"));
        }
        params.push(pid);
        b.leaves.insert((combiner, pid), Leaf::Value(v));
    }
    b.memo.push(Default::default());
    let r = b.value(combiner, rc.root(), &[], false, body);
    b.memo.pop();
    for pid in params {
        b.leaves.remove(&(combiner, pid));
    }
    let r = r?;
    if r.ty() != ty {
        return Err(b.unsupported("scatter", "update computation result of another type"));
    }
    Ok(r)
}
