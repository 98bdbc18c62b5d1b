//! Rules for reduce, dot and sort.

use super::rewriter::Rw;
use super::scalar::Scalar;
use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::InstrId;
use hlo::shape::ElementType;
use hlo::Opcode;

pub(super) fn simplify(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    match rw.opcode(id) {
        Opcode::Reduce => reduce(rw, id),
        Opcode::Dot => dot(rw, id),
        Opcode::Sort => {
            // Sorting one array along a dimension of size 0 or 1 is a no-op.
            let i = rw.instr(id);
            if i.operands.len() != 1 || i.shape.is_tuple() {
                return None;
            }
            let d = usize::try_from(*i.dimensions()?.first()?).ok()?;
            let x = i.operands[0];
            (*rw.shape(x).dims().get(d)? <= 1).then_some(x)
        }
        _ => None,
    }
}

/// True when `init` is the identity of the reducer `op` for type `ty`. Floats: `+0` and
/// `-0` both count for add (XLA's rule; `-0 + +0` is `+0`, so only the sign of a zero
/// result may change).
pub(crate) fn is_identity(op: Opcode, ty: ElementType, init: Scalar) -> bool {
    match (op, init) {
        (Opcode::Add | Opcode::Or | Opcode::Xor, s) => s.is_zero(),
        (Opcode::Multiply | Opcode::And, Scalar::Bool(b)) => b,
        (Opcode::Multiply, s) => s.is_one(),
        (Opcode::And, Scalar::Int(v)) => {
            super::scalar::wrap_int(ty, v) == super::scalar::wrap_int(ty, -1)
        }
        (Opcode::Maximum, Scalar::Float(f)) => f == f64::NEG_INFINITY,
        (Opcode::Minimum, Scalar::Float(f)) => f == f64::INFINITY,
        (Opcode::Maximum, Scalar::Int(v)) => int_bound(ty, false) == Some(v),
        (Opcode::Minimum, Scalar::Int(v)) => int_bound(ty, true) == Some(v),
        (Opcode::Maximum, Scalar::Bool(b)) => !b,
        (Opcode::Minimum, Scalar::Bool(b)) => b,
        _ => false,
    }
}

fn int_bound(ty: ElementType, max: bool) -> Option<i128> {
    let w = ty.bit_width()?;
    Some(match (ty.is_signed_integral(), max) {
        (true, true) => (1i128 << (w - 1)) - 1,
        (true, false) => -(1i128 << (w - 1)),
        (false, true) => (1i128 << w) - 1,
        (false, false) => 0,
    })
}

/// Reduce (one input):
/// - over an empty input: `broadcast(init)` (exact);
/// - over dimensions of size 1 only (or none), with the reducer's identity as init:
///   a reshape of the input (see [`is_identity`] for floats);
/// - of `broadcast(A)` over exactly the broadcast's new dimensions, with an idempotent
///   reducer (max, min, and, or) and its identity as init: `A` (exact).
fn reduce(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let i = rw.instr(id);
    if i.operands.len() != 2 || i.shape.is_tuple() {
        return None;
    }
    let (x, init) = (i.operands[0], i.operands[1]);
    let dims = i.dimensions()?.to_vec();
    let kind = i
        .to_apply()
        .and_then(|c| rw.reducers.get(c.index()).copied().flatten());
    let shape = (*i.shape).clone();
    let ty = shape.element_type()?;
    let in_dims = rw.shape(x).dims().to_vec();
    if in_dims.contains(&0) {
        return Some(rw.add(
            Opcode::Broadcast,
            shape,
            vec![init],
            vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
        ));
    }
    let kind = kind?;
    let init_value = rw.splat(init)?;
    if !is_identity(kind, ty, init_value) {
        return None;
    }
    let trivial = dims.iter().all(|&d| {
        usize::try_from(d)
            .ok()
            .and_then(|d| in_dims.get(d))
            .is_some_and(|&n| n == 1)
    });
    if trivial {
        if rw.shape(x).compatible(&shape) {
            return Some(x);
        }
        return Some(rw.add(Opcode::Reshape, shape, vec![x], Vec::new()));
    }
    if rw.opcode(x) == Opcode::Broadcast
        && matches!(
            kind,
            Opcode::Maximum | Opcode::Minimum | Opcode::And | Opcode::Or
        )
    {
        let src = rw.op(x, 0);
        let bdims = rw.instr(x).dimensions()?.to_vec();
        let mut added: Vec<i64> = (0..in_dims.len() as i64)
            .filter(|d| !bdims.contains(d))
            .collect();
        let mut rd = dims;
        added.sort_unstable();
        rd.sort_unstable();
        let increasing = bdims.windows(2).all(|w| w[0] < w[1]);
        if added == rd && increasing && rw.shape(src).compatible(&shape) {
            return Some(src);
        }
    }
    None
}

