//! Rules for data-movement opcodes. All are exact (they move values, never compute).

use super::rewriter::{scalar_broadcast_source, Rw};
use super::scalar::Scalar;
use hlo::attrs::{AttrName, AttrValue, SliceDim};
use hlo::ir::{edit, InstrId};
use hlo::Opcode;

/// `broadcast(s)` of the scalar `s` to the shape of `like`.
fn rebroadcast(rw: &mut Rw<'_>, s: InstrId, like: InstrId) -> InstrId {
    let shape = rw.shape(like).clone();
    rw.add(
        Opcode::Broadcast,
        shape,
        vec![s],
        vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
    )
}

pub(super) fn simplify(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let op = rw.opcode(id);
    if op == Opcode::Iota {
        return iota(rw, id);
    }
    let x = rw.op(id, 0);
    let same_shape = rw.shape(x).compatible(rw.shape(id));
    // Moving the elements of a broadcast scalar gives the same scalar everywhere:
    // reshape, transpose, slice, reverse, dynamic-slice and gather of `broadcast(s)`
    // are `broadcast(s)` to the result shape.
    if matches!(
        op,
        Opcode::Reshape
            | Opcode::Transpose
            | Opcode::Slice
            | Opcode::Reverse
            | Opcode::DynamicSlice
            | Opcode::Gather
    ) {
        if let Some(s) = scalar_broadcast_source(rw, x) {
            if same_shape && op != Opcode::Gather {
                return Some(x);
            }
            return Some(rebroadcast(rw, s, id));
        }
    }
    match op {
        Opcode::Broadcast => broadcast(rw, id, same_shape),
        Opcode::Reshape => {
            // A reshape to the same shape is a no-op; `reshape(reshape(A)) => reshape(A)`.
            if same_shape {
                return Some(x);
            }
            if rw.opcode(x) == Opcode::Reshape {
                let src = rw.op(x, 0);
                if rw.shape(src).compatible(rw.shape(id)) {
                    return Some(src);
                }
                return Some(rw.clone_with(id, vec![src]));
            }
            None
        }
        Opcode::Transpose => {
            let perm = rw.instr(id).dimensions()?.to_vec();
            // The identity permutation is a no-op.
            if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
                return Some(x);
            }
            // `transpose(transpose(A, p1), p2) => transpose(A, p1 o p2)`.
            if rw.opcode(x) == Opcode::Transpose {
                let inner = rw.instr(x).dimensions()?.to_vec();
                let composed: Vec<i64> = perm
                    .iter()
                    .map(|&p| inner.get(usize::try_from(p).ok()?).copied())
                    .collect::<Option<_>>()?;
                let src = rw.op(x, 0);
                let new = rw.clone_with(id, vec![src]);
                rw.comp
                    .instr_mut(new)
                    .set_attr(AttrName::Dimensions, AttrValue::IntList(composed));
                return Some(new);
            }
            if let Some(new) = transpose_of_dot(rw, id, x, &perm) {
                return Some(new);
            }
            if let Some(new) = transpose_of_generator(rw, id, x, &perm) {
                return Some(new);
            }
            if let Some(new) = transpose_of_elementwise(rw, id, x, &perm) {
                return Some(new);
            }
            transpose_of_unit_reshape(rw, id, x, &perm)
        }
        Opcode::Slice => slice(rw, id, x),
        Opcode::Pad => {
            // Padding by nothing is a no-op.
            let p = rw.instr(id).padding()?;
            p.dims
                .iter()
                .all(|d| d.low == 0 && d.high == 0 && d.interior == 0)
                .then_some(x)
        }
        Opcode::Concatenate => concatenate(rw, id),
        Opcode::Reverse => {
            let dims = rw.instr(id).dimensions()?.to_vec();
            // Reversing dimensions of size 0 or 1 only is a no-op.
            let sizes = rw.shape(x).dims();
            if dims.iter().all(|&d| {
                usize::try_from(d)
                    .ok()
                    .and_then(|d| sizes.get(d))
                    .is_some_and(|&n| n <= 1)
            }) {
                return Some(x);
            }
            // `reverse(reverse(A, D), D) => A`.
            if rw.opcode(x) == Opcode::Reverse {
                let mut a = rw.instr(x).dimensions()?.to_vec();
                let mut b = dims;
                a.sort_unstable();
                b.sort_unstable();
                if a == b {
                    return Some(rw.op(x, 0));
                }
            }
            None
        }
        Opcode::DynamicSlice => {
            // Start indices are clamped into range, so a slice as large as the operand
            // always starts at 0: the operand itself.
            if same_shape {
                return Some(x);
            }
            // A dynamic slice of an iota that keeps the whole iota dimension is an iota
            // of the result shape (the start there clamps to 0).
            let xi = rw.instr(x).clone();
            if xi.opcode == Opcode::Iota {
                let d = usize::try_from(xi.iota_dimension()?).ok()?;
                if rw.shape(x).dims().get(d) == rw.shape(id).dims().get(d) {
                    let mut new = xi.clone();
                    new.users.clear();
                    new.operands.clear();
                    new.set_shape(rw.shape(id).clone());
                    new.name = rw.names.fresh(&xi.name);
                    return Some(edit::add(rw.comp, new));
                }
            }
            None
        }
        Opcode::DynamicUpdateSlice => {
            let u = rw.op(id, 1);
            // An update as large as the operand replaces it entirely (starts clamp to 0);
            // an empty update changes nothing.
            if rw.shape(u).compatible(rw.shape(id)) {
                return Some(u);
            }
            if rw.shape(u).dims().contains(&0) {
                return Some(x);
            }
            super::updates::update_of_broadcast(rw, id)
        }
        Opcode::Gather => gather_of_unit_index_vector(rw, id),
        Opcode::Scatter => scatter_of_unit_index_vector(rw, id)
            .or_else(|| super::updates::scatter_of_one_window(rw, id)),
        _ => None,
    }
}

