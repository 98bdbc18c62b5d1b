//! Running a program's thunks: binding allocations to kernel arguments and calling the
//! loaded kernels, splitting a large kernel's block range across the rayon pool.
#![allow(unsafe_code)]

use std::ffi::c_void;

use plan::{Program, Thunk};
use rayon::prelude::*;

use crate::bound_loop::{BoundLoop, LoopParts};
use crate::error::BackendError;
use crate::gemm::gemm;
use crate::launch::{
    bind_kernel_args, copies_overlap, kernel_fn, runs_on_one_thread, Args, Env, STACK_ARGS,
};
use crate::memory::Memory;

/// Runs every thunk of `p` with the allocations `mem` (one per program allocation).
pub fn run_thunks(p: &Program, env: &Env<'_>, mem: &mut [Memory<'_>]) -> Result<(), BackendError> {
    run_seq(p, &p.thunks, env, mem)
}

/// Runs one thunk `t` of the entry sequence (the poison mode's step, which checks the
/// buffers between them).
pub(crate) fn run_one_entry(
    p: &Program,
    t: &Thunk,
    env: &Env<'_>,
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    run_seq(p, std::slice::from_ref(t), env, mem)
}

/// Copies the bytes of `src[i]` into `dst[i]` for every `i`, reading all before writing
/// any (the sources may be destinations too). Without such overlap (a loop's state and
/// its body's results live apart), each copy goes straight from source to destination.
fn copy_all(
    p: &Program,
    src: &[usize],
    dst: &[usize],
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    let alloc = |b: usize| p.buffers[b].allocation;
    if !copies_overlap(p, src, dst) {
        for (&s, &d) in src.iter().zip(dst) {
            copy_one(p, s, d, mem)?;
        }
        return Ok(());
    }
    let data: Vec<Vec<u8>> = src
        .iter()
        .map(|&b| mem[alloc(b)].bytes(p.buffers[b].bytes as usize).to_vec())
        .collect();
    for (&d, bytes) in dst.iter().zip(data) {
        mem[alloc(d)].write(&bytes)?;
    }
    Ok(())
}

