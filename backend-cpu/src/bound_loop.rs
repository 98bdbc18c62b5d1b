//! A `while` loop bound once per execution: when its condition and body are only small
//! kernels, GEMMs and copies, every step's entry point and argument pointers are resolved before
//! the first iteration, so an iteration is the kernel calls and the state copies and
//! nothing else (no argument vectors, no thunk dispatch, no overlap checks). A loop of a
//! few tiny kernels (a scan, a Collatz count) spends most of its time in that overhead
//! otherwise. Anything else (a nested loop, a conditional, a library call, a kernel large
//! enough to split across threads, state copies that overlap) keeps the general path.
#![allow(unsafe_code)]

use std::ffi::c_void;

use plan::{GemmShape, Program, Thunk};

use crate::error::BackendError;
use crate::gemm::gemm;
use crate::launch::{copies_overlap, kernel_args, kernel_fn, runs_on_one_thread, Env};
use crate::loaded::KernelFn;
use crate::memory::Memory;

/// One bound step of the condition or the body.
enum Step {
    /// A kernel over its whole grid on this thread.
    Kernel {
        f: KernelFn,
        args: Vec<*mut c_void>,
        blocks: i64,
    },
    /// A library GEMM (`k > 0`) on its operands' allocations.
    Gemm {
        shape: GemmShape,
        ptrs: (*mut c_void, *mut c_void, *mut c_void),
    },
    /// `n` bytes from `src` to `dst` (distinct allocations).
    Copy {
        src: *const u8,
        dst: *mut u8,
        n: usize,
    },
}

/// A while loop with its steps bound to this execution's allocations.
pub(crate) struct BoundLoop {
    cond: Vec<Step>,
    pred: *const u8,
    body: Vec<Step>,
    /// Body results into the loop state, in order; no copy reads what an earlier one wrote
    /// (state that rotates goes through `_staging`).
    state: Vec<Step>,
    /// Where rotating state is staged: every result is copied here before any is copied
    /// into the state. The copies point into it; it lives as long as they do.
    _staging: Vec<u64>,
}

/// The parts of a [`Thunk::While`] that binding needs.
pub(crate) struct LoopParts<'t> {
    pub cond: &'t [Thunk],
    pub cond_result: usize,
    pub body: &'t [Thunk],
    pub body_results: &'t [usize],
    pub state: &'t [usize],
}

