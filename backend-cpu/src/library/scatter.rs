//! `scatter` and `select-and-scatter` on the library's buffers, sequential in update
//! (source) order, since indices may repeat and the update computation need not commute.
//! Where each element goes is the evaluator's: [`ScatterIndexing`] (index vectors, window
//! and batching dimensions, skipping a window that would reach outside the operand) and
//! [`WindowTaps`] (the window's positions and select's choice); this routine applies the
//! compiled update computation there. A single-operand scatter
//! is a generated kernel (`codegen::emit::emit_scatter_in_place`); this routine runs the
//! variadic ones and any form that kernel does not take.

use std::ffi::c_void;

use hlo::attrs::WindowDim;
use hlo_eval::numeric::{ScatterDims, ScatterIndexing, WindowTaps};
use plan::LibraryCall;

use super::arrays::{for_each_index, Arr, ScalarFn};
use crate::error::BackendError;

fn bad(what: &str) -> BackendError {
    BackendError::Internal(format!("scatter: {what}"))
}

/// Copies `src` into `dst` element by element (logical order; layouts may differ).
fn copy_logical(dst: &mut Arr, src: &Arr) -> Result<(), BackendError> {
    if dst.dims != src.dims || dst.ty != src.ty {
        return Err(bad("result and operand differ"));
    }
    let dims = src.dims.clone();
    for_each_index(&dims, |idx| {
        let (o, i) = (dst.offset(idx), src.offset(idx));
        dst.copy_elem(o, src, i);
        Ok(())
    })
}

/// Scratch space of [`combine`], reused across the elements of one call (an allocation
/// per element cost a small scatter most of its time).
#[derive(Default)]
struct Scratch {
    ptrs: Vec<*mut c_void>,
    /// One 16-byte slot per result: room for every element type (c128 included).
    res: Vec<[u64; 2]>,
}

/// Combines `n` updates into the results at `offs` (one per result) through `f`.
fn combine(
    f: ScalarFn,
    outs: &mut [Arr],
    offs: &[usize],
    updates: &mut [Arr],
    uoffs: &[usize],
    scratch: &mut Scratch,
) -> Result<(), BackendError> {
    let n = outs.len();
    let Scratch { ptrs, res } = scratch;
    res.clear();
    res.resize(n, [0u64; 2]);
    ptrs.clear();
    for (o, &e) in outs.iter_mut().zip(offs) {
        ptrs.push(o.ptr(e));
    }
    for (u, &e) in updates.iter_mut().zip(uoffs) {
        ptrs.push(u.ptr(e));
    }
    for r in res.iter_mut() {
        ptrs.push(r.as_mut_ptr().cast());
    }
    f.call(ptrs)?;
    for ((o, &e), r) in outs.iter_mut().zip(offs).zip(res.iter()) {
        let w = o.width;
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&r[0].to_ne_bytes());
        bytes[8..].copy_from_slice(&r[1].to_ne_bytes());
        o.bytes_mut()[e * w..(e + 1) * w].copy_from_slice(&bytes[..w]);
    }
    Ok(())
}

/// Runs a scatter: inputs are `n` operands, the indices and `n` updates.
pub(crate) fn scatter(
    call: &LibraryCall,
    ins: &mut [Arr],
    outs: &mut [Arr],
    f: ScalarFn,
) -> Result<(), BackendError> {
    let LibraryCall::Scatter {
        update_window_dims: uwin,
        inserted_window_dims: inserted,
        scatter_dims_to_operand_dims: to_operand,
        index_vector_dim: ivd,
        input_batching_dims: ibatch,
        scatter_indices_batching_dims: sbatch,
        ..
    } = call
    else {
        return Err(bad("not a scatter"));
    };
    let n = outs.len();
    if ins.len() != 2 * n + 1 || n == 0 {
        return Err(bad("operand count"));
    }
    for k in 0..n {
        copy_logical(&mut outs[k], &ins[k])?;
    }
    let (_, rest) = ins.split_at_mut(n);
    let (idx_arr, updates) = rest.split_first_mut().ok_or_else(|| bad("no indices"))?;
    let xd = outs[0].dims.clone();
    let ud = updates[0].dims.clone();
    if updates.iter().any(|u| u.dims != ud) || outs.iter().any(|o| o.dims != xd) {
        return Err(bad("operands or updates differ in shape"));
    }
    // The start indices in row-major order, as the evaluator's placement reads them.
    let mut indices = Vec::with_capacity(idx_arr.count());
    for_each_index(&idx_arr.dims, |i| {
        indices.push(idx_arr.int(idx_arr.offset(i)));
        Ok(())
    })?;
    let dims = ScatterDims {
        update_window_dims: uwin.clone(),
        inserted_window_dims: inserted.clone(),
        scatter_dims_to_operand_dims: to_operand.clone(),
        index_vector_dim: *ivd,
        input_batching_dims: ibatch.clone(),
        scatter_indices_batching_dims: sbatch.clone(),
    };
    let placement = ScatterIndexing::new(&xd, &idx_arr.dims, indices, &ud, &dims)
        .map_err(|e| bad(&e.to_string()))?;
    let mut scratch = Scratch::default();
    let (mut offs, mut uoffs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    placement.for_each_update(|_, u, full| {
        offs.clear();
        offs.extend(outs.iter().map(|o| o.offset(full)));
        uoffs.clear();
        uoffs.extend(updates.iter().map(|a| a.offset(u)));
        combine(f, outs, &offs, updates, &uoffs, &mut scratch)
    })
}

/// Runs a select-and-scatter: inputs are the operand, the source and the init value.
pub(crate) fn select_and_scatter(
    window: &[WindowDim],
    ins: &mut [Arr],
    outs: &mut [Arr],
    select: ScalarFn,
    sc: ScalarFn,
) -> Result<(), BackendError> {
    let [x, source, init] = ins else {
        return Err(bad("select-and-scatter operand count"));
    };
    let [out] = outs else {
        return Err(bad("select-and-scatter result count"));
    };
    let in_dims = x.dims.clone();
    let src_dims = source.dims.clone();
    if window.len() != in_dims.len() || src_dims.len() != in_dims.len() || out.dims != in_dims {
        return Err(bad("select-and-scatter window rank"));
    }
    let dims = in_dims.clone();
    for_each_index(&dims, |idx| {
        let o = out.offset(idx);
        out.copy_elem(o, init, 0);
        Ok(())
    })?;
    let taps = WindowTaps::new(window, &in_dims, &src_dims, "select-and-scatter")
        .map_err(|e| bad(&e.to_string()))?;
    let mut ptrs: Vec<*mut c_void> = Vec::with_capacity(3);
    let mut scratch = Scratch::default();
    let mut chosen = Vec::with_capacity(in_dims.len());
    for_each_index(&src_dims, |s| {
        let found = taps.select(s, &mut chosen, |cur, cand| {
            ptrs.clear();
            let (a, b) = (x.offset(cur), x.offset(cand));
            ptrs.push(x.ptr(a));
            ptrs.push(x.ptr(b));
            select.test(&mut ptrs)
        })?;
        if found {
            let oe = out.offset(&chosen);
            let se = source.offset(s);
            combine(
                sc,
                std::slice::from_mut(out),
                &[oe],
                std::slice::from_mut(source),
                &[se],
                &mut scratch,
            )?;
        }
        Ok(())
    })
}
