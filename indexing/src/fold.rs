//! Folding of runtime variables whose values are known statically (produced by an iota, or
//! by a constant at a single element or with all elements equal), following data-movement
//! ops (broadcast, reshape, bitcast, transpose, reverse, slice, copy) back to the producer.
//! Folding substitutes the exact value for `rtK`; clamps stay explicit so it is exact.

use affine::{Expr, IndexingMap, MapForm};
use hlo::{CompId, InstrId, Module, Opcode};

use crate::ops::util::OpView;
use crate::{IndexedMap, IndexingError, OperandIndexing};

/// How many data-movement ops to follow from a runtime variable's producer.
const MAX_CHAIN: usize = 16;

/// The exact value of the element `map` reads from `producer`, as an expression over the
/// map's variables, if statically known.
fn known_value(
    module: &Module,
    comp: CompId,
    producer: InstrId,
    map: &IndexingMap,
) -> Result<Option<Expr>, IndexingError> {
    let mut id = producer;
    let mut m = map.clone();
    for _ in 0..MAX_CHAIN {
        let v = OpView::new(module, comp, id);
        match v.instr.opcode() {
            Opcode::Iota => {
                let dim = v.instr.iota_dimension().unwrap_or(0);
                return Ok(usize::try_from(dim)
                    .ok()
                    .and_then(|d| m.results().get(d).copied()));
            }
            Opcode::Constant => {
                let Some(lit) = v.instr.literal().and_then(|l| l.as_array()) else {
                    return Ok(None);
                };
                let dims = v.instr.shape().dims();
                let n = lit.data().len();
                let all_equal = n > 0 && (1..n).all(|i| lit.get_f64(i) == lit.get_f64(0));
                let index = if all_equal {
                    Some(0)
                } else {
                    m.simplify();
                    let consts: Option<Vec<i64>> =
                        m.results().iter().map(|e| e.as_const()).collect();
                    consts.map(|cs| cs.iter().zip(dims).fold(0i64, |acc, (&x, &d)| acc * d + x))
                };
                let value = index
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| lit.get_f64(i))
                    .filter(|x| x.fract() == 0.0 && x.abs() < 9.0e15);
                return Ok(value.map(|x| Expr::constant(x as i64)));
            }
            Opcode::Broadcast
            | Opcode::Reshape
            | Opcode::Bitcast
            | Opcode::Transpose
            | Opcode::Reverse
            | Opcode::Slice
            | Opcode::Copy => {
                let ops = crate::ops::op_out_to_in(&v, 0)?;
                let Some(OperandIndexing::Maps(set)) = ops.into_iter().next() else {
                    return Ok(None);
                };
                let Some(step) = set.into_values().next() else {
                    return Ok(None);
                };
                if step.map.form() != MapForm::Normal || !step.map.ranges().is_empty() {
                    return Ok(None);
                }
                m = m.compose(&step.map)?;
                if m.form() != MapForm::Normal {
                    return Ok(None);
                }
                id = v.operand_id(0)?;
            }
            _ => return Ok(None),
        }
    }
    Ok(None)
}

/// Folds what can be folded, then simplifies and removes unused variables.
pub(crate) fn fold_and_normalize(
    module: &Module,
    im: &mut IndexedMap,
) -> Result<(), IndexingError> {
    im.normalize()?;
    let mut k = 0;
    let mut changed = false;
    while k < im.runtime.len() {
        let rv = &im.runtime[k];
        if let Some(value) = known_value(module, rv.computation, rv.producer, &rv.map)? {
            im.substitute_runtime(k as u32, value)?;
            changed = true;
        }
        k += 1;
    }
    if changed {
        im.normalize()?;
    }
    Ok(())
}

/// Folds and normalizes every map of a set (a map that becomes KNOWN EMPTY is dropped).
pub(crate) fn finish(
    module: &Module,
    set: OperandIndexing,
) -> Result<OperandIndexing, IndexingError> {
    match set {
        OperandIndexing::Undefined(r) => Ok(OperandIndexing::Undefined(r)),
        OperandIndexing::Maps(ms) => {
            let mut out = OperandIndexing::none();
            for (_, mut m) in ms {
                fold_and_normalize(module, &mut m)?;
                out.insert(m);
            }
            Ok(out)
        }
    }
}
