//! Where padding would enter a result: a reduce, a dot or a convolution whose local op
//! reduces a split dimension that does not split evenly (its last shards padded) and
//! whose partial results are all-reduced. Their operands' padding is masked first: with
//! the reduce's init value (each device folds it in once anyway), with zero for a dot's or
//! a convolution's contraction.

use hlo::{Computation, InstrId, Instruction, Opcode};

use crate::decision::Decision;
use crate::emit::{local_shape, Emit};
use crate::error::SpmdError;
use crate::tiling::Tiling;

/// The operands' per-device values of `instr`, with the padding of its reduced split
/// dimensions masked; `tilings[i]` is operand `i`'s tiling after resharding.
pub(crate) fn mask_reduced_padding(
    e: &mut Emit,
    comp: &Computation,
    instr: &Instruction,
    d: &Decision,
    tilings: &[Option<Tiling>],
    operands: &mut [InstrId],
) -> Result<(), SpmdError> {
    if d.partial.is_none() {
        return Ok(());
    }
    match instr.opcode() {
        Opcode::Reduce => {
            let n = instr.operands().len() / 2;
            let reduced: Vec<usize> = instr
                .dimensions()
                .unwrap_or_default()
                .iter()
                .map(|&x| x as usize)
                .collect();
            for i in 0..n {
                let fill = operands[n + i];
                mask(e, comp, instr, i, &reduced, tilings, operands, fill)?;
            }
        }
        Opcode::Dot => {
            let dn = instr.dot_dimension_numbers();
            for (i, dims) in [&dn.lhs_contracting_dims, &dn.rhs_contracting_dims]
                .into_iter()
                .enumerate()
            {
                let dims: Vec<usize> = dims.iter().map(|&x| x as usize).collect();
                let ty = comp
                    .instr(instr.operands()[i])
                    .shape()
                    .element_type()
                    .ok_or_else(|| SpmdError::invalid(instr.name(), "a dot of a tuple"))?;
                let zero = e.zero(ty)?;
                mask(e, comp, instr, i, &dims, tilings, operands, zero)?;
            }
        }
        Opcode::Convolution => {
            let dn = instr
                .conv_dimension_numbers()
                .ok_or_else(|| SpmdError::invalid(instr.name(), "no dim_labels"))?;
            let features = [
                dn.input_feature_dimension as usize,
                dn.kernel_input_feature_dimension as usize,
            ];
            for (i, dim) in features.into_iter().enumerate() {
                let ty = comp
                    .instr(instr.operands()[i])
                    .shape()
                    .element_type()
                    .ok_or_else(|| SpmdError::invalid(instr.name(), "a tuple operand"))?;
                let zero = e.zero(ty)?;
                mask(e, comp, instr, i, &[dim], tilings, operands, zero)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Masks operand `i` of `instr` along those of `dims` that are split unevenly.
#[allow(clippy::too_many_arguments)]
fn mask(
    e: &mut Emit,
    comp: &Computation,
    instr: &Instruction,
    i: usize,
    dims: &[usize],
    tilings: &[Option<Tiling>],
    operands: &mut [InstrId],
    fill: InstrId,
) -> Result<(), SpmdError> {
    let Some(t) = tilings.get(i).cloned().flatten() else {
        return Ok(());
    };
    let global = comp.instr(instr.operands()[i]).shape();
    let padded: Vec<usize> = t
        .padded_dims(global.dims())
        .into_iter()
        .filter(|d| dims.contains(d))
        .collect();
    if padded.is_empty() {
        return Ok(());
    }
    let local = local_shape(global, &t, instr.name())?;
    operands[i] = e.mask_padding(operands[i], &local, global.dims(), &t, &padded, fill)?;
    Ok(())
}
