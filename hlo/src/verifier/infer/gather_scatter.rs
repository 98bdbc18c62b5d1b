//! Gather and scatter: XLA's dimension-number rules.

use super::reduce::check_scalar_reducer;
use super::{array, dim, distinct_dims, join, show, Ctx, Inferred, R};
use crate::shape::{Shape, UNBOUNDED_SIZE};

/// The batch dimensions of indices (every dimension but `index_vector_dim`) and the
/// number of indices per index vector.
fn index_layout(
    indices: &[i64],
    index_vector_dim: i64,
) -> Result<(Vec<i64>, i64), String> {
    let rank = indices.len();
    let ivd = usize::try_from(index_vector_dim)
        .ok()
        .filter(|&d| d <= rank)
        .ok_or_else(|| {
            format!("index_vector_dim {index_vector_dim} is out of range for indices of rank {rank}")
        })?;
    if ivd == rank {
        return Ok((indices.to_vec(), 1));
    }
    let batch = indices
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != ivd)
        .map(|(_, &d)| d)
        .collect();
    Ok((batch, indices[ivd]))
}

fn sorted(ds: &[i64], what: &str) -> Result<(), String> {
    if ds.windows(2).all(|w| w[0] < w[1]) {
        Ok(())
    } else {
        Err(format!("{what} {{{}}} must be sorted and distinct", join(ds)))
    }
}

pub(super) fn gather(ctx: &Ctx<'_>) -> R {
    ctx.arity(2)?;
    let a = ctx.array(0)?;
    let idx = ctx.array(1)?;
    if !idx.element_type().is_integral() {
        return Err(format!(
            "gather indices must be integers, not {}",
            idx.element_type()
        ));
    }
    let dn = ctx.need(
        ctx.instr.gather_dimension_numbers(),
        "gather dimension numbers (index_vector_dim=)",
    )?;
    let sizes = ctx.required(ctx.instr.gather_slice_sizes(), "slice_sizes=")?;
    let rank = a.dims().len();
    let (batch, n_index) = index_layout(idx.dims(), dn.index_vector_dim)?;
    if n_index != dn.start_index_map.len() as i64 {
        return Err(format!(
            "start_index_map has {} entries but the index vectors have {n_index}",
            dn.start_index_map.len()
        ));
    }
    distinct_dims(&dn.start_index_map, rank, "start_index_map entry")?;
    sorted(&dn.offset_dims, "offset_dims")?;
    sorted(&dn.collapsed_slice_dims, "collapsed_slice_dims")?;
    sorted(&dn.operand_batching_dims, "operand_batching_dims")?;
    if sizes.len() != rank {
        return Err(format!(
            "slice_sizes has {} entries for an operand of rank {rank}",
            sizes.len()
        ));
    }
    for (i, (&s, &n)) in sizes.iter().zip(a.dims()).enumerate() {
        if s < 0 || (n != UNBOUNDED_SIZE && s > n) {
            return Err(format!(
                "slice size {s} of dimension {i} is not within [0, {n}]"
            ));
        }
    }
    let mut removed = vec![false; rank];
    for &d in dn.collapsed_slice_dims.iter().chain(&dn.operand_batching_dims) {
        let u = dim(d, rank, "collapsed or batching dimension")?;
        if std::mem::replace(&mut removed[u], true) {
            return Err(format!(
                "dimension {d} is both collapsed and a batching dimension"
            ));
        }
        if sizes[u] > 1 {
            return Err(format!(
                "collapsed or batching dimension {d} has slice size {} (must be at most 1)",
                sizes[u]
            ));
        }
    }
    if dn.operand_batching_dims.len() != dn.start_indices_batching_dims.len() {
        return Err("operand_batching_dims and start_indices_batching_dims differ in length".into());
    }
    let offsets: Vec<i64> = (0..rank)
        .filter(|&i| !removed[i])
        .map(|i| sizes[i])
        .collect();
    if offsets.len() != dn.offset_dims.len() {
        return Err(format!(
            "offset_dims has {} entries but {} slice dimensions are not collapsed",
            dn.offset_dims.len(),
            offsets.len()
        ));
    }
    let out_rank = batch.len() + offsets.len();
    let mut is_offset = vec![false; out_rank];
    for &d in &dn.offset_dims {
        is_offset[dim(d, out_rank, "offset_dims entry")?] = true;
    }
    let (mut bi, mut oi) = (batch.iter(), offsets.iter());
    let out = is_offset
        .iter()
        .map(|&o| if o { oi.next() } else { bi.next() }.copied().unwrap_or(0))
        .collect();
    Ok(Inferred::Shape(array(a.element_type(), out)))
}

