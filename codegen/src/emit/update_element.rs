//! One update element of an in-place update kernel, shared by the sequential scatter and
//! dynamic-update-slice kernels ([`super::in_place`]) and the GPU scatter emitter
//! ([`super::gpu_scatter`]): the buffers and the update-to-output map, and the statements
//! applying a scatter's update element (start indices, the window check, the combiner).

use affine::{Expr, Interval};
use hlo::{CompId, InstrId, Opcode};
use indexing::OperandIndexing;

use super::builder::{BufferSource, Builder, Leaf};
use crate::error::CodegenError;
use crate::kir::{self, Access, Stmt};

/// Where the update element at the update index `(d0, d1, ...)` of single-operand
/// scatter `id` lands (its buffers added to `b`: the indices and the updates, then the
/// output, read-write): the output buffer, the update's dimensions, the statements
/// reading its start indices (appended to `body`), the guard under which its window lies
/// in the operand, and the output element's offset.
pub(super) struct ScatterTarget {
    /// The output's buffer.
    pub out: usize,
    /// The update's dimensions.
    pub udims: Vec<i64>,
    /// The update index `(d0, d1, ...)`.
    pub index: Vec<Expr>,
    /// The window lies in the operand.
    pub guard: kir::Guard,
    /// The output element's offset (physical).
    pub offset: Expr,
}

/// The [`ScatterTarget`] of the update element at `(d0, d1, ...)` of scatter `id`, the
/// start indices' statements appended to `body`.
pub(super) fn scatter_target(
    b: &mut Builder<'_>,
    comp: CompId,
    id: InstrId,
    body: &mut Vec<Stmt>,
) -> Result<ScatterTarget, CodegenError> {
    let c = b.module.computation(comp);
    let instr = c.instr(id);
    if instr.opcode() != Opcode::Scatter {
        return Err(CodegenError::Internal(format!(
            "`{}` is not a scatter",
            instr.name()
        )));
    }
    if instr.operands().len() != 3 {
        return Err(b.unsupported("scatter", "several operands (a variadic scatter)"));
    }
    let (out, udims, index, m) = update_setup(b, (comp, id), &[1, 2], 2)?;
    let a = b
        .apply(&m, &index, None, false, body)?
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
        .extend(window_in_bounds(b, comp, id, &udims, body)?);
    let offset = b.offset(out, &a.index);
    b.note(out, &a.index, &a.guard);
    Ok(ScatterTarget {
        out,
        udims,
        index,
        guard,
        offset,
    })
}

/// The statements applying the update element at the update index `(d0, d1, ...)` of the
/// single-operand scatter `id` (its buffers added to `b`: the indices and the updates,
/// then the output, read-write): the element lands at the update-to-output map's index
/// and is combined there with the element already stored, by an atomic update when
/// `atomic` (colliding updates from other threads), unless its window leaves the operand.
/// Returns the update's dimensions too.
pub(super) fn scatter_body(
    b: &mut Builder<'_>,
    comp: CompId,
    id: InstrId,
    atomic: bool,
) -> Result<(Vec<i64>, Vec<Stmt>), CodegenError> {
    let mut body = Vec::new();
    let ScatterTarget {
        out,
        udims,
        index,
        guard,
        offset,
    } = scatter_target(b, comp, id, &mut body)?;
    let instr = b.module.computation(comp).instr(id);
    let combiner = instr
        .to_apply()
        .ok_or_else(|| b.unsupported("scatter", "no update computation"))?;
    let update = instr.operands()[2];
    let mut upd = b.value(comp, update, &index, false, &mut body)?;
    let ty = b.buffers[out].ty;
    let mut inner = Vec::new();
    if atomic && !upd.is_trivial() {
        // Read once, not in every round of a compare-and-swap loop.
        let t = upd.ty();
        let v = b.new_var(t);
        inner.push(Stmt::Let { var: v, value: upd });
        upd = kir::Value::Var(v, t);
    }
    b.guards.push(guard.clone());
    let combined = if atomic {
        let old = b.new_var(ty);
        let mut update_body = Vec::new();
        combine(
            b,
            combiner,
            ty,
            kir::Value::Var(old, ty),
            upd,
            &mut update_body,
        )
        .map(|value| Stmt::Atomic {
            buf: out,
            offset,
            old,
            body: update_body,
            value,
        })
    } else {
        let old = kir::Value::Load {
            buf: out,
            offset,
            ty,
        };
        combine(b, combiner, ty, old, upd, &mut inner).map(|value| Stmt::Store {
            buf: out,
            offset,
            value,
        })
    };
    b.guards.pop();
    inner.push(combined?);
    body.extend(Stmt::guarded(guard, inner));
    Ok((udims, body))
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

/// The scatter's update computation applied to the element `old` (its value in the
/// output) and the update `upd`, inlined into `body`.
fn combine(
    b: &mut Builder<'_>,
    combiner: CompId,
    ty: kir::ScalarType,
    old: kir::Value,
    upd: kir::Value,
    body: &mut Vec<Stmt>,
) -> Result<kir::Value, CodegenError> {
    if upd.ty() != ty || old.ty() != ty {
        return Err(b.unsupported("scatter", "updates of another type than the operand"));
    }
    let r = b.inline_scalar_call(
        combiner,
        vec![old, upd],
        "scatter",
        "update computation",
        body,
    )?;
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
pub(super) fn update_setup(
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