/// `gather(A, reshape(I))` where the reshape only appends a dimension of size 1 and that
/// dimension holds the index vectors: the gather reads `I` with the index vector dimension
/// one past its last (an implicit index vector of one element), without the reshape.
/// Not where that would take the gather out of XLA's canonical form (2-D indices), which
/// XLA's emitters need inside a fusion: there the reshape fuses with the gather instead.
fn gather_of_unit_index_vector(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let r = rw.op(id, 1);
    if !appends_unit_dimension(rw, r) {
        return None;
    }
    let i = rw.op(r, 0);
    let dn = rw.instr(id).gather_dimension_numbers()?;
    if dn.index_vector_dim != rw.shape(i).rank() as i64 {
        return None;
    }
    if dn.is_xla_canonical(rw.shape(r).rank()) {
        return None;
    }
    let a = rw.op(id, 0);
    Some(rw.clone_with(id, vec![a, i]))
}

/// Whether `r` is a reshape that only appends a dimension of size 1 to its operand.
fn appends_unit_dimension(rw: &Rw<'_>, r: InstrId) -> bool {
    if rw.opcode(r) != Opcode::Reshape {
        return false;
    }
    let (r_dims, i_dims) = (rw.shape(r).dims(), rw.shape(rw.op(r, 0)).dims());
    r_dims.len() == i_dims.len() + 1
        && r_dims[..i_dims.len()] == *i_dims
        && r_dims.last() == Some(&1)
}

/// `scatter(A..., reshape(I), U...)` where the reshape only appends a dimension of size 1
/// and that dimension holds the index vectors (JAX's `x.at[i].add(u)`, histograms,
/// segment sums): the scatter reads `I` with an implicit one-element index vector, without
/// the reshape. The scatter dimensions of the updates stay the same.
fn scatter_of_unit_index_vector(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let mut operands = rw.instr(id).operands.clone();
    let k = operands.len().checked_sub(1)? / 2;
    let r = *operands.get(k)?;
    if !appends_unit_dimension(rw, r) {
        return None;
    }
    let i = rw.op(r, 0);
    let dn = rw.instr(id).scatter_dimension_numbers()?;
    if dn.index_vector_dim != rw.shape(i).rank() as i64 {
        return None;
    }
    operands[k] = i;
    Some(rw.clone_with(id, operands))
}

