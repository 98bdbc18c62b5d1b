//! The in-place dynamic-update-slice: the output buffer already holds the base operand
//! (the same buffer when the base dies here, else a copy of it), and the kernel writes only
//! the update's elements, at the indices of the update-to-output map
//! (`indexing::input_to_output`, start indices as runtime variables, clamped by the map).

use affine::{Expr, Interval};
use hlo::{CompId, InstrId, Opcode};
use indexing::OperandIndexing;

use super::assemble::EmittedKernel;
use super::builder::{BufferSource, Builder, Leaf};
use crate::error::CodegenError;
use crate::kir::{self, Access, Stmt};

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
    let layout = c
        .instr(update)
        .shape()
        .layout()
        .map(|l| l.minor_to_major.clone())
        .unwrap_or_else(|| (0..udims.len() as i64).rev().collect());
    let order: Vec<usize> = layout.iter().rev().map(|&d| d as usize).collect();
    super::assemble::finish(
        b,
        name,
        format!("dynamic-update-slice {} (in place)", instr.name()),
        body,
        &udims,
        &order,
    )
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
    let c = module.computation(comp);
    let instr = c.instr(id);
    let mut b = Builder::new(module, target, instr.name());
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
    let (out, udims, index, m) = update_setup(&mut b, (comp, id), &[1, 2], 2)?;
    let update = instr.operands()[2];
    let mut body = Vec::new();
    let a = b
        .apply(&m, &index, None, false, &mut body)?
        .ok_or_else(|| b.unsupported("scatter", "no update lands in the operand"))?;
    if !a.ranges.is_empty() {
        return Err(b.unsupported("scatter", "an update reaching several output elements"));
    }
    // The map's conditions on its runtime variables are the explicit window checks' too.
    let mut guard = a.guard.clone();
    guard.conds.retain(|(e, _, _)| {
        e.as_var()
            .is_none_or(|v| v.kind != affine::VarKind::Runtime)
    });
    guard
        .conds
        .extend(window_in_bounds(&mut b, comp, id, &udims, &mut body)?);
    let upd = b.value(comp, update, &index, false, &mut body)?;
    let ty = b.buffers[out].ty;
    let offset = b.offset(out, &a.index);
    b.note(out, &a.index, &a.guard);
    let mut inner = Vec::new();
    b.guards.push(guard.clone());
    let combined = combine(&mut b, combiner, ty, offset, out, upd, &mut inner);
    b.guards.pop();
    let combined = combined?;
    inner.push(Stmt::Store {
        buf: out,
        offset,
        value: combined,
    });
    if guard.is_true() {
        body.extend(inner);
    } else {
        body.push(Stmt::If {
            guard,
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
    let body = super::assemble::loop_nest(&loops, body);
    super::assemble::finish_grid(
        b,
        name,
        format!("scatter {} (in place, updates in order)", instr.name()),
        body,
        None,
    )
}

/// The conditions under which the update at the update index `(d0, d1, ...)` lands: each
/// start index (read from the indices into a runtime variable of its type's full range)
/// keeps its window inside the operand. The update-to-output map holds them too, as its
/// runtime variables' domains, but simplification may drop a variable whose domain is one
/// value (a window as large as the operand), and with it the check.
fn window_in_bounds(
    b: &mut Builder<'_>,
    comp: CompId,
    id: InstrId,
    udims: &[i64],
    body: &mut Vec<Stmt>,
) -> Result<Vec<(Expr, i64, i64)>, CodegenError> {
    let c = b.module.computation(comp);
    let instr = c.instr(id);
    let dn = instr
        .scatter_dimension_numbers()
        .ok_or_else(|| b.unsupported("scatter", "no dimension numbers"))?;
    let operand = c.instr(instr.operands()[0]).shape().dims().to_vec();
    let indices = instr.operands()[1];
    let irank = c.instr(indices).shape().dims().len();
    let as_dim = |d: i64| usize::try_from(d).ok();
    let window: Vec<usize> = dn
        .update_window_dims
        .iter()
        .filter_map(|&d| as_dim(d))
        .collect();
    let scatter_dims: Vec<usize> = (0..udims.len()).filter(|d| !window.contains(d)).collect();
    // Operand dimensions the window spans, in order, sized by the update's window dims.
    let spanned: Vec<usize> = (0..operand.len())
        .filter(|&d| {
            !dn.inserted_window_dims.contains(&(d as i64))
                && !dn.input_batching_dims.contains(&(d as i64))
        })
        .collect();
    let ivd = as_dim(dn.index_vector_dim).unwrap_or(irank);
    let mut conds = Vec::new();
    for (k, &od) in dn.scatter_dims_to_operand_dims.iter().enumerate() {
        let od = as_dim(od).filter(|&d| d < operand.len());
        let Some(od) = od else {
            return Err(b.unsupported("scatter", "an index for no operand dimension"));
        };
        // The indices element: batch positions from the update's scatter dims in order,
        // component `k` along the index vector dimension.
        let mut at = Vec::with_capacity(irank);
        let mut next = scatter_dims.iter();
        for j in 0..irank {
            if j == ivd {
                at.push(Expr::constant(k as i64));
            } else {
                let d = next.next().ok_or_else(|| {
                    b.unsupported("scatter", "indices batch dims do not fit the updates")
                })?;
                at.push(Expr::dim(*d as u32));
            }
        }
        let v = b.value(comp, indices, &at, false, body)?;
        let Some((lo, hi)) = v.ty().index_range() else {
            return Err(b.unsupported("scatter", format!("indices of type {}", v.ty())));
        };
        let rt = b.new_runtime(Interval::new(lo, hi));
        body.push(Stmt::BindIndex { var: rt, value: v });
        let size = match spanned.iter().position(|&d| d == od) {
            Some(j) => window.get(j).map_or(1, |&u| udims[u]),
            None => 1,
        };
        conds.push((Expr::var(rt), 0, operand[od] - size));
    }
    Ok(conds)
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

/// What both update kernels set up: buffers for `operands` (scalar constants read as
/// immediates, an operand repeated once), then the output (read-write, holding the base on
/// entry); the kernel's dimensions are those of operand `update`, which must have an
/// element. Returns the output buffer, the update's dims, the index `(d0, d1, ...)` and
/// the update-to-output map (`indexing::input_to_output`).
fn update_setup(
    b: &mut Builder<'_>,
    (comp, id): (CompId, InstrId),
    operands: &[usize],
    update: usize,
) -> Result<(usize, Vec<i64>, Vec<Expr>, indexing::IndexedMap), CodegenError> {
    let module = b.module;
    let c = module.computation(comp);
    let instr = c.instr(id);
    for &j in operands {
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
    let udims = c.instr(instr.operands()[update]).shape().dims().to_vec();
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
    let maps =
        indexing::input_to_output(&handle, update).map_err(|source| CodegenError::Indexing {
            instr: instr.name().to_string(),
            source,
        })?;
    let m = match maps.first() {
        Some(OperandIndexing::Maps(ms)) if ms.len() == 1 => ms.values().next().cloned(),
        _ => None,
    }
    .ok_or_else(|| b.unsupported(instr.opcode().as_str(), "no single update-to-output map"))?;
    Ok((out, udims, index, m))
}