/// Dot with a contracting dimension of size 0: every output element is an empty sum,
/// zero (exact). Dot whose contracting dimensions all have size 1 (and no batch
/// dimensions, operand and result types equal): an outer product, `broadcast(lhs) *
/// broadcast(rhs)` (one product per element, as the dot computes).
fn dot(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let i = rw.instr(id);
    let dn = i.dot_dimension_numbers();
    let (l, r) = (i.operands[0], i.operands[1]);
    let lhs = rw.shape(l).dims().to_vec();
    let rhs = rw.shape(r).dims().to_vec();
    let size = |dims: &[i64], d: i64| usize::try_from(d).ok().and_then(|d| dims.get(d)).copied();
    let empty = dn
        .lhs_contracting_dims
        .iter()
        .any(|&d| size(&lhs, d) == Some(0));
    let shape = rw.shape(id).clone();
    let ty = shape.element_type()?;
    if empty {
        let zero = if ty.is_float() {
            Scalar::Float(0.0)
        } else if ty.is_pred() {
            Scalar::Bool(false)
        } else {
            Scalar::Int(0)
        };
        return rw.splat_like(&shape, zero);
    }
    let degenerate = !dn.lhs_contracting_dims.is_empty()
        && dn.lhs_batch_dims.is_empty()
        && dn
            .lhs_contracting_dims
            .iter()
            .all(|&d| size(&lhs, d) == Some(1))
        && dn
            .rhs_contracting_dims
            .iter()
            .all(|&d| size(&rhs, d) == Some(1))
        && rw.shape(l).element_type() == Some(ty)
        && rw.shape(r).element_type() == Some(ty)
        && !ty.is_pred();
    if !degenerate {
        return None;
    }
    let keep = |dims: &[i64], c: &[i64]| -> Vec<i64> {
        dims.iter()
            .enumerate()
            .filter(|(k, _)| !c.contains(&(*k as i64)))
            .map(|(_, &n)| n)
            .collect()
    };
    let (ld, rd) = (
        keep(&lhs, &dn.lhs_contracting_dims),
        keep(&rhs, &dn.rhs_contracting_dims),
    );
    let nl = ld.len() as i64;
    let lr = rw.add(
        Opcode::Reshape,
        hlo::shape::Shape::array(ty, ld.clone()),
        vec![l],
        Vec::new(),
    );
    let rr = rw.add(
        Opcode::Reshape,
        hlo::shape::Shape::array(ty, rd.clone()),
        vec![r],
        Vec::new(),
    );
    let lb = rw.add(
        Opcode::Broadcast,
        shape.clone(),
        vec![lr],
        vec![(AttrName::Dimensions, AttrValue::IntList((0..nl).collect()))],
    );
    let rb = rw.add(
        Opcode::Broadcast,
        shape.clone(),
        vec![rr],
        vec![(
            AttrName::Dimensions,
            AttrValue::IntList((nl..nl + rd.len() as i64).collect()),
        )],
    );
    Some(rw.add(Opcode::Multiply, shape, vec![lb, rb], Vec::new()))
}