/// Broadcast: to the same shape with dimensions in order is a no-op;
/// `broadcast(broadcast(A, d1), d2) => broadcast(A, d2 o d1)`.
/// `transpose(dot(A, B))` that puts the rhs's free dimensions before the lhs's (batch
/// dimensions staying first) is `dot(B, A)`: the result of the dot with its operands
/// swapped, read in the transposed order. Only for a dot read by this transpose alone.
fn transpose_of_dot(rw: &mut Rw<'_>, id: InstrId, d: InstrId, perm: &[i64]) -> Option<InstrId> {
    if rw.opcode(d) != Opcode::Dot || rw.instr(d).users.len() != 1 {
        return None;
    }
    if perm != swapped_dot_perm(rw, d).as_slice() {
        return None;
    }
    let dn = rw.instr(d).dot_dimension_numbers();
    let (a, b) = (rw.op(d, 0), rw.op(d, 1));
    let batch = dn.lhs_batch_dims.len();
    let shape = rw.shape(id).clone();
    let new = rw.clone_with_shape(d, vec![b, a], shape);
    let list = |v: &[i64]| AttrValue::IntList(v.to_vec());
    let i = rw.comp.instr_mut(new);
    i.set_attr(AttrName::LhsContractingDims, list(&dn.rhs_contracting_dims));
    i.set_attr(AttrName::RhsContractingDims, list(&dn.lhs_contracting_dims));
    if batch > 0 {
        i.set_attr(AttrName::LhsBatchDims, list(&dn.rhs_batch_dims));
        i.set_attr(AttrName::RhsBatchDims, list(&dn.lhs_batch_dims));
    }
    if let Some(AttrValue::IdentList(p)) = i.attr(&AttrName::OperandPrecision).cloned() {
        // Per-operand precisions follow their operands.
        let swapped: Vec<_> = p.iter().rev().cloned().collect();
        i.set_attr(AttrName::OperandPrecision, AttrValue::IdentList(swapped));
    }
    Some(new)
}

/// The permutation of dot `d`'s result that puts the rhs's free dimensions before the
/// lhs's, batch dimensions first: the one transpose [`transpose_of_dot`] folds.
fn swapped_dot_perm(rw: &Rw<'_>, d: InstrId) -> Vec<i64> {
    let dn = rw.instr(d).dot_dimension_numbers();
    let (a, b) = (rw.op(d, 0), rw.op(d, 1));
    let batch = dn.lhs_batch_dims.len();
    let lhs_free = rw.shape(a).rank() - batch - dn.lhs_contracting_dims.len();
    let rhs_free = rw.shape(b).rank() - batch - dn.rhs_contracting_dims.len();
    (0..batch)
        .chain(batch + lhs_free..batch + lhs_free + rhs_free)
        .chain(batch..batch + lhs_free)
        .map(|k| k as i64)
        .collect()
}

/// `transpose(f(X, Y, broadcast(s)...))` of an elementwise `f` read by this transpose
/// alone, whose array operands all take the transpose in (see [`absorbs_transpose`]): `f`
/// of the transposed operands (and the scalars broadcast to the new shape), so that the
/// transpose meets the one below, folds into a dot, or becomes an iota or broadcast of
/// its own instead of being computed.
fn transpose_of_elementwise(
    rw: &mut Rw<'_>,
    id: InstrId,
    e: InstrId,
    perm: &[i64],
) -> Option<InstrId> {
    if !sinkable_elementwise(rw, e, rw.shape(e).dims()) {
        return None;
    }
    let operands = rw.instr(e).operands.clone();
    let arrays = operands
        .iter()
        .filter(|&&o| rw.shape(o).rank() > 0 && scalar_broadcast_source(rw, o).is_none())
        .count();
    let absorbed = operands
        .iter()
        .filter(|&&o| scalar_broadcast_source(rw, o).is_none() && rw.shape(o).rank() > 0)
        .all(|&o| absorbs_transpose(rw, o, perm, 3));
    if arrays == 0 || !absorbed {
        return None;
    }
    let dims = rw.shape(id).dims().to_vec();
    sink_transpose(rw, e, perm, &dims)
}

