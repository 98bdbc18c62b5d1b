//! Removes a scatter's batching dimensions by making them explicit indices, so the
//! expander only meets unbatched scatters. Operand batching dimension `b` paired with
//! indices batching dimension `j` reads, for an update at batch position `p`, the operand
//! at `b = p[j]`: exactly what an extra index component holding `iota(j)` does once `b` is
//! an inserted window dimension. The indices gain one component per batching pair (an
//! `iota` concatenated along the index vector dimension, made explicit first if implicit).

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction};
use hlo::shape::Shape;
use hlo::Opcode;

/// Rewrites scatter `id` of `comp` to an equivalent one without batching dimensions.
/// Returns false (and changes nothing) when it has none or its attributes are malformed.
pub(super) fn unbatch(comp: &mut Computation, id: InstrId, names: &mut NameGen) -> bool {
    let s = comp.instr(id);
    let Some(dn) = s.scatter_dimension_numbers() else {
        return false;
    };
    if dn.input_batching_dims.is_empty()
        || dn.input_batching_dims.len() != dn.scatter_indices_batching_dims.len()
        || s.operands.len() < 3
    {
        return false;
    }
    let n = (s.operands.len() - 1) / 2;
    let indices = s.operands[n];
    let ishape = comp.instr(indices).shape.clone();
    let (Some(ity), false) = (ishape.element_type(), ishape.is_tuple()) else {
        return false;
    };
    let rank = ishape.rank();
    let Ok(ivd) = usize::try_from(dn.index_vector_dim) else {
        return false;
    };
    if ivd > rank
        || dn
            .scatter_indices_batching_dims
            .iter()
            .any(|&j| usize::try_from(j).map_or(true, |j| j >= rank || j == ivd))
    {
        return false;
    }
    // Make the index vector dimension explicit: [.., K] (K = 1 when implicit).
    let mut idims = ishape.dims().to_vec();
    let mut indices = indices;
    if ivd == rank {
        idims.push(1);
        let reshaped = Instruction::new(
            names.fresh("reshape"),
            Opcode::Reshape,
            Shape::array(ity, idims.clone()),
            vec![indices],
        );
        indices = edit::add(comp, reshaped);
    }
    let mut parts = vec![indices];
    for &j in &dn.scatter_indices_batching_dims {
        let mut dims = idims.clone();
        dims[ivd] = 1;
        let mut iota = Instruction::new(
            names.fresh("iota"),
            Opcode::Iota,
            Shape::array(ity, dims),
            Vec::new(),
        );
        iota.set_attr(AttrName::IotaDimension, AttrValue::Int(j));
        parts.push(edit::add(comp, iota));
    }
    let mut cdims = idims.clone();
    cdims[ivd] += dn.scatter_indices_batching_dims.len() as i64;
    let mut concat = Instruction::new(
        names.fresh("concatenate"),
        Opcode::Concatenate,
        Shape::array(ity, cdims),
        parts,
    );
    concat.set_attr(AttrName::Dimensions, AttrValue::IntList(vec![ivd as i64]));
    let new_indices = edit::add(comp, concat);

    let mut to_operand = dn.scatter_dims_to_operand_dims.clone();
    to_operand.extend(&dn.input_batching_dims);
    let mut inserted = dn.inserted_window_dims.clone();
    inserted.extend(&dn.input_batching_dims);
    inserted.sort_unstable();
    let s = comp.instr_mut(id);
    s.operands[n] = new_indices;
    s.set_attr(
        AttrName::ScatterDimsToOperandDims,
        AttrValue::IntList(to_operand),
    );
    s.set_attr(AttrName::InsertedWindowDims, AttrValue::IntList(inserted));
    s.set_attr(AttrName::IndexVectorDim, AttrValue::Int(ivd as i64));
    s.attrs.retain(|a| {
        a.name != AttrName::InputBatchingDims && a.name != AttrName::ScatterIndicesBatchingDims
    });
    comp.recompute_users();
    edit::repair_order(comp);
    true
}
