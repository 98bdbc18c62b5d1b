//! Grouped maps of a fusion (or of one instruction taken as a fusion of itself) from any
//! of its values, not only its root: the maps from an output of the starting value to every
//! value it reads inside the region and to the region's operands.

use hlo::{CompId, InstrId, Module, Opcode};

use super::sets::identity_set;
use super::walk::{Key, Walker};
use crate::ops::calls_computation;
use crate::ops::util::{output_count, OpView};
use crate::{IndexingError, ValueMaps};

/// Where a grouped walk starts: an instruction of the region's computation (the region
/// itself or one of its operands) or of the computation a call-like region runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Start {
    /// Computation holding the starting instruction.
    pub(crate) comp: CompId,
    /// The starting instruction.
    pub(crate) id: InstrId,
}

/// One [`ValueMaps`] per output of `start`: the maps from that output to every value of
/// the region `region` (an instruction of `comp`; a fusion or call is looked through, any
/// other instruction is a region of one op) that the output reads, and to the operands of
/// the region it reads, in traversal order from `start`. Parameters of called computations
/// are listed as the operands they stand for.
pub(crate) fn from_start(
    module: &Module,
    comp: CompId,
    region: InstrId,
    start: Start,
) -> Result<Vec<ValueMaps>, IndexingError> {
    let sv = OpView::new(module, start.comp, start.id);
    let mut out = Vec::new();
    for k in 0..output_count(sv.instr) {
        let mut w = Walker::new(module);
        w.add((start.comp, start.id, k), identity_set(&sv, k)?);
        if start.comp == comp {
            w.walk(comp, &|id| id == region)?;
        } else if calls_computation(module.computation(comp).instr(region).opcode()) {
            w.leave_call(comp, region)?;
        }
        out.push(ValueMaps {
            values: values(module, comp, &w),
        });
    }
    Ok(out)
}

/// The values a walk reached, in order, without the parameters of called computations.
fn values(
    module: &Module,
    comp: CompId,
    w: &Walker<'_>,
) -> Vec<(String, usize, crate::OperandIndexing)> {
    let mut values = Vec::new();
    for key in &w.order {
        let (kc, kid, kk): Key = *key;
        let instr = module.computation(kc).instr(kid);
        if kc != comp && instr.opcode() == Opcode::Parameter {
            continue;
        }
        if let Some(s) = w.sets.get(key) {
            values.push((instr.name().to_string(), kk, s.clone()));
        }
    }
    values
}