/// Copies buffer `s`'s bytes into buffer `d` (nothing when they share an allocation).
fn copy_one(p: &Program, s: usize, d: usize, mem: &mut [Memory<'_>]) -> Result<(), BackendError> {
    let (sa, da) = (p.buffers[s].allocation, p.buffers[d].allocation);
    copy_allocation(mem, sa, da, p.buffers[s].bytes as usize)
}

/// Copies the first `n` bytes of allocation `sa` into allocation `da`, in place (nothing
/// when they are one allocation).
fn copy_allocation(
    mem: &mut [Memory<'_>],
    sa: usize,
    da: usize,
    n: usize,
) -> Result<(), BackendError> {
    if sa == da || n == 0 {
        return Ok(());
    }
    let (lo, hi) = mem.split_at_mut(sa.max(da));
    let (from, to) = if sa < da {
        (&lo[sa], &mut hi[0])
    } else {
        (&hi[0], &mut lo[da])
    };
    to.write(from.bytes(n))
}

/// The first `N` bytes of buffer `b` (a loop's predicate, a branch index: no allocation,
/// as it is read once per iteration).
fn read<const N: usize>(
    p: &Program,
    b: usize,
    mem: &[Memory<'_>],
) -> Result<[u8; N], BackendError> {
    mem[p.buffers[b].allocation]
        .bytes(N)
        .get(..N)
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .ok_or_else(|| {
            BackendError::Internal(format!("buffer %{} is too small", p.buffers[b].name))
        })
}

fn run_seq(
    p: &Program,
    thunks: &[Thunk],
    env: &Env<'_>,
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    for t in thunks {
        match t {
            Thunk::While { cond, body, .. }
                if crate::on_pool::moves_to_pool(env.threads, cond, body) =>
            {
                crate::on_pool::run(|| run_seq(p, std::slice::from_ref(t), env, mem))?;
            }
            Thunk::While {
                name,
                cond,
                cond_result,
                body,
                body_results,
                state,
                init,
                ..
            } => {
                copy_all(p, init, state, mem)?;
                if env.profile.is_none() {
                    let parts = LoopParts {
                        cond,
                        cond_result: *cond_result,
                        body,
                        body_results,
                        state,
                    };
                    if let Some(bound) = BoundLoop::bind(p, &parts, env, mem)? {
                        bound.run(name, env.max_while_iterations, env.threads)?;
                        continue;
                    }
                }
                let mut iterations = 0u64;
                loop {
                    run_seq(p, cond, env, mem)?;
                    if read::<1>(p, *cond_result, mem)?[0] == 0 {
                        break;
                    }
                    iterations += 1;
                    if iterations > env.max_while_iterations {
                        return Err(BackendError::LoopLimit {
                            instr: name.clone(),
                            limit: env.max_while_iterations,
                        });
                    }
                    run_seq(p, body, env, mem)?;
                    copy_all(p, body_results, state, mem)?;
                }
            }
            Thunk::Conditional {
                selector,
                selector_is_pred,
                branches,
                results,
            } => {
                let n = branches.len();
                let k = if *selector_is_pred {
                    if read::<1>(p, *selector, mem)?[0] != 0 {
                        0
                    } else {
                        1
                    }
                } else {
                    let v = i32::from_ne_bytes(read::<4>(p, *selector, mem)?);
                    usize::try_from(v)
                        .ok()
                        .filter(|&v| v < n)
                        .unwrap_or(n.saturating_sub(1))
                };
                let (thunks, res) = branches
                    .get(k)
                    .ok_or_else(|| BackendError::Internal("conditional without branches".into()))?;
                run_seq(p, thunks, env, mem)?;
                copy_all(p, res, results, mem)?;
            }
            other => match env.profile {
                Some(profile) => {
                    let start = std::time::Instant::now();
                    run_one(p, other, env, mem)?;
                    // Stop the clock first: locking and labelling are no part of the thunk.
                    let took = start.elapsed();
                    if let Ok(mut prof) = profile.lock() {
                        prof.record_call(plan::profile_label(p, other), start, took);
                    }
                }
                None => run_one(p, other, env, mem)?,
            },
        }
    }
    Ok(())
}

fn run_one(
    p: &Program,
    t: &Thunk,
    env: &Env<'_>,
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    match t {
        Thunk::Kernel {
            kernel,
            args,
            blocks,
            elements,
        } => {
            let f = kernel_fn(env, *kernel)?;
            let mut on_stack = [std::ptr::null_mut(); STACK_ARGS];
            let mut on_heap = Vec::new();
            let slots: &mut [*mut c_void] = if args.len() <= STACK_ARGS {
                &mut on_stack[..args.len()]
            } else {
                on_heap.resize(args.len(), std::ptr::null_mut());
                &mut on_heap
            };
            bind_kernel_args(p, *kernel, args, mem, slots)?;
            let args = &Args(slots);
            let blocks = *blocks;
            if !runs_on_one_thread(env, blocks, *elements) {
                let chunks = (env.threads as i64 * 4).min(blocks);
                (0..chunks).into_par_iter().for_each(|c| {
                    let begin = blocks * c / chunks;
                    let end = blocks * (c + 1) / chunks;
                    // SAFETY: `f` is a kernel of the loaded object with the `KernelFn`
                    // signature; `args` holds one valid pointer per buffer parameter, each
                    // to an allocation at least as large as the kernel's buffer (buffer
                    // assignment sized it), writable where the kernel writes;
                    // [begin, end) lies within the grid and chunks are disjoint.
                    unsafe { f(args.ptr(), begin, end) };
                });
            } else {
                // SAFETY: as above, for the whole grid on this thread.
                unsafe { f(args.ptr(), 0, blocks) };
            }
        }
        Thunk::StreamedGemm {
            producer,
            lhs_arg,
            block_elements,
            slots,
            gemm,
            axis: plan::stream::StreamAxis::Contraction { lhs },
            ..
        } => crate::streamed_contraction::run(
            p,
            producer,
            *lhs_arg,
            *block_elements,
            *slots,
            gemm,
            *lhs,
            env,
            mem,
        )?,
        Thunk::StreamedGemm {
            producer,
            lhs_arg,
            block_elements,
            slots,
            gemm,
            axis: plan::stream::StreamAxis::Rows,
            group,
        } => {
            let stream = crate::streamed_rows::RowStream {
                producer,
                lhs_arg: *lhs_arg,
                block_elements: *block_elements,
                slots: *slots,
                group: *group,
                gemm,
            };
            crate::streamed_rows::run(p, &stream, env, mem)?
        }
        Thunk::Gemm {
            shape,
            lhs,
            rhs,
            out,
        } => {
            let (la, ra, oa) = (
                p.buffers[*lhs].allocation,
                p.buffers[*rhs].allocation,
                p.buffers[*out].allocation,
            );
            let (lp, rp) = (mem[la].ptr(), mem[ra].ptr());
            let op = mem[oa].ptr_mut().ok_or_else(|| {
                BackendError::Internal(format!(
                    "gemm writes read-only buffer %{}",
                    p.buffers[*out].name
                ))
            })?;
            if shape.k == 0 {
                let zeros = vec![0u8; p.buffers[*out].bytes as usize];
                mem[oa].write(&zeros)?;
                return Ok(());
            }
            gemm(shape, (lp, rp, op), env.threads)?;
        }
        Thunk::Library {
            call,
            inputs,
            outputs,
        } => crate::library::run(p, call, inputs, outputs, env.kernels, mem)?,
        Thunk::Collective {
            step,
            inputs,
            outputs,
        } => crate::collective_exec::run(p, step, (inputs, outputs), mem)?,
        Thunk::Copy { src, dst, bytes } => {
            let (s, d) = (p.buffers[*src].allocation, p.buffers[*dst].allocation);
            copy_allocation(mem, s, d, *bytes as usize)?;
        }
        Thunk::While { .. } | Thunk::Conditional { .. } => {
            run_seq(p, std::slice::from_ref(t), env, mem)?
        }
    }
    Ok(())
}