pub(super) fn scatter(ctx: &Ctx<'_>) -> R {
    let n = ctx.ops.len();
    if n < 3 || n % 2 == 0 {
        return Err(format!(
            "scatter takes N operands, indices and N updates, not {n} operands"
        ));
    }
    let k = (n - 1) / 2;
    let a = ctx.array(0)?;
    let idx = ctx.array(k)?;
    if !idx.element_type().is_integral() {
        return Err(format!(
            "scatter indices must be integers, not {}",
            idx.element_type()
        ));
    }
    let dn = ctx.need(
        ctx.instr.scatter_dimension_numbers(),
        "scatter dimension numbers (index_vector_dim=)",
    )?;
    let rank = a.dims().len();
    let (batch, n_index) = index_layout(idx.dims(), dn.index_vector_dim)?;
    if n_index != dn.scatter_dims_to_operand_dims.len() as i64 {
        return Err(format!(
            "scatter_dims_to_operand_dims has {} entries but the index vectors have {n_index}",
            dn.scatter_dims_to_operand_dims.len()
        ));
    }
    distinct_dims(&dn.scatter_dims_to_operand_dims, rank, "scatter_dims_to_operand_dims entry")?;
    sorted(&dn.update_window_dims, "update_window_dims")?;
    sorted(&dn.inserted_window_dims, "inserted_window_dims")?;
    sorted(&dn.input_batching_dims, "input_batching_dims")?;
    let mut removed = vec![false; rank];
    for &d in dn.inserted_window_dims.iter().chain(&dn.input_batching_dims) {
        let u = dim(d, rank, "inserted or batching dimension")?;
        if std::mem::replace(&mut removed[u], true) {
            return Err(format!(
                "dimension {d} is both inserted and a batching dimension"
            ));
        }
    }
    let window_operand_dims: Vec<usize> = (0..rank).filter(|&i| !removed[i]).collect();
    if window_operand_dims.len() != dn.update_window_dims.len() {
        return Err(format!(
            "update_window_dims has {} entries but the operand has {} window dimensions",
            dn.update_window_dims.len(),
            window_operand_dims.len()
        ));
    }
    let upd_rank = batch.len() + dn.update_window_dims.len();
    let mut is_window = vec![false; upd_rank];
    for &d in &dn.update_window_dims {
        is_window[dim(d, upd_rank, "update_window_dims entry")?] = true;
    }
    let mut scalars = Vec::with_capacity(2 * k);
    for j in 0..k {
        let o = ctx.array(j)?;
        let u = ctx.array(k + 1 + j)?;
        if o.dims() != a.dims() {
            return Err(format!(
                "scatter operand {j} {} differs from operand 0 {}",
                show(ctx.ops[j]),
                show(ctx.ops[0])
            ));
        }
        if u.element_type() != o.element_type() {
            return Err(format!(
                "scatter update {j} is {} but its operand is {}",
                u.element_type(),
                o.element_type()
            ));
        }
        if u.dims().len() != upd_rank {
            return Err(format!(
                "scatter update {j} has rank {} but the dimension numbers give {upd_rank}",
                u.dims().len()
            ));
        }
        let (mut bi, mut wi) = (batch.iter(), window_operand_dims.iter());
        for (d, &w) in is_window.iter().enumerate() {
            let size = u.dims()[d];
            if w {
                let od = *wi.next().unwrap_or(&0);
                if size > a.dims()[od] || size < 0 {
                    return Err(format!(
                        "scatter update {j} window dimension {d} (size {size}) exceeds operand dimension {od} ({})",
                        a.dims()[od]
                    ));
                }
            } else {
                let b = *bi.next().unwrap_or(&0);
                if size != b {
                    return Err(format!(
                        "scatter update {j} dimension {d} is {size} but the indices give {b}"
                    ));
                }
            }
        }
        scalars.push(Shape::scalar(o.element_type()));
    }
    let reducer = ctx.required_comp(ctx.instr.to_apply(), "to_apply=")?;
    check_scalar_reducer(ctx, reducer, &scalars, "scatter computation")?;
    if k == 1 {
        Ok(Inferred::Operand(0))
    } else {
        Ok(Inferred::Shape(Shape::tuple(
            ctx.ops[..k].iter().map(|s| super::strip_layouts(s)).collect(),
        )))
    }
}