/// `transpose(x, perm)` built below `x` all the way down in one step (so no other pass
/// sees it half moved): the scalars broadcast to `dims`, iotas and broadcasts as their
/// transposed selves, elementwise ops of the sunk operands, and a transpose left only on
/// a transpose or dot, where the next rewrite composes or folds it.
fn sink_transpose(rw: &mut Rw<'_>, x: InstrId, perm: &[i64], dims: &[i64]) -> Option<InstrId> {
    let ty = rw.shape(x).element_type()?;
    let shape = hlo::Shape::array(ty, dims.to_vec());
    if rw.shape(x).rank() == 0 {
        return Some(x);
    }
    if let Some(s) = scalar_broadcast_source(rw, x) {
        return Some(rw.add(
            Opcode::Broadcast,
            shape,
            vec![s],
            vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
        ));
    }
    match rw.opcode(x) {
        Opcode::Iota | Opcode::Broadcast => generator_transposed(rw, x, perm, shape),
        Opcode::Transpose | Opcode::Dot => Some(rw.add(
            Opcode::Transpose,
            shape,
            vec![x],
            vec![(AttrName::Dimensions, AttrValue::IntList(perm.to_vec()))],
        )),
        _ => {
            let operands = rw.instr(x).operands.clone();
            let mut sunk = Vec::with_capacity(operands.len());
            for o in operands {
                sunk.push(sink_transpose(rw, o, perm, dims)?);
            }
            Some(rw.clone_with_shape(x, sunk, shape))
        }
    }
}

/// An elementwise op (not a bitcast-convert) of shape `dims` read by one user alone: a
/// transpose above it may move below it without computing anything twice.
fn sinkable_elementwise(rw: &Rw<'_>, e: InstrId, dims: &[i64]) -> bool {
    let op = rw.opcode(e);
    op.is_elementwise()
        && op != Opcode::BitcastConvert
        && rw.instr(e).users.len() == 1
        && rw.shape(e).dims() == dims
}

/// Whether `transpose(x, perm)` costs nothing once moved onto `x`: `x` is a transpose
/// read only here (they compose), a dot read only here whose operands swapped give
/// `perm` (it folds, [`transpose_of_dot`]), an iota (it counts along another dimension),
/// a broadcast whose dimensions stay in order once permuted (another broadcast), or, up
/// to `depth` levels, an elementwise op read only here whose array operands all absorb it
/// too. Any other transpose of a dot stays above the elementwise op: `reshape-mover`
/// moves a transpose of one array and scalars back up through it, and the two passes
/// undid each other's move on every round of the simplification fixed point (a value
/// iteration's `0.9 * einsum("ast,t->sa", ...)` ran its 25 rounds).
fn absorbs_transpose(rw: &Rw<'_>, x: InstrId, perm: &[i64], depth: u32) -> bool {
    match rw.opcode(x) {
        Opcode::Transpose => rw.instr(x).users.len() == 1,
        Opcode::Dot => rw.instr(x).users.len() == 1 && swapped_dot_perm(rw, x) == perm,
        Opcode::Iota => true,
        Opcode::Broadcast => permuted_broadcast_dims(rw, x, perm).is_some(),
        _ if depth > 0 && sinkable_elementwise(rw, x, rw.shape(x).dims()) => {
            rw.instr(x).operands.iter().all(|&o| {
                rw.shape(o).rank() == 0
                    || scalar_broadcast_source(rw, o).is_some()
                    || absorbs_transpose(rw, o, perm, depth - 1)
            })
        }
        _ => false,
    }
}

/// The dimensions of `transpose(broadcast(y, dims), perm)` as a broadcast of `y`, where
/// they stay increasing (a broadcast does not reorder its operand's dimensions).
fn permuted_broadcast_dims(rw: &Rw<'_>, b: InstrId, perm: &[i64]) -> Option<Vec<i64>> {
    let dims = rw.instr(b).dimensions()?;
    let mut inverse = vec![0i64; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        *inverse.get_mut(usize::try_from(p).ok()?)? = i as i64;
    }
    let moved: Vec<i64> = dims
        .iter()
        .map(|&d| inverse.get(usize::try_from(d).ok()?).copied())
        .collect::<Option<_>>()?;
    moved.windows(2).all(|w| w[0] < w[1]).then_some(moved)
}

