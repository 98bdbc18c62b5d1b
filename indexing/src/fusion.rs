//! Fusions: the composition of the ops' maps from the fusion's outputs to every parameter
//! (grouped per operand, deduplicated, simplified after every step); the same for a
//! producer and consumer that are not fused yet; and epilogue input-to-output maps from a
//! hero instruction to the roots.

use std::collections::HashMap;

use hlo::{CompId, InstrId, Module, Opcode};

use crate::fold::fold_and_normalize;
use crate::ops::util::OpView;
use crate::ops::{calls_through, op_in_to_out, op_out_to_in, operand_output};
use crate::{GroupedIndexing, IndexedMap, IndexingError, OperandIndexing};

/// Output-to-input maps of a fusion: `outputs[k].operands[i]` holds the maps from the
/// fusion's output `k` to its operand `i`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FusionIndexing {
    /// One entry per output of the fusion.
    pub outputs: Vec<GroupedIndexing>,
}

/// Maps from one tensor to the values of a would-be fusion: one entry per instruction (and
/// output of it), in traversal order from the root.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ValueMaps {
    /// `(instruction name, output index, maps)`.
    pub values: Vec<(String, usize, OperandIndexing)>,
}

type Key = (CompId, InstrId, usize);

/// Composes every map of `a` with every map of `b`, normalized.
fn compose_sets(
    module: &Module,
    a: &OperandIndexing,
    b: &OperandIndexing,
) -> Result<OperandIndexing, IndexingError> {
    let (OperandIndexing::Maps(am), OperandIndexing::Maps(bm)) = (a, b) else {
        let reason = match (a, b) {
            (_, OperandIndexing::Undefined(r)) | (OperandIndexing::Undefined(r), _) => r.clone(),
            _ => String::new(),
        };
        return Ok(OperandIndexing::Undefined(reason));
    };
    let mut out = OperandIndexing::none();
    for x in am.values() {
        for y in bm.values() {
            let mut z = x.compose(y)?;
            fold_and_normalize(module, &mut z)?;
            out.insert(z);
        }
    }
    Ok(out)
}

fn outputs_of(instr: &hlo::Instruction) -> usize {
    if instr.shape().is_tuple() {
        instr.shape().tuple_shapes().len()
    } else {
        1
    }
}

/// The computation a fusion, call or async op calls.
fn called(module: &Module, comp: CompId, id: InstrId) -> Result<CompId, IndexingError> {
    let instr = module.computation(comp).instr(id);
    instr
        .calls()
        .or_else(|| instr.to_apply())
        .filter(|c| module.get_computation(*c).is_some())
        .ok_or_else(|| IndexingError::NotAFusion(instr.name().to_string()))
}

struct Walker<'m> {
    module: &'m Module,
    sets: HashMap<Key, OperandIndexing>,
    order: Vec<Key>,
}

