//! A GEMM streamed over its contraction ([`plan::stream::StreamAxis::Contraction`]): the
//! producer's block `b` writes rows `[b R, (b + 1) R)` along `k` of one operand (a weight
//! gradient's im2col patches) into a scratch slot, and the product of those rows with the
//! other operand's matching `R` columns (or rows) is added into an accumulator at once,
//! while they are in cache. The operand never exists whole: its buffer holds one slot per
//! run of blocks and, after the slots, one result-sized accumulator per run but the first
//! (which sums into the result). Runs go in parallel; the accumulators are added into the
//! result at the end, in slot order (so the sums' order does not depend on the threads).
#![allow(unsafe_code)]

use std::ffi::c_void;

use codegen::kir::ScalarType;
use plan::{GemmShape, Program, Thunk};
use rayon::prelude::*;

use crate::error::BackendError;
use crate::launch::{kernel_args, kernel_fn, Args, Env};
use crate::memory::Memory;

/// The element types the stream computes in.
trait Acc: faer::traits::ComplexField + Copy + Send + Sync + std::ops::Add<Output = Self> {
    /// The value one (the product's scale).
    const ONE: Self;
}
impl Acc for f32 {
    const ONE: f32 = 1.0;
}
impl Acc for f64 {
    const ONE: f64 = 1.0;
}

/// The checked geometry of one contraction stream.
struct Geometry<'a> {
    shape: &'a GemmShape,
    /// Whether the streamed operand is the lhs (stored `[k, m]`), else the rhs (`[k, n]`).
    lhs_streamed: bool,
    /// Rows along `k` one block writes.
    rows: usize,
    blocks: usize,
    slots: usize,
}

/// Runs the step (see the module docs): `producer` writes operand argument `arg`,
/// `block_elements` elements per block; `gemm` multiplies; `lhs_streamed` says which
/// operand the producer writes. An internal error for a malformed step (a producer that
/// is no kernel, an operand that is not the GEMM's in `k`-major rows, more slots than
/// blocks, scratch smaller than the slots and accumulators).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    p: &Program,
    producer: &Thunk,
    arg: usize,
    block_elements: i64,
    slots: usize,
    gemm: &Thunk,
    lhs_streamed: bool,
    env: &Env<'_>,
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    const WHAT: &str = "gemm streamed over its contraction";
    let malformed = |why: &str| BackendError::Internal(format!("malformed {WHAT}: {why}"));
    let plan::KernelIntoGemm {
        kernel,
        args,
        blocks,
        shape,
        lhs,
        rhs,
        out,
    } = plan::kernel_into_gemm(producer, gemm, WHAT)?;
    let streamed = if lhs_streamed { lhs } else { rhs };
    let (row, strides) = if lhs_streamed {
        (shape.m, (1, shape.m as isize))
    } else {
        (shape.n, (shape.n as isize, 1))
    };
    let in_rows = if lhs_streamed { shape.lhs } else { shape.rhs } == strides;
    let blocks = usize::try_from(blocks).map_err(|_| malformed("negative grid"))?;
    let block_elements = usize::try_from(block_elements).map_err(|_| malformed("block"))?;
    let rows = block_elements.checked_div(row).unwrap_or(0);
    let fits = args.get(arg) == Some(&streamed)
        && shape.batch.is_empty()
        && shape.uniform()
        && in_rows
        && row > 0
        && rows * row == block_elements
        && rows * blocks == shape.k
        && (1..=blocks).contains(&slots)
        && out != streamed;
    if !fits {
        return Err(malformed(&format!(
            "{block_elements} elements per block of {blocks}, {slots} slots, over m={} n={} k={}",
            shape.m, shape.n, shape.k
        )));
    }
    let g = Geometry {
        shape,
        lhs_streamed,
        rows,
        blocks,
        slots,
    };
    match shape.ty {
        ScalarType::F32 => run_typed::<f32>(p, kernel, args, arg, (lhs, rhs, out), &g, env, mem),
        ScalarType::F64 => run_typed::<f64>(p, kernel, args, arg, (lhs, rhs, out), &g, env, mem),
        t => Err(BackendError::Internal(format!("gemm of {t}"))),
    }
}

