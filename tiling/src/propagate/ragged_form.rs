//! Which form of ragged dot group steps tile (`ragged_groups.rs`), and where its
//! dimensions are: kept apart from the tiling space, which asks it for the group dimension
//! the non-contracting form adds in steps.

use hlo::{AttrName, InstrRef, Opcode};

fn ints(instr: &hlo::Instruction, name: AttrName) -> Vec<usize> {
    match instr.attr(&name) {
        Some(hlo::AttrValue::IntList(v)) => {
            v.iter().filter_map(|&d| usize::try_from(d).ok()).collect()
        }
        _ => Vec::new(),
    }
}

/// The forms tiled in group steps, with where their dimensions are.
pub(crate) enum Form {
    /// The lhs ragged dimension (free), the rhs group dimension, the group count and the
    /// lhs's extent along the ragged dimension.
    NonContracting {
        ragged: usize,
        group: usize,
        count: i64,
        rows: i64,
    },
    /// The lhs and rhs dimensions of the ragged contracting dimension and its extent.
    Contracting { lhs: usize, rhs: usize, extent: i64 },
}

pub(crate) fn form(instr: &InstrRef<'_>) -> Option<Form> {
    let i = instr.instr();
    if i.opcode() != Opcode::RaggedDot {
        return None;
    }
    let comp = instr.computation();
    let dims = |j: usize| -> Option<Vec<i64>> {
        Some(comp.instr(*i.operands().get(j)?).shape().dims().to_vec())
    };
    let (lhs, rhs, sizes) = (dims(0)?, dims(1)?, dims(2)?);
    let dn = i.dot_dimension_numbers();
    let ragged = ints(i, AttrName::LhsRaggedDims);
    let group = ints(i, AttrName::RhsGroupDims);
    let &[r] = ragged.as_slice() else {
        return None;
    };
    let at = |v: &[i64], d: usize| v.iter().position(|&x| usize::try_from(x).ok() == Some(d));
    if at(&dn.lhs_batch_dims, r).is_some() || sizes.len() != 1 {
        return None;
    }
    match (group.as_slice(), at(&dn.lhs_contracting_dims, r)) {
        (&[g], None) => {
            let count = *rhs.get(g)?;
            (sizes[0] == count).then_some(Form::NonContracting {
                ragged: r,
                group: g,
                count,
                rows: *lhs.get(r)?,
            })
        }
        (&[], Some(c)) => {
            let rc = usize::try_from(*dn.rhs_contracting_dims.get(c)?).ok()?;
            Some(Form::Contracting {
                lhs: r,
                rhs: rc,
                extent: *lhs.get(r)?,
            })
        }
        _ => None,
    }
}

/// The dimension a ragged dot's non-contracting form adds in group steps, ahead of its
/// contracting ones: `(G, positions)`, read by the rhs group dimension and the group sizes
/// (the operand positions of `space::own_dims`).
pub(crate) fn group_dim(instr: &InstrRef<'_>) -> Option<(i64, Vec<Option<usize>>)> {
    match form(instr)? {
        Form::NonContracting { group, count, .. } => {
            Some((count, vec![None, Some(group), Some(0)]))
        }
        Form::Contracting { .. } => None,
    }
}
