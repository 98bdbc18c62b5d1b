//! `scatter` in its general form (variadic, update window, inserted and batching
//! dimensions, any index vector dimension). A window whose start would put any part of
//! it outside the operand is skipped, as XLA does. The update computation runs through
//! [`CallComputation`], natively for simple reducers and plain replacement.

use super::gather::IndexLayout;
use super::reducer::combine;
use super::util::{
    as_array, copy_elem, dim_list, dims_of, int_values, leaves, make_array, next_index, operand,
    result_part, scalar_at, wrap_results,
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
    let layout = IndexLayout::new(dims_of(idx.shape(), W)?, dn.index_vector_dim, W)?;
    let to_operand = dim_list(
        &dn.scatter_dims_to_operand_dims,
        rank,
        "scatter scatter_dims_to_operand_dims",
    )?;
    if to_operand.len() != layout.vector_len() {
        return Err(KernelError::Invalid(format!(
            "{W}: scatter_dims_to_operand_dims length differs from the index vector"
        )));
    }
    let inserted = dim_list(
        &dn.inserted_window_dims,
        rank,
        "scatter inserted_window_dims",
    )?;
    let ibatch = dim_list(&dn.input_batching_dims, rank, "scatter input_batching_dims")?;
    let sbatch = dim_list(
        &dn.scatter_indices_batching_dims,
        layout.dims.len(),
        "scatter scatter_indices_batching_dims",
    )?;
    let uwin = dim_list(
        &dn.update_window_dims,
        ud.len(),
        "scatter update_window_dims",
    )?;
    let uscatter: Vec<usize> = (0..ud.len()).filter(|d| !uwin.contains(d)).collect();
    let xwin: Vec<usize> = (0..rank)
        .filter(|d| !inserted.contains(d) && !ibatch.contains(d))
        .collect();
    if xwin.len() != uwin.len() || uscatter.len() != layout.batch_dims.len() {
        return Err(KernelError::Invalid(format!(
            "{W}: update dimensions do not match the operand and indices"
        )));
    }
    let sbatch_pos = layout.batching_positions(&sbatch, W)?;
    // Window size per operand dimension.
    let mut wsize = vec![1usize; rank];
    for (&x, &u) in xwin.iter().zip(&uwin) {
        wsize[x] = ud[u];
    }
    let shapes_agree = uscatter
        .iter()
        .zip(&layout.batch_dims)
        .all(|(&u, &b)| ud[u] == layout.dims[b])
        && xwin.iter().all(|&x| wsize[x] <= xd[x])
        && ibatch.len() == sbatch.len()
        && ibatch
            .iter()
            .zip(&sbatch)
            .all(|(&x, &i)| xd[x] == layout.dims[i]);
    if !shapes_agree {
        return Err(KernelError::Invalid(format!(
            "{W}: update shape {} does not match the indices and operand",
            updates[0].shape()
        )));
    }
    let indices = int_values(idx, W)?;
    let xs = super::util::strides(&xd);
    let ty = inputs[0].element_type();
    let mut outs: Vec<_> = inputs.iter().map(|a| a.data().clone()).collect();
    let reducer = if n == 1 {
        simple_reducer(module, comp)
    } else {
        None
    };
    let replace = n == 1 && returns_second_parameter(module, comp);

    let total: usize = ud.iter().product();
    let mut u = vec![0usize; ud.len()];
    let mut batch = vec![0usize; uscatter.len()];
    for ui in 0..total {
        for (b, &d) in batch.iter_mut().zip(&uscatter) {
            *b = u[d];
        }
        let start = layout.window_start(&indices, &batch, &to_operand, &ibatch, &sbatch_pos, rank);
        let in_bounds = (0..rank)
            .all(|d| start[d] >= 0 && start[d].saturating_add(wsize[d] as i64) <= xd[d] as i64);
        if in_bounds {
            let mut off = 0usize;
            for d in 0..rank {
                off += start[d] as usize * xs[d];
            }
            for (&x, &ud_) in xwin.iter().zip(&uwin) {
                off += u[ud_] * xs[x];
            }
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
        }
        next_index(&mut u, &ud);
    }
    let results = outs
        .into_iter()
        .enumerate()
        .map(|(i, d)| make_array(result_part(instr.shape(), i, W)?, d, W))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(wrap_results(results, instr.shape().is_tuple()))
}
