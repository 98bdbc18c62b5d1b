//! `scatter` in its general form (variadic, update window, inserted and batching
//! dimensions, any index vector dimension), placed by
//! [`ScatterIndexing`](super::scatter_index::ScatterIndexing). The update computation runs through
//! [`CallComputation`], natively for simple reducers and plain replacement.

use super::reducer::combine;
use super::scatter_index::{ScatterDims, ScatterIndexing};
use super::util::{
    as_array, copy_elem, dim_list, dims_of, int_values, leaves, make_array, operand, result_part,
    scalar_at, wrap_results,
};
use super::{CallComputation, KernelError};
use hlo::ir::reducer::{classify as simple_reducer, returns_second_parameter};
use hlo::literal::ArrayLiteral;
use hlo::{Instruction, Literal, Module};

/// Evaluates `scatter`.
pub(crate) fn scatter(
    module: &Module,
    instr: &Instruction,
    operands: &[&Literal],
    calls: &mut dyn CallComputation,
) -> Result<Literal, KernelError> {
    const W: &str = "scatter";
    if operands.len() < 3 || operands.len().is_multiple_of(2) {
        return Err(KernelError::Invalid(format!(
            "{W}: needs N operands, indices and N updates"
        )));
    }
    let n = (operands.len() - 1) / 2;
    let inputs: Vec<&ArrayLiteral> = (0..n)
        .map(|i| operand(operands, i, W))
        .collect::<Result<_, _>>()?;
    let idx = operand(operands, n, W)?;
    let updates: Vec<&ArrayLiteral> = (n + 1..2 * n + 1)
        .map(|i| operand(operands, i, W))
        .collect::<Result<_, _>>()?;
    let dn = instr
        .scatter_dimension_numbers()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing index_vector_dim")))?;
    let comp = instr
        .to_apply()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing to_apply")))?;
    let xd = dims_of(inputs[0].shape(), W)?;
    let rank = xd.len();
    let ud = dims_of(updates[0].shape(), W)?;
    if inputs
        .iter()
        .any(|a| a.shape().dims() != inputs[0].shape().dims())
        || updates
            .iter()
            .any(|a| a.shape().dims() != updates[0].shape().dims())
    {
        return Err(KernelError::Invalid(format!(
            "{W}: operands or updates differ in shape"
        )));
    }
    let idx_dims = dims_of(idx.shape(), W)?;
    let index_vector_dim = usize::try_from(dn.index_vector_dim).map_err(|_| {
        KernelError::Invalid(format!("{W}: index_vector_dim {}", dn.index_vector_dim))
    })?;
    let dims = ScatterDims {
        update_window_dims: dim_list(
            &dn.update_window_dims,
            ud.len(),
            "scatter update_window_dims",
        )?,
        inserted_window_dims: dim_list(
            &dn.inserted_window_dims,
            rank,
            "scatter inserted_window_dims",
        )?,
        scatter_dims_to_operand_dims: dim_list(
            &dn.scatter_dims_to_operand_dims,
            rank,
            "scatter scatter_dims_to_operand_dims",
        )?,
        index_vector_dim,
        input_batching_dims: dim_list(
            &dn.input_batching_dims,
            rank,
            "scatter input_batching_dims",
        )?,
        scatter_indices_batching_dims: dim_list(
            &dn.scatter_indices_batching_dims,
            idx_dims.len(),
            "scatter scatter_indices_batching_dims",
        )?,
    };
    let placement = ScatterIndexing::new(&xd, &idx_dims, int_values(idx, W)?, &ud, &dims)?;
    let xs = super::util::strides(&xd);
    let ty = inputs[0].element_type();
    let mut outs: Vec<_> = inputs.iter().map(|a| a.data().clone()).collect();
    let reducer = if n == 1 {
        simple_reducer(module, comp)
    } else {
        None
    };
    let replace = n == 1 && returns_second_parameter(module, comp);

    placement.for_each_update(|ui, _, full| {
        let off: usize = full.iter().zip(&xs).map(|(i, s)| i * s).sum();
        if replace {
            copy_elem(&mut outs[0], off, updates[0].data(), ui)?;
        } else if let Some(r) = reducer {
            combine(r, ty, &mut outs[0], off, updates[0].data(), ui)?;
        } else {
            let mut args = Vec::with_capacity(2 * n);
            for (o, a) in outs.iter().zip(&inputs) {
                let cur = super::util::take(o, &[off]);
                args.push(make_array(&hlo::Shape::scalar(a.element_type()), cur, W)?);
            }
            args.extend(updates.iter().map(|a| scalar_at(a, ui)));
            let res = leaves(calls.call(comp, &args)?);
            if res.len() != n {
                return Err(KernelError::Invalid(format!(
                    "{W}: update computation returned {} values, expected {n}",
                    res.len()
                )));
            }
            for (o, r) in outs.iter_mut().zip(&res) {
                copy_elem(o, off, as_array(r, W)?.data(), 0)?;
            }
        }
        Ok(())
    })?;
    let results = outs
        .into_iter()
        .enumerate()
        .map(|(i, d)| make_array(result_part(instr.shape(), i, W)?, d, W))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(wrap_results(results, instr.shape().is_tuple()))
}
