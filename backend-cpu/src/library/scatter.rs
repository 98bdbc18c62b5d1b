//! `scatter` and `select-and-scatter`, sequential in update (source) order, since
//! indices may repeat and the update computation need not commute. A scatter window
//! that would reach outside the operand is skipped, as XLA does. A single-operand scatter
//! is a generated kernel (`codegen::emit::emit_scatter_in_place`); this routine runs the
//! variadic ones and any form that kernel does not take.

use std::ffi::c_void;

use hlo::attrs::WindowDim;
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
    let rank = xd.len();
    let ud = updates[0].dims.clone();
    let id = idx_arr.dims.clone();
    // Dimensions of the indices other than the index vector's, in order.
    let ibatch_dims: Vec<usize> = (0..id.len()).filter(|&d| d != *ivd).collect();
    let vec_len = if *ivd < id.len() { id[*ivd] } else { 1 };
    let uscatter: Vec<usize> = (0..ud.len()).filter(|d| !uwin.contains(d)).collect();
    let xwin: Vec<usize> = (0..rank)
        .filter(|d| !inserted.contains(d) && !ibatch.contains(d))
        .collect();
    if xwin.len() != uwin.len()
        || uscatter.len() != ibatch_dims.len()
        || to_operand.len() != vec_len
        || ibatch.len() != sbatch.len()
        || updates.iter().any(|u| u.dims != ud)
        || outs.iter().any(|o| o.dims != xd)
    {
        return Err(bad(
            "update dimensions do not match the operand and indices",
        ));
    }
    let sbatch_pos: Vec<usize> = sbatch
        .iter()
        .map(|d| {
            ibatch_dims
                .iter()
                .position(|b| b == d)
                .ok_or_else(|| bad("batching dims"))
        })
        .collect::<Result<_, _>>()?;
    let mut wsize = vec![1usize; rank];
    for (&x, &u) in xwin.iter().zip(uwin) {
        wsize[x] = ud[u];
    }
    let mut scratch = Scratch::default();
    let (mut offs, mut uoffs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut iidx = vec![0usize; id.len()];
    let mut start = vec![0i64; rank];
    let mut full = vec![0usize; rank];
    for_each_index(&ud, |u| {
        // The index vector of this update's scatter position.
        for (&b, &d) in ibatch_dims.iter().zip(&uscatter) {
            iidx[b] = u[d];
        }
        start.iter_mut().for_each(|s| *s = 0);
        for (k, &d) in to_operand.iter().enumerate() {
            if *ivd < id.len() {
                iidx[*ivd] = k;
            }
            start[d] = idx_arr.int(idx_arr.offset(&iidx));
        }
        for (&d, &p) in ibatch.iter().zip(&sbatch_pos) {
            start[d] = u[uscatter[p]] as i64;
        }
        let in_bounds = (0..rank)
            .all(|d| start[d] >= 0 && start[d].saturating_add(wsize[d] as i64) <= xd[d] as i64);
        if !in_bounds {
            return Ok(());
        }
        for d in 0..rank {
            full[d] = start[d] as usize;
        }
        for (&x, &w) in xwin.iter().zip(uwin) {
            full[x] += u[w];
        }
        offs.clear();
        offs.extend(outs.iter().map(|o| o.offset(&full)));
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
    // Operand positions of every window tap, per dimension and source coordinate.
    let mut taps: Vec<Vec<Vec<usize>>> = Vec::with_capacity(in_dims.len());
    for (d, w) in window.iter().enumerate() {
        if w.size < 0 || w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1 {
            return Err(bad("select-and-scatter window"));
        }
        let n = in_dims[d] as i64;
        let mut per_out = Vec::with_capacity(src_dims[d]);
        for o in 0..src_dims[d] as i64 {
            let mut list = Vec::new();
            for k in 0..w.size {
                let k = if w.reversal { w.size - 1 - k } else { k };
                let pos = o * w.stride + k * w.window_dilation - w.padding_low;
                if pos < 0 || pos % w.base_dilation != 0 {
                    continue;
                }
                let i = pos / w.base_dilation;
                if i < n {
                    list.push(i as usize);
                }
            }
            per_out.push(list);
        }
        taps.push(per_out);
    }
    let mut ptrs: Vec<*mut c_void> = Vec::with_capacity(3);
    let mut scratch = Scratch::default();
    let rank = in_dims.len();
    for_each_index(&src_dims, |s| {
        let lists: Vec<&Vec<usize>> = (0..rank).map(|d| &taps[d][s[d]]).collect();
        let sizes: Vec<usize> = lists.iter().map(|l| l.len()).collect();
        let mut chosen: Option<Vec<usize>> = None;
        for_each_index(&sizes, |pos| {
            let cand: Vec<usize> = (0..rank).map(|d| lists[d][pos[d]]).collect();
            let Some(cur) = &chosen else {
                chosen = Some(cand);
                return Ok(());
            };
            ptrs.clear();
            let (a, b) = (x.offset(cur), x.offset(&cand));
            ptrs.push(x.ptr(a));
            ptrs.push(x.ptr(b));
            if !select.test(&mut ptrs)? {
                chosen = Some(cand);
            }
            Ok(())
        })?;
        if let Some(c) = chosen {
            let oe = out.offset(&c);
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
