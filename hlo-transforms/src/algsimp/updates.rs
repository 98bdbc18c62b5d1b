//! Rules for updates at constant positions: a scatter of one window becomes a
//! dynamic-update-slice, and a dynamic-update-slice of a broadcast scalar a pad. Exact:
//! each applies only where the positions are constants in bounds, so that the scatter's
//! skipping of out-of-bounds windows and the dynamic-update-slice's clamping never act.

use super::rewriter::{scalar_broadcast_source, Rw};
use super::scalar::{element, Scalar};
use hlo::attrs::{AttrName, AttrValue, PaddingConfig, PaddingDim};
use hlo::ir::InstrId;
use hlo::shape::Shape;
use hlo::Opcode;

/// The integer value of constant `id` at flat position `k`.
fn constant_int(rw: &Rw<'_>, id: InstrId, k: usize) -> Option<i64> {
    let i = rw.instr(id);
    if i.opcode != Opcode::Constant {
        return None;
    }
    match element(i.literal()?.as_array()?, k)? {
        Scalar::Int(v) => i64::try_from(v).ok(),
        _ => None,
    }
}

/// `scatter(A, c, U)` that overwrites one window at the constant index vector `c`, in
/// bounds: `dynamic-update-slice(A, U', c...)`, `U'` being `U` with the window's inserted
/// dimensions (size 1) as the operand has them.
pub(super) fn scatter_of_one_window(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let i = rw.instr(id);
    let [a, idx, u] = i.operands[..] else {
        return None;
    };
    let to_apply = i.attr(&AttrName::ToApply).and_then(|v| match v {
        AttrValue::Computation(c) => Some(*c),
        _ => None,
    })?;
    if !rw
        .overwrites
        .get(to_apply.index())
        .copied()
        .unwrap_or(false)
    {
        return None;
    }
    let dn = i.scatter_dimension_numbers()?;
    if !dn.input_batching_dims.is_empty() {
        return None;
    }
    let (a_dims, idx_dims, u_dims) = (
        rw.shape(a).dims().to_vec(),
        rw.shape(idx).dims().to_vec(),
        rw.shape(u).dims().to_vec(),
    );
    let ivd = usize::try_from(dn.index_vector_dim).ok()?;
    let one_vector = idx_dims
        .iter()
        .enumerate()
        .all(|(d, &n)| d == ivd || n == 1);
    let one_window = u_dims
        .iter()
        .enumerate()
        .all(|(d, &n)| dn.update_window_dims.contains(&(d as i64)) || n == 1);
    if !one_vector || !one_window {
        return None;
    }
    // The window's size along each operand dimension, and where it starts.
    let mut window = dn.update_window_dims.iter();
    let mut sizes = Vec::with_capacity(a_dims.len());
    for d in 0..a_dims.len() as i64 {
        if dn.inserted_window_dims.contains(&d) {
            sizes.push(1);
        } else {
            let w = usize::try_from(*window.next()?).ok()?;
            sizes.push(*u_dims.get(w)?);
        }
    }
    let mut starts = vec![0i64; a_dims.len()];
    for (k, &d) in dn.scatter_dims_to_operand_dims.iter().enumerate() {
        *starts.get_mut(usize::try_from(d).ok()?)? = constant_int(rw, idx, k)?;
    }
    let in_bounds = (0..a_dims.len()).all(|d| starts[d] >= 0 && starts[d] + sizes[d] <= a_dims[d]);
    if !in_bounds {
        return None;
    }
    let ity = rw.shape(idx).element_type()?;
    let uty = rw.shape(u).element_type()?;
    let update = if u_dims == sizes {
        u
    } else {
        rw.add(
            Opcode::Reshape,
            Shape::array(uty, sizes),
            vec![u],
            Vec::new(),
        )
    };
    let mut operands = vec![a, update];
    for s in starts {
        operands.push(rw.constant(ity, Scalar::Int(i128::from(s)))?);
    }
    let shape = rw.shape(id).clone();
    Some(rw.add(Opcode::DynamicUpdateSlice, shape, operands, Vec::new()))
}

/// `dynamic-update-slice(broadcast(s), U, c...)` at constant starts: `pad(U, s)`, the
/// starts clamped as the dynamic-update-slice clamps them.
pub(super) fn update_of_broadcast(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let operands = rw.instr(id).operands.clone();
    let (&a, &u) = (operands.first()?, operands.get(1)?);
    let s = scalar_broadcast_source(rw, a)?;
    let (a_dims, u_dims) = (rw.shape(a).dims().to_vec(), rw.shape(u).dims().to_vec());
    let mut dims = Vec::with_capacity(a_dims.len());
    for (d, &start) in operands[2..].iter().enumerate() {
        let room = a_dims.get(d)? - u_dims.get(d)?;
        let low = constant_int(rw, start, 0)?.clamp(0, room);
        dims.push(PaddingDim {
            low,
            high: room - low,
            interior: 0,
        });
    }
    if dims.len() != a_dims.len() {
        return None;
    }
    let shape = rw.shape(id).clone();
    Some(rw.add(
        Opcode::Pad,
        shape,
        vec![u, s],
        vec![(
            AttrName::Padding,
            AttrValue::Padding(PaddingConfig { dims }),
        )],
    ))
}