impl BoundLoop {
    /// Binds the loop, or `None` when a step needs the general path.
    pub(crate) fn bind(
        p: &Program,
        l: &LoopParts<'_>,
        env: &Env<'_>,
        mem: &mut [Memory<'_>],
    ) -> Result<Option<BoundLoop>, BackendError> {
        let (Some(cond), Some(body)) = (steps(p, l.cond, env, mem)?, steps(p, l.body, env, mem)?)
        else {
            return Ok(None);
        };
        let alloc = |b: usize| p.buffers[b].allocation;
        let (results, dests) = (l.body_results, l.state);
        // A copy that writes what a later copy reads (state that rotates): stage them all.
        let rotates = copies_overlap(p, results, dests);
        let moves: Vec<(usize, usize, usize)> = results
            .iter()
            .zip(dests)
            .filter(|(&s, &d)| alloc(s) != alloc(d))
            .map(|(&s, &d)| (alloc(s), alloc(d), p.buffers[s].bytes as usize))
            .collect();
        let mut state = Vec::with_capacity(2 * moves.len());
        let mut staging = Vec::new();
        if rotates {
            let words: usize = moves.iter().map(|&(_, _, n)| n.div_ceil(8)).sum();
            staging = vec![0u64; words.max(1)];
            let base = staging.as_mut_ptr().cast::<u8>();
            let mut into_state = Vec::with_capacity(moves.len());
            let mut off = 0usize;
            for &(sa, da, n) in &moves {
                if mem[sa].len() < n || mem[da].len() < n {
                    return Ok(None);
                }
                let Some(dst) = mem[da].ptr_mut() else {
                    return Ok(None);
                };
                // `off + n` stays within `staging` (its words hold every copy's bytes);
                // address arithmetic only.
                let slot = base.wrapping_add(off);
                state.push(Step::Copy {
                    src: mem[sa].ptr().cast::<u8>().cast_const(),
                    dst: slot,
                    n,
                });
                into_state.push(Step::Copy {
                    src: slot.cast_const(),
                    dst: dst.cast::<u8>(),
                    n,
                });
                off += n.div_ceil(8) * 8;
            }
            state.extend(into_state);
        } else {
            for &(sa, da, n) in &moves {
                let Some(step) = copy_step(mem, sa, da, n) else {
                    return Ok(None);
                };
                state.push(step);
            }
        }
        let pa = alloc(l.cond_result);
        if mem[pa].len() == 0 {
            return Err(BackendError::Internal(format!(
                "buffer %{} is too small",
                p.buffers[l.cond_result].name
            )));
        }
        let pred = mem[pa].ptr().cast::<u8>().cast_const();
        Ok(Some(BoundLoop {
            cond,
            pred,
            body,
            state,
            _staging: staging,
        }))
    }

    /// Runs the loop to completion: condition, then body and state copies while it holds;
    /// an error naming `name` past `limit` iterations.
    pub(crate) fn run(&self, name: &str, limit: u64, threads: usize) -> Result<(), BackendError> {
        let mut iterations = 0u64;
        loop {
            run_steps(&self.cond, threads)?;
            // SAFETY: `pred` points into the condition result's allocation, which holds at
            // least one byte (checked when binding) and outlives the loop; the condition's
            // kernels have returned, so nothing writes it now.
            if unsafe { self.pred.read() } == 0 {
                return Ok(());
            }
            iterations += 1;
            if iterations > limit {
                return Err(BackendError::LoopLimit {
                    instr: name.to_string(),
                    limit,
                });
            }
            run_steps(&self.body, threads)?;
            run_steps(&self.state, threads)?;
        }
    }
}

/// The thunks bound as steps, or `None` when one of them needs the general path.
fn steps(
    p: &Program,
    thunks: &[Thunk],
    env: &Env<'_>,
    mem: &mut [Memory<'_>],
) -> Result<Option<Vec<Step>>, BackendError> {
    let mut out = Vec::with_capacity(thunks.len());
    for t in thunks {
        match t {
            Thunk::Kernel {
                kernel,
                args,
                blocks,
                elements,
            } if runs_on_one_thread(env, *blocks, *elements) => {
                // A kernel writing read-only memory is an error on either path.
                let f = kernel_fn(env, *kernel)?;
                let ptrs = kernel_args(p, *kernel, args, mem)?;
                out.push(Step::Kernel {
                    f,
                    args: ptrs,
                    blocks: *blocks,
                });
            }
            Thunk::Gemm {
                shape,
                lhs,
                rhs,
                out: o,
            } if shape.k > 0 => {
                let alloc = |b: usize| p.buffers[b].allocation;
                let Some(op) = mem[alloc(*o)].ptr_mut() else {
                    return Ok(None);
                };
                let (lp, rp) = (mem[alloc(*lhs)].ptr(), mem[alloc(*rhs)].ptr());
                out.push(Step::Gemm {
                    shape: shape.clone(),
                    ptrs: (lp, rp, op),
                });
            }
            Thunk::Copy { src, dst, bytes } => {
                let (sa, da) = (p.buffers[*src].allocation, p.buffers[*dst].allocation);
                if sa == da {
                    continue;
                }
                let Some(step) = copy_step(mem, sa, da, *bytes as usize) else {
                    return Ok(None);
                };
                out.push(step);
            }
            _ => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// A copy of `n` bytes from allocation `sa` to a distinct `da`, or `None` when `da` is
/// read-only or either is too small.
fn copy_step(mem: &mut [Memory<'_>], sa: usize, da: usize, n: usize) -> Option<Step> {
    if mem[sa].len() < n || mem[da].len() < n {
        return None;
    }
    let dst = mem[da].ptr_mut()?.cast::<u8>();
    let src = mem[sa].ptr().cast::<u8>().cast_const();
    Some(Step::Copy { src, dst, n })
}

fn run_steps(steps: &[Step], threads: usize) -> Result<(), BackendError> {
    for s in steps {
        match *s {
            Step::Gemm { ref shape, ptrs } => gemm(shape, ptrs, threads)?,
            Step::Kernel {
                f,
                ref args,
                blocks,
            } => {
                // SAFETY: `f` is a loaded kernel with the `KernelFn` signature; `args`
                // holds one pointer per buffer parameter into allocations that outlive the
                // loop and are at least as large as the kernel's buffers (buffer assignment
                // sized them), writable where the kernel writes (checked when binding); the
                // whole grid runs on this thread.
                unsafe { f(args.as_ptr(), 0, blocks) }
            }
            // SAFETY: both ends hold at least `n` bytes (checked when binding: allocations,
            // or a slot of the loop's staging memory sized for it), do not overlap
            // (distinct allocations, or an allocation and the staging memory) and outlive
            // the loop; `dst` is owned, writable memory.
            Step::Copy { src, dst, n } => unsafe { std::ptr::copy_nonoverlapping(src, dst, n) },
        }
    }
    Ok(())
}
