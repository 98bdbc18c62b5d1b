//! Table lookups as canonical gathers, for targets whose fusions XLA:CPU must compile.
//!
//! `table[idx]` of a vector (a gather of one element per index, the index vector implicit)
//! is not in XLA's canonical gather form, which XLA:CPU's emitters need inside a fusion
//! ([`crate::xla_cpu`]), so it would stay a kernel of its own. The same lookup with the
//! indices as a column (`[M, 1]`, a reshape the gather's hero search never reaches) and
//! the looked-up element kept as a dimension of size 1 is canonical; a one-element
//! reduction over that dimension ([`crate::scalar_reads`]) drops it again. Exact.

use std::collections::HashMap;

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::NameGen;
use hlo::pass::PassError;
use hlo::shape::{ElementType, Shape};
use hlo::{CompId, InstrId, Instruction, Module, Opcode};

use crate::scalar_reads::{identity, reducer};

const PASS: &str = "priority-fusion";

/// Whether gather `g` of `comp` looks up one element of a vector per index of a vector.
fn is_vector_lookup(comp: &hlo::Computation, g: InstrId) -> bool {
    let i = comp.instr(g);
    let (Some(dn), Some(sizes), [x, idx]) = (
        i.gather_dimension_numbers(),
        i.gather_slice_sizes(),
        i.operands(),
    ) else {
        return false;
    };
    comp.instr(*x).shape().dims().len() == 1
        && comp.instr(*idx).shape().dims().len() == 1
        && dn.index_vector_dim == 1
        && dn.start_index_map == [0]
        && dn.collapsed_slice_dims == [0]
        && dn.offset_dims.is_empty()
        && dn.operand_batching_dims.is_empty()
        && sizes == [1]
}

/// Rewrites the vector lookups of computation `cid`; returns how many.
pub fn rewrite(
    module: &mut Module,
    cid: CompId,
    names: &mut NameGen,
    made: &mut HashMap<ElementType, CompId>,
) -> Result<usize, PassError> {
    let c = module.computation(cid);
    let found: Vec<InstrId> = c
        .instructions()
        .filter(|(id, i)| i.opcode() == Opcode::Gather && is_vector_lookup(c, *id))
        .map(|(id, _)| id)
        .collect();
    let mut done = 0;
    for g in found {
        let c = module.computation(cid);
        let gi = c.instr(g).clone();
        let Some(ty) = gi.shape().element_type() else {
            continue;
        };
        let Some((init, op)) = identity(ty) else {
            continue;
        };
        let to_apply = reducer(module, made, names, ty, op)?;
        let c = module.computation_mut(cid);
        let (x, idx) = (gi.operands()[0], gi.operands()[1]);
        let m = gi.shape().dims().first().copied().unwrap_or(0);
        let Some(ity) = c.instr(idx).shape().element_type() else {
            continue;
        };
        let err = |e| PassError::ir(PASS, e);
        let base = gi.name().to_string();
        let col = Instruction::new(
            names.fresh(&base),
            Opcode::Reshape,
            Shape::array(ity, vec![m, 1]),
            vec![idx],
        );
        let col = c.add_instruction_before(col, g).map_err(err)?;
        let mut canon = gi.clone();
        canon.users.clear();
        canon.name = names.fresh(&base);
        canon.operands = vec![x, col];
        canon.set_shape(Shape::array(ty, vec![m, 1]));
        canon.set_attr(AttrName::OffsetDims, AttrValue::IntList(vec![1]));
        canon.set_attr(AttrName::CollapsedSliceDims, AttrValue::IntList(Vec::new()));
        let canon = c.add_instruction_before(canon, g).map_err(err)?;
        let z = Instruction::constant(names.fresh(&base), Shape::scalar(ty), init);
        let z = c.add_instruction_before(z, g).map_err(err)?;
        let r = Instruction::new(
            names.fresh(&base),
            Opcode::Reduce,
            gi.shape().clone(),
            vec![canon, z],
        )
        .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![1]))
        .with_attr(AttrName::ToApply, AttrValue::Computation(to_apply));
        let r = c.add_instruction_before(r, g).map_err(err)?;
        c.replace_all_uses(g, r).map_err(err)?;
        done += 1;
    }
    Ok(done)
}