impl<'m> Walker<'m> {
    fn new(module: &'m Module) -> Walker<'m> {
        Walker {
            module,
            sets: HashMap::new(),
            order: Vec::new(),
        }
    }

    fn add(&mut self, key: Key, set: OperandIndexing) {
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
    fn walk(
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
            for k in 0..outputs_of(instr) {
                let Some(set) = self.sets.get(&(comp, id, k)).cloned() else {
                    continue;
                };
                if calls_through(instr.opcode()) {
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
        self.walk(inner, &|_| true)?;
        let instr = self.module.computation(comp).instr(id);
        for (i, &p) in ic.parameters().iter().enumerate() {
            let Some(&operand) = instr.operands().get(i) else {
                continue;
            };
            for kk in 0..outputs_of(ic.instr(p)) {
                if let Some(s) = self.sets.get(&(inner, p, kk)).cloned() {
                    self.add((comp, operand, kk), s);
                }
            }
        }
        Ok(())
    }
}

/// Identity maps on output `k` of an instruction.
fn identity_set(v: &OpView<'_>, k: usize) -> Result<OperandIndexing, IndexingError> {
    Ok(OperandIndexing::single(IndexedMap::plain(
        affine::IndexingMap::identity(v.out_dims(k)?),
    )))
}

/// The `async-start` of an async chain ending at (or passing through) `id`.
fn async_start(module: &Module, comp: CompId, mut id: InstrId) -> InstrId {
    let c = module.computation(comp);
    for _ in 0..c.instruction_count() {
        let i = c.instr(id);
        if i.opcode() == Opcode::AsyncStart {
            break;
        }
        match i.operand(0) {
            Some(op) => id = op,
            None => break,
        }
    }
    id
}

/// Output-to-input maps of a fusion (or call) instruction `fusion` of computation `comp`:
/// the composition of its ops' maps from each output to each parameter.
pub fn analyze(
    module: &Module,
    comp: CompId,
    fusion: InstrId,
) -> Result<FusionIndexing, IndexingError> {
    let instr = module.computation(comp).instr(fusion);
    if !matches!(instr.opcode(), Opcode::Fusion | Opcode::Call) {
        return Err(IndexingError::NotAFusion(instr.name().to_string()));
    }
    analyze_instruction(module, comp, fusion)
}

/// [`analyze`] for fusions, calls and async ops (through the wrapped computation; the
/// operands are those of the chain's `async-start`).
pub(crate) fn analyze_instruction(
    module: &Module,
    comp: CompId,
    id: InstrId,
) -> Result<FusionIndexing, IndexingError> {
    let start = if module.computation(comp).instr(id).opcode().is_async() {
        async_start(module, comp, id)
    } else {
        id
    };
    let inner = called(module, comp, start)?;
    let ic = module.computation(inner);
    let root = ic.root();
    let rv = OpView::new(module, inner, root);
    let n_out = outputs_of(rv.instr);
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
    Ok(FusionIndexing { outputs })
}

/// The maps from the consumer's output `k` to every instruction of the would-be fusion of
/// `producer` into `consumer` (both in `comp`; fusions are looked through) and to every
/// operand it reads. One [`ValueMaps`] per output of the consumer.
pub fn producer_consumer(
    module: &Module,
    comp: CompId,
    producer: InstrId,
    consumer: InstrId,
) -> Result<Vec<ValueMaps>, IndexingError> {
    let c = module.computation(comp);
    if !c.instr(consumer).operands().contains(&producer) {
        return Err(IndexingError::NotProducerConsumer {
            producer: c.instr(producer).name().to_string(),
            consumer: c.instr(consumer).name().to_string(),
        });
    }
    let cv = OpView::new(module, comp, consumer);
    let mut out = Vec::new();
    for k in 0..outputs_of(cv.instr) {
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

/// Epilogue input-to-output maps: from the output of `hero` (an instruction of `comp`) to
/// each output of `comp`'s root, composing input-to-output maps forward. Entry `k` holds
/// the maps to root output `k` (empty when the hero does not reach it).
pub fn epilogue_indexing(
    module: &Module,
    comp: CompId,
    hero: InstrId,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let c = module.computation(comp);
    let mut sets: HashMap<(InstrId, usize), OperandIndexing> = HashMap::new();
    let hv = OpView::new(module, comp, hero);
    for k in 0..outputs_of(hv.instr) {
        sets.insert((hero, k), identity_set(&hv, k)?);
    }
    let order = c.def_before_use_order();
    let start = order.iter().position(|&i| i == hero).unwrap_or(order.len());
    for &id in &order[start + 1..] {
        let instr = c.instr(id);
        let v = OpView::new(module, comp, id);
        for (j, &op) in instr.operands().iter().enumerate() {
            let Some(src) = sets.get(&(op, operand_output(instr, 0))).cloned() else {
                continue;
            };
            let step = if calls_through(instr.opcode()) {
                vec![
                    OperandIndexing::undefined("input-to-output through a nested fusion");
                    outputs_of(instr)
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
    let root = c.root();
    let ri = c.instr(root);
    Ok((0..outputs_of(ri))
        .map(|k| sets.remove(&(root, k)).unwrap_or_default())
        .collect())
}

/// Input-to-output maps of a fusion: from its operand `operand` to each output, by the
/// epilogue analysis from the matching parameter.
pub(crate) fn fusion_input_to_output(
    module: &Module,
    comp: CompId,
    id: InstrId,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let inner = called(module, comp, id)?;
    let ic = module.computation(inner);
    let p = ic
        .parameter(operand)
        .ok_or_else(|| IndexingError::NoSuchOperand {
            instr: module.computation(comp).instr(id).name().to_string(),
            count: ic.parameters().len(),
            operand,
        })?;
    epilogue_indexing(module, inner, p)
}
