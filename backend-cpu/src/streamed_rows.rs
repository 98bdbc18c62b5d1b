//! A GEMM streamed over its result rows ([`plan::stream::StreamAxis::Rows`]): the
//! producer's block `b` writes lhs rows `[b R, (b + 1) R)` (im2col patches, say). A run of
//! consecutive blocks owns one scratch slot of `group` blocks; it writes `group` blocks
//! into the slot and multiplies their rows at once, while they are in cache, so the lhs
//! never exists whole. The planner picks `group` (`plan`'s `stream_group`) so that a
//! GEMM call multiplies a few hundred rows: a call per 16-row producer block rereads the
//! rhs and runs the micro-kernel on a sliver, 1.5x slower than the whole matrix.
#![allow(unsafe_code)]

use std::ffi::c_void;

use codegen::kir::ScalarType;
use plan::{GemmShape, Program, Thunk};
use rayon::prelude::*;

use crate::error::BackendError;
use crate::gemm::gemm_one;
use crate::launch::{kernel_args, kernel_fn, Args, Env};
use crate::memory::Memory;

/// The step's layout: a [`Thunk::StreamedGemm`] over rows, as the planner wrote it.
pub(crate) struct RowStream<'a> {
    /// The producer, a kernel thunk.
    pub(crate) producer: &'a Thunk,
    /// The producer's argument that is the lhs.
    pub(crate) lhs_arg: usize,
    /// Lhs elements one producer block writes (whole rows).
    pub(crate) block_elements: i64,
    /// Scratch slots (runs in parallel).
    pub(crate) slots: usize,
    /// Producer blocks per GEMM call.
    pub(crate) group: i64,
    /// The GEMM.
    pub(crate) gemm: &'a Thunk,
}

/// Runs the step (see the module docs): the producer's blocks split into `slots` runs of
/// consecutive blocks, in parallel; each run writes up to `group` blocks at a time into
/// its slot and multiplies their rows. An internal error for a malformed step (see
/// [`plan::streamed_parts`]), a group below 1, or scratch smaller than the slots.
pub(crate) fn run(
    p: &Program,
    s: &RowStream<'_>,
    env: &Env<'_>,
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    let plan::StreamedParts {
        kernel,
        args,
        blocks,
        shape,
        rhs,
        out,
        block_rows: rows,
    } = plan::streamed_parts(s.producer, s.block_elements, s.gemm)?;
    let element_bytes = match shape.ty {
        ScalarType::F32 => 4,
        ScalarType::F64 => 8,
        t => return Err(BackendError::Internal(format!("gemm of {t}"))),
    };
    if s.group < 1 || s.slots < 1 {
        return Err(BackendError::Internal(format!(
            "malformed streamed gemm: {} blocks per call, {} slots",
            s.group, s.slots
        )));
    }
    let f = kernel_fn(env, kernel)?;
    let bound = kernel_args(p, kernel, args, mem)?;
    let ptrs = Args(&bound);
    let lhs_arg = s.lhs_arg;
    let group = s.group as usize;
    let block_bytes = s.block_elements as usize * element_bytes;
    let slot_bytes = block_bytes * group;
    let scratch = *ptrs
        .0
        .get(lhs_arg)
        .ok_or_else(|| BackendError::Internal("streamed gemm lhs argument".into()))?
        as usize;
    let scratch_len = mem[p.buffers[args[lhs_arg]].allocation]
        .bytes(usize::MAX)
        .len();
    if scratch_len < s.slots * slot_bytes {
        return Err(BackendError::Internal(
            "streamed gemm scratch too small".into(),
        ));
    }
    let rhs_ptr = mem[p.buffers[rhs].allocation].ptr() as usize;
    let out_ptr = mem[p.buffers[out].allocation]
        .ptr_mut()
        .ok_or_else(|| BackendError::Internal("gemm writes a read-only buffer".into()))?
        as usize;
    let (blocks, slots) = (blocks as usize, s.slots);
    let run = |slot: usize| {
        let slot_ptr = scratch + slot * slot_bytes;
        let mut bufs = ptrs.copy();
        let (first, end) = (blocks * slot / slots, blocks * (slot + 1) / slots);
        let mut b = first;
        while b < end {
            let last = (b + group).min(end);
            // The kernel addresses block `j`'s elements at `[j C, (j + 1) C)` of the lhs:
            // its base moves down by `b C` so that blocks `b..last` land in this slot.
            // Address arithmetic only (the kernel dereferences just the slot).
            bufs[lhs_arg] = slot_ptr.wrapping_sub(b * block_bytes) as *mut c_void;
            // SAFETY: `f` has the kernel signature; every pointer but the lhs is the
            // argument's allocation (as for a plain kernel thunk); the codegen proved
            // (`stream::block_elements`) that block `j` writes only lhs elements
            // `[j C, (j + 1) C)`, which for `j` in `b..last` (at most `group` blocks) lie
            // in this run's slot, inside the lhs allocation (`scratch_len` checked
            // above); runs use distinct slots and write distinct blocks of the other
            // outputs.
            unsafe { f(bufs.as_ptr(), b as i64, last as i64) };
            let m = (last - b) * rows;
            let rows_out = (out_ptr as isize
                + (b * rows) as isize * shape.out.0 * element_bytes as isize)
                as usize;
            let call = GemmShape {
                m,
                batch: Vec::new(),
                ..shape.clone()
            };
            // SAFETY: the `m` x `k` lhs rows of blocks `b..last` are in the slot,
            // row-major (the GEMM's lhs strides are `(k, 1)`, checked by the codegen);
            // rhs is the GEMM's own operand; result rows `[b rows, last rows)` lie
            // inside the result and no other run writes them.
            unsafe { multiply(&call, (slot_ptr, rhs_ptr, rows_out)) };
            b = last;
        }
    };
    if env.threads > 1 {
        (0..slots).into_par_iter().for_each(run);
    } else {
        (0..slots).for_each(run);
    }
    Ok(())
}

/// The whole of GEMM `s` (`f32` or `f64`) on this thread.
///
/// # Safety
/// As [`gemm_one`]'s for all of `s`'s rows and columns.
unsafe fn multiply(s: &GemmShape, (lhs, rhs, out): (usize, usize, usize)) {
    // SAFETY: the caller's contract.
    unsafe {
        match s.ty {
            ScalarType::F32 => gemm_one::<f32>(
                s,
                0,
                (lhs as *const f32, rhs as *const f32, out as *mut f32),
                (0, s.m),
                (0, s.n),
                faer::Par::Seq,
            ),
            _ => gemm_one::<f64>(
                s,
                0,
                (lhs as *const f64, rhs as *const f64, out as *mut f64),
                (0, s.m),
                (0, s.n),
                faer::Par::Seq,
            ),
        }
    }
}
