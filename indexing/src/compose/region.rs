//! Composition over a producer and its consumer that are not fused yet: the maps from the
//! consumer's outputs to every value the would-be fusion computes or reads.

use hlo::{CompId, InstrId, Module, Opcode};

use super::sets::identity_set;
use super::walk::Walker;
use crate::ops::util::{output_count, OpView};
use crate::{IndexingError, ValueMaps};

/// One [`ValueMaps`] per output of `consumer`: the maps from that output to every
/// instruction of the would-be fusion of `producer` (an operand of `consumer`; both in
/// `comp`) into `consumer` (fusions are looked through) and to every operand it reads, in
/// traversal order.
pub(crate) fn region(
    module: &Module,
    comp: CompId,
    producer: InstrId,
    consumer: InstrId,
) -> Result<Vec<ValueMaps>, IndexingError> {
    let cv = OpView::new(module, comp, consumer);
    let mut out = Vec::new();
    for k in 0..output_count(cv.instr) {
        let mut w = Walker::new(module);
        w.add((comp, consumer, k), identity_set(&cv, k)?);
        w.walk(comp, &|id| id == consumer || id == producer)?;
        let mut values = Vec::new();
        for key in &w.order {
            let (kc, kid, kk) = *key;
            let instr = module.computation(kc).instr(kid);
            // Parameters of called computations stand for operands listed in `comp`.
            if kc != comp && instr.opcode() == Opcode::Parameter {
                continue;
            }
            if let Some(s) = w.sets.get(key) {
                values.push((instr.name().to_string(), kk, s.clone()));
            }
        }
        out.push(ValueMaps { values });
    }
    Ok(out)
}