/// `transpose(iota(d))` is an iota along where `d` went; `transpose(broadcast(y))` is a
/// broadcast of `y` where its dimensions stay in order.
fn transpose_of_generator(
    rw: &mut Rw<'_>,
    id: InstrId,
    x: InstrId,
    perm: &[i64],
) -> Option<InstrId> {
    let shape = rw.shape(id).clone();
    generator_transposed(rw, x, perm, shape)
}

/// The iota or broadcast `x` transposed by `perm` to `shape`, as an iota or broadcast.
fn generator_transposed(
    rw: &mut Rw<'_>,
    x: InstrId,
    perm: &[i64],
    shape: hlo::Shape,
) -> Option<InstrId> {
    match rw.opcode(x) {
        Opcode::Iota => {
            let d = rw.instr(x).iota_dimension()?;
            let along = perm.iter().position(|&p| p == d)?;
            Some(rw.add(
                Opcode::Iota,
                shape,
                Vec::new(),
                vec![(AttrName::IotaDimension, AttrValue::Int(along as i64))],
            ))
        }
        Opcode::Broadcast => {
            let moved = permuted_broadcast_dims(rw, x, perm)?;
            let y = rw.op(x, 0);
            Some(rw.add(
                Opcode::Broadcast,
                shape,
                vec![y],
                vec![(AttrName::Dimensions, AttrValue::IntList(moved))],
            ))
        }
        _ => None,
    }
}

/// The dimensions of `dims` that are not 1, as (position, size).
fn non_unit(dims: &[i64]) -> Vec<(usize, i64)> {
    dims.iter()
        .copied()
        .enumerate()
        .filter(|&(_, d)| d != 1)
        .collect()
}

/// `transpose(reshape(A))` where the reshape only inserts or deletes dimensions of size 1:
/// the same as transposing `A`'s own dimensions and then reshaping, which lets the
/// transpose meet a transpose below it, vanish when it keeps the order of the dimensions
/// that are not 1, or a reshape above it merge with this one. Rewritten only then, so that
/// a transpose a dot can fold stays where it is otherwise.
fn transpose_of_unit_reshape(
    rw: &mut Rw<'_>,
    id: InstrId,
    r: InstrId,
    perm: &[i64],
) -> Option<InstrId> {
    if rw.opcode(r) != Opcode::Reshape {
        return None;
    }
    let a = rw.op(r, 0);
    let a_dims = rw.shape(a).dims().to_vec();
    let r_dims = rw.shape(r).dims().to_vec();
    let a_big = non_unit(&a_dims);
    let r_big = non_unit(&r_dims);
    let sizes = |v: &[(usize, i64)]| v.iter().map(|&(_, d)| d).collect::<Vec<_>>();
    if sizes(&a_big) != sizes(&r_big) {
        return None;
    }
    // Position in `r` of each dimension that is not 1 -> the matching dimension of `a`.
    let a_of_r: std::collections::HashMap<usize, usize> = r_big
        .iter()
        .zip(&a_big)
        .map(|(&(rp, _), &(ap, _))| (rp, ap))
        .collect();
    let mut new_perm: Vec<i64> = Vec::with_capacity(a_dims.len());
    for &p in perm {
        if let Some(&ap) = usize::try_from(p).ok().and_then(|p| a_of_r.get(&p)) {
            new_perm.push(ap as i64);
        }
    }
    new_perm.extend(
        a_dims
            .iter()
            .enumerate()
            .filter(|&(_, &d)| d == 1)
            .map(|(k, _)| k as i64),
    );
    let identity = new_perm.iter().enumerate().all(|(k, &p)| p == k as i64);
    let merges = rw.opcode(a) == Opcode::Transpose
        || identity
        || (!rw.instr(id).users.is_empty()
            && rw
                .instr(id)
                .users
                .iter()
                .all(|&u| rw.opcode(u) == Opcode::Reshape));
    if !merges {
        return None;
    }
    let ty = rw.shape(a).element_type()?;
    let moved = if identity {
        a
    } else {
        let dims = new_perm
            .iter()
            .map(|&p| usize::try_from(p).ok().and_then(|p| a_dims.get(p).copied()))
            .collect::<Option<Vec<i64>>>()?;
        rw.add(
            Opcode::Transpose,
            hlo::Shape::array(ty, dims),
            vec![a],
            vec![(AttrName::Dimensions, AttrValue::IntList(new_perm))],
        )
    };
    let shape = rw.shape(id).clone();
    Some(rw.add(Opcode::Reshape, shape, vec![moved], Vec::new()))
}

