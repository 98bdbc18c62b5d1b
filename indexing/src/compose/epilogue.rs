//! Forward composition: input-to-output maps from one instruction to the roots of its
//! computation.

use std::collections::HashMap;

use hlo::{CompId, InstrId, Module};

use super::sets::{compose_sets, identity_set};
use crate::ops::util::{output_count, OpView};
use crate::ops::{calls_computation, op_in_to_out, operand_output};
use crate::{IndexingError, OperandIndexing};

/// The maps from the output of `hero` (an instruction of `comp`) to each output of
/// `comp`'s root, composing input-to-output maps forward in def-before-use order. Entry `k`
/// holds the maps to root output `k` (empty when the hero does not reach it); a nested
/// fusion on the way makes them UNDEFINED.
pub(crate) fn forward(
    module: &Module,
    comp: CompId,
    hero: InstrId,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    forward_to(module, comp, hero, module.computation(comp).root())
}

/// As [`forward`], to each output of `target` (an instruction of `comp`) instead of the
/// root: entry `k` holds the maps to output `k` of `target` (empty when the hero does not
/// reach it).
pub(crate) fn forward_to(
    module: &Module,
    comp: CompId,
    hero: InstrId,
    target: InstrId,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let c = module.computation(comp);
    let mut sets: HashMap<(InstrId, usize), OperandIndexing> = HashMap::new();
    let hv = OpView::new(module, comp, hero);
    for k in 0..output_count(hv.instr) {
        sets.insert((hero, k), identity_set(&hv, k)?);
    }
    let order = c.def_before_use_order();
    let start = order.iter().position(|&i| i == hero).unwrap_or(order.len());
    for &id in order.get(start + 1..).unwrap_or_default() {
        let instr = c.instr(id);
        let v = OpView::new(module, comp, id);
        for (j, &op) in instr.operands().iter().enumerate() {
            let Some(src) = sets.get(&(op, operand_output(instr, 0))).cloned() else {
                continue;
            };
            let step = if calls_computation(instr.opcode()) {
                vec![
                    OperandIndexing::undefined("input-to-output through a nested fusion");
                    output_count(instr)
                ]
            } else {
                op_in_to_out(&v, j)?
            };
            for (k, s) in step.iter().enumerate() {
                let composed = compose_sets(module, &src, s)?;
                match sets.get_mut(&(id, k)) {
                    Some(e) => e.merge(composed),
                    None => {
                        sets.insert((id, k), composed);
                    }
                }
            }
        }
    }
    Ok((0..output_count(c.instr(target)))
        .map(|k| sets.remove(&(target, k)).unwrap_or_default())
        .collect())
}