/// [`run`] in element type `T`.
#[allow(clippy::too_many_arguments)]
fn run_typed<T: Acc>(
    p: &Program,
    kernel: usize,
    args: &[usize],
    arg: usize,
    (lhs, rhs, out): (usize, usize, usize),
    g: &Geometry<'_>,
    env: &Env<'_>,
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    let s = g.shape;
    let (m, n) = (s.m, s.n);
    let width = std::mem::size_of::<T>();
    let f = kernel_fn(env, kernel)?;
    let bound = kernel_args(p, kernel, args, mem)?;
    let ptrs = Args(&bound);
    let block_bytes = g.rows * if g.lhs_streamed { m } else { n } * width;
    let scratch = ptrs.0[arg] as usize;
    let accumulators = scratch + g.slots * block_bytes;
    let needed = g.slots * block_bytes + (g.slots - 1) * m * n * width;
    let scratch_len = mem[p.buffers[args[arg]].allocation].bytes(usize::MAX).len();
    if scratch_len < needed {
        return Err(BackendError::Internal(format!(
            "streamed gemm scratch of {scratch_len} bytes, {needed} needed"
        )));
    }
    // The operand that is not streamed (read in place) and the result.
    let other = if g.lhs_streamed { rhs } else { lhs };
    let other_ptr = mem[p.buffers[other].allocation].ptr() as usize;
    let out_ptr = mem[p.buffers[out].allocation]
        .ptr_mut()
        .ok_or_else(|| BackendError::Internal("gemm writes a read-only buffer".into()))?
        as usize;
    let run = |slot: usize| {
        let slot_ptr = scratch + slot * block_bytes;
        // Slot 0 sums into the result, each other slot into its accumulator.
        let (acc, acc_strides) = match slot {
            0 => (out_ptr as *mut T, s.out),
            _ => (
                (accumulators + (slot - 1) * m * n * width) as *mut T,
                (n as isize, 1),
            ),
        };
        let mut bufs = ptrs.copy();
        let range = g.blocks * slot / g.slots..g.blocks * (slot + 1) / g.slots;
        for (j, b) in range.enumerate() {
            // The kernel addresses block `b`'s elements at `[b C, (b + 1) C)` of the
            // operand: its base moves down by `b C` so they land in this slot. Address
            // arithmetic only (the kernel dereferences just the slot).
            bufs[arg] = slot_ptr.wrapping_sub(b * block_bytes) as *mut c_void;
            // SAFETY: `f` has the kernel signature; every pointer but the streamed
            // operand's is the argument's allocation (as for a plain kernel thunk); the
            // plan proved (`plan::stream::block_elements`) that block `b` writes only
            // operand elements `[b C, (b + 1) C)`, which now lie in this run's slot,
            // inside the operand's allocation (`scratch_len` checked above); runs use
            // distinct slots and write distinct blocks of the other outputs.
            unsafe { f(bufs.as_ptr(), b as i64, b as i64 + 1) };
            let k0 = (b * g.rows) as isize;
            // SAFETY: the slot holds rows `[k0, k0 + R)` along `k` of the streamed
            // operand, `k`-major (its strides checked in `run`); the other operand's
            // matching `R` columns (lhs) or rows (rhs) lie inside its allocation at its
            // strides (the thunk builder checked them for the whole GEMM); the
            // accumulator is the result (slot 0) or this run's own `m x n` region after
            // the slots, written by this run alone, and aliases neither operand.
            unsafe {
                let (a, b_) = if g.lhs_streamed {
                    let rhs_at = (other_ptr as *const T).offset(k0 * s.rhs.0);
                    (
                        faer::MatRef::from_raw_parts(
                            slot_ptr as *const T,
                            m,
                            g.rows,
                            s.lhs.0,
                            s.lhs.1,
                        ),
                        faer::MatRef::from_raw_parts(rhs_at, g.rows, n, s.rhs.0, s.rhs.1),
                    )
                } else {
                    let lhs_at = (other_ptr as *const T).offset(k0 * s.lhs.1);
                    (
                        faer::MatRef::from_raw_parts(lhs_at, m, g.rows, s.lhs.0, s.lhs.1),
                        faer::MatRef::from_raw_parts(
                            slot_ptr as *const T,
                            g.rows,
                            n,
                            s.rhs.0,
                            s.rhs.1,
                        ),
                    )
                };
                let c = faer::MatMut::from_raw_parts_mut(acc, m, n, acc_strides.0, acc_strides.1);
                let accum = if j == 0 {
                    faer::Accum::Replace
                } else {
                    faer::Accum::Add
                };
                faer::linalg::matmul::matmul(c, accum, a, b_, T::ONE, faer::Par::Seq);
            }
        }
    };
    if env.threads > 1 && g.slots > 1 {
        (0..g.slots).into_par_iter().for_each(run);
    } else {
        (0..g.slots).for_each(run);
    }
    for slot in 1..g.slots {
        let acc = (accumulators + (slot - 1) * m * n * width) as *const T;
        for i in 0..m {
            for j in 0..n {
                // SAFETY: element `(i, j)` of the result at its strides lies inside its
                // allocation (the builder checked the strides); the accumulator holds
                // `m x n` elements row-major, written by its run above (every run has
                // at least one block: `slots <= blocks`), which has finished.
                unsafe {
                    let o = (out_ptr as *mut T).offset(i as isize * s.out.0 + j as isize * s.out.1);
                    *o = *o + *acc.add(i * n + j);
                }
            }
        }
    }
    Ok(())
}