fn broadcast(rw: &mut Rw<'_>, id: InstrId, same_shape: bool) -> Option<InstrId> {
    let x = rw.op(id, 0);
    let dims = rw.instr(id).dimensions()?.to_vec();
    if same_shape && dims.iter().enumerate().all(|(i, &d)| d == i as i64) {
        return Some(x);
    }
    if rw.opcode(x) == Opcode::Broadcast {
        let inner = rw.instr(x).dimensions()?.to_vec();
        let composed: Vec<i64> = inner
            .iter()
            .map(|&d| dims.get(usize::try_from(d).ok()?).copied())
            .collect::<Option<_>>()?;
        let src = rw.op(x, 0);
        let new = rw.clone_with(id, vec![src]);
        rw.comp
            .instr_mut(new)
            .set_attr(AttrName::Dimensions, AttrValue::IntList(composed));
        return Some(new);
    }
    // `broadcast(iota(k), dims) => iota(dims[k])` over the result: each element is the
    // index the iota counted, now along the dimension it was broadcast to.
    if rw.opcode(x) == Opcode::Iota {
        let k = usize::try_from(rw.instr(x).iota_dimension()?).ok()?;
        let along = *dims.get(k)?;
        let shape = rw.shape(id).clone();
        return Some(rw.add(
            Opcode::Iota,
            shape,
            Vec::new(),
            vec![(AttrName::IotaDimension, AttrValue::Int(along))],
        ));
    }
    None
}

/// Slice: the whole operand is a no-op; `slice(slice(A))` is one slice.
fn slice(rw: &mut Rw<'_>, id: InstrId, x: InstrId) -> Option<InstrId> {
    let s = rw.instr(id).slice()?.to_vec();
    let dims = rw.shape(x).dims().to_vec();
    if s.len() == dims.len()
        && s.iter()
            .zip(&dims)
            .all(|(d, &n)| d.start == 0 && d.limit == n && d.stride == 1)
    {
        return Some(x);
    }
    if rw.opcode(x) != Opcode::Slice {
        return None;
    }
    let inner = rw.instr(x).slice()?.to_vec();
    let out = rw.shape(id).dims().to_vec();
    if inner.len() != s.len() || out.len() != s.len() {
        return None;
    }
    let mut merged = Vec::with_capacity(s.len());
    for ((o, i), &n) in s.iter().zip(&inner).zip(&out) {
        let start = i.start.checked_add(o.start.checked_mul(i.stride)?)?;
        let stride = i.stride.checked_mul(o.stride)?;
        let limit = if n == 0 {
            start
        } else {
            start
                .checked_add((n - 1).checked_mul(stride)?)?
                .checked_add(1)?
        };
        merged.push(SliceDim {
            start,
            limit,
            stride,
        });
    }
    let src = rw.op(x, 0);
    let new = rw.clone_with(id, vec![src]);
    rw.comp
        .instr_mut(new)
        .set_attr(AttrName::Slice, AttrValue::Slice(merged));
    Some(new)
}

/// Concatenate: of one operand is that operand; empty operands are dropped.
fn concatenate(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let ops = rw.instr(id).operands.clone();
    if ops.len() == 1 {
        return Some(ops[0]);
    }
    let kept: Vec<InstrId> = ops
        .iter()
        .copied()
        .filter(|&o| !rw.shape(o).dims().contains(&0))
        .collect();
    if kept.len() == ops.len() || kept.is_empty() {
        return None;
    }
    if kept.len() == 1 {
        return Some(kept[0]);
    }
    Some(rw.clone_with(id, kept))
}

/// An iota along a dimension of size 1 is all zeros.
fn iota(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let d = usize::try_from(rw.instr(id).iota_dimension()?).ok()?;
    let shape = rw.shape(id).clone();
    if *shape.dims().get(d)? != 1 {
        return None;
    }
    let ty = shape.element_type()?;
    let zero = if ty.is_float() {
        Scalar::Float(0.0)
    } else {
        Scalar::Int(0)
    };
    rw.splat_like(&shape, zero)
}
