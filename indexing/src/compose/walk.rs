//! Backward composition through a computation: from the maps of some instructions' outputs
//! to every instruction they read, users before operands, through the computations that
//! nested fusions and calls run.

use std::collections::HashMap;

use hlo::{CompId, InstrId, Module, Opcode};

use super::called::called;
use super::sets::{compose_sets, identity_set};
use crate::ops::util::{output_count, OpView};
use crate::ops::{calls_computation, op_out_to_in, operand_output};
use crate::{GroupedIndexing, IndexingError, OperandIndexing};

/// An output of an instruction: computation, instruction, output number.
pub(crate) type Key = (CompId, InstrId, usize);

/// The sets of maps found so far, from one starting tensor to each output reached, and the
/// order in which outputs were first reached.
pub(crate) struct Walker<'m> {
    module: &'m Module,
    pub(crate) sets: HashMap<Key, OperandIndexing>,
    pub(crate) order: Vec<Key>,
}

impl<'m> Walker<'m> {
    /// A walk that has reached nothing yet.
    pub(crate) fn new(module: &'m Module) -> Walker<'m> {
        Walker {
            module,
            sets: HashMap::new(),
            order: Vec::new(),
        }
    }

    /// Adds maps to an output (merged with those it already has).
    pub(crate) fn add(&mut self, key: Key, set: OperandIndexing) {
        match self.sets.get_mut(&key) {
            Some(s) => s.merge(set),
            None => {
                self.order.push(key);
                self.sets.insert(key, set);
            }
        }
    }

    /// Propagates maps from users to operands through every instruction of `comp` for which
    /// `region` holds, users first; others are left as leaves.
    pub(crate) fn walk(
        &mut self,
        comp: CompId,
        region: &dyn Fn(InstrId) -> bool,
    ) -> Result<(), IndexingError> {
        let c = self.module.computation(comp);
        let order: Vec<InstrId> = c.def_before_use_order().iter().rev().copied().collect();
        for id in order {
            if !region(id) {
                continue;
            }
            let instr = c.instr(id);
            if instr.opcode() == Opcode::Parameter {
                continue;
            }
            for k in 0..output_count(instr) {
                let Some(set) = self.sets.get(&(comp, id, k)).cloned() else {
                    continue;
                };
                if calls_computation(instr.opcode()) {
                    self.through_call(comp, id, k, set)?;
                    continue;
                }
                let v = OpView::new(self.module, comp, id);
                let ops = op_out_to_in(&v, k)?;
                for (j, op_set) in ops.iter().enumerate() {
                    let target = (comp, instr.operands()[j], operand_output(instr, k));
                    let composed = compose_sets(self.module, &set, op_set)?;
                    self.add(target, composed);
                }
            }
        }
        Ok(())
    }

    /// Continues a walk that reached output `k` of a call-like instruction: through its
    /// computation from the root to the parameters, then to the operands they stand for.
    fn through_call(
        &mut self,
        comp: CompId,
        id: InstrId,
        k: usize,
        set: OperandIndexing,
    ) -> Result<(), IndexingError> {
        let inner = called(self.module, comp, id)?;
        let ic = self.module.computation(inner);
        self.add((inner, ic.root(), k), set);
        self.leave_call(comp, id)
    }

    /// Walks the computation of call-like instruction `id` (of `comp`) from the maps found
    /// in it so far, then carries the maps of its parameters to the operands they stand for.
    pub(crate) fn leave_call(&mut self, comp: CompId, id: InstrId) -> Result<(), IndexingError> {
        let inner = called(self.module, comp, id)?;
        let ic = self.module.computation(inner);
        self.walk(inner, &|_| true)?;
        let instr = self.module.computation(comp).instr(id);
        for (i, &p) in ic.parameters().iter().enumerate() {
            let Some(&operand) = instr.operands().get(i) else {
                continue;
            };
            for kk in 0..output_count(ic.instr(p)) {
                if let Some(s) = self.sets.get(&(inner, p, kk)).cloned() {
                    self.add((comp, operand, kk), s);
                }
            }
        }
        Ok(())
    }
}

/// The maps from each output of computation `inner`'s root to each of its parameters:
/// `result[k].operands[i]` goes from root output `k` to parameter `i`.
pub(crate) fn through_computation(
    module: &Module,
    inner: CompId,
) -> Result<Vec<GroupedIndexing>, IndexingError> {
    let ic = module.computation(inner);
    let root = ic.root();
    let rv = OpView::new(module, inner, root);
    let n_out = output_count(rv.instr);
    let mut outputs = Vec::with_capacity(n_out);
    for k in 0..n_out {
        let mut w = Walker::new(module);
        w.add((inner, root, k), identity_set(&rv, k)?);
        w.walk(inner, &|_| true)?;
        let operands = ic
            .parameters()
            .iter()
            .map(|&p| w.sets.remove(&(inner, p, 0)).unwrap_or_default())
            .collect();
        outputs.push(GroupedIndexing { operands });
    }
    Ok(outputs)
}
