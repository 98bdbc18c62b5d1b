//! Running a program's thunks: binding allocations to kernel arguments and calling the
//! loaded kernels, splitting a large kernel's block range across the rayon pool.
#![allow(unsafe_code)]

use std::ffi::c_void;

use plan::{Program, Thunk};
use rayon::prelude::*;

use crate::bound_loop::{BoundLoop, LoopParts};
use crate::error::BackendError;
use crate::loaded::KernelFn;
use codegen::kir::{Access, ScalarType};
use plan::GemmShape;

/// Kernels writing fewer elements than this run on the calling thread.
const PARALLEL_MIN_ELEMENTS: i64 = 1 << 15;

/// Memory of one allocation during a run.
pub enum Memory<'a> {
    /// Borrowed read-only bytes (a parameter in row-major order, or a constant).
    Borrowed(&'a [u8]),
    /// Owned, writable (temporaries; parameters that needed a layout change).
    Owned(Vec<u64>),
}

impl Memory<'_> {
    /// A pointer for reading (kernels never write through it).
    pub(crate) fn ptr(&mut self) -> *mut c_void {
        match self {
            Memory::Borrowed(b) => b.as_ptr() as *mut c_void,
            Memory::Owned(v) => v.as_mut_ptr().cast(),
        }
    }

    /// A pointer for writing: owned memory only.
    pub(crate) fn ptr_mut(&mut self) -> Option<*mut c_void> {
        match self {
            Memory::Borrowed(_) => None,
            Memory::Owned(v) => Some(v.as_mut_ptr().cast()),
        }
    }

    /// Writes `data` at the start (owned memory only).
    pub(crate) fn write(&mut self, data: &[u8]) -> Result<(), BackendError> {
        let Memory::Owned(v) = self else {
            return Err(BackendError::Internal("write to read-only memory".into()));
        };
        if data.len() > v.len() * 8 {
            return Err(BackendError::Internal("write past an allocation".into()));
        }
        // SAFETY: `v` holds at least `data.len()` bytes (checked); u64 accepts any bits.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), data.len()) };
        dst.copy_from_slice(data);
        Ok(())
    }

    /// The size in bytes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Memory::Borrowed(b) => b.len(),
            Memory::Owned(v) => std::mem::size_of_val(v.as_slice()),
        }
    }

    /// The bytes (at least `len`).
    pub fn bytes(&self, len: usize) -> &[u8] {
        match self {
            Memory::Borrowed(b) => &b[..len.min(b.len())],
            Memory::Owned(v) => {
                let all: &[u8] = word_bytes(v);
                &all[..len.min(all.len())]
            }
        }
    }
}

/// The bytes of 8-byte words.
pub fn word_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding and any byte is a valid u8; the length is in bytes of
    // the same allocation.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Allocations at least this large ask the kernel for transparent huge pages.
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;
/// The size of a transparent huge page on x86-64.
const HUGE_PAGE: usize = 2 << 20;

/// Zeroed owned memory of at least `bytes` bytes (8-byte aligned).
pub fn owned(bytes: u64) -> Memory<'static> {
    let v = vec![0u64; (bytes as usize).div_ceil(8).max(1)];
    advise_huge_pages(&v);
    Memory::Owned(v)
}

/// Asks for transparent huge pages over the 2 MiB-aligned part of a large, not yet touched
/// allocation: its first touch then faults in 2 MiB at a time instead of 4 KiB (a 64 MiB
/// output faults 32 times instead of 16384). Only advice: where the kernel declines, the
/// memory is the same.
fn advise_huge_pages(v: &[u64]) {
    let len = std::mem::size_of_val(v);
    if !cfg!(target_os = "linux") || len < HUGE_PAGE_MIN_BYTES {
        return;
    }
    let start = (v.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
    let end = (v.as_ptr() as usize + len) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: [start, end) lies inside `v`'s allocation and is page-aligned;
        // MADV_HUGEPAGE changes no content and no mapping the allocator relies on.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

/// 8-byte aligned words holding `data` (zero-padded to a whole word).
pub fn words_of(data: &[u8]) -> Vec<u64> {
    let mut m = vec![0u64; data.len().div_ceil(8).max(1)];
    // SAFETY: `m` holds at least `data.len()` bytes; u64 accepts any bit pattern.
    let dst = unsafe { std::slice::from_raw_parts_mut(m.as_mut_ptr().cast::<u8>(), data.len()) };
    dst.copy_from_slice(data);
    m
}

/// Pointers to kernel arguments, shared by the threads running one kernel's blocks.
struct Args<'a>(&'a [*mut c_void]);
// SAFETY: the pointers refer to allocations that outlive the kernel call; threads run
// disjoint block ranges, and a kernel's blocks write disjoint output elements.
unsafe impl Sync for Args<'_> {}
// SAFETY: as above.
unsafe impl Send for Args<'_> {}

impl Args<'_> {
    fn ptr(&self) -> *const *mut c_void {
        self.0.as_ptr()
    }

    /// A copy of the pointers, for a thread to rebind one of them.
    fn copy(&self) -> Vec<*mut c_void> {
        self.0.to_vec()
    }
}

/// Most arguments bound on the stack (a kernel with more binds them in a vector): a
/// program of many tiny kernels spent a fifth of its time allocating argument vectors.
const STACK_ARGS: usize = 16;

/// How thunks run: the loaded kernels, thread count, the while-loop limit and where to
/// record per-thunk times.
pub struct Env<'k> {
    /// Kernel entry points, indexed like the program's kernels.
    pub kernels: &'k [KernelFn],
    /// Threads for large kernels.
    pub threads: usize,
    /// Most iterations one `while` may run.
    pub max_while_iterations: u64,
    /// Per-thunk times, when profiling.
    pub profile: Option<&'k std::sync::Mutex<plan::Profile>>,
}

/// Runs every thunk of `p` with the allocations `mem` (one per program allocation).
pub fn run_thunks(p: &Program, env: &Env<'_>, mem: &mut [Memory<'_>]) -> Result<(), BackendError> {
    run_seq(p, &p.thunks, env, mem)
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

/// Whether, copying `src[i]` into `dst[i]` in order, a copy writes an allocation a later
/// copy reads (rotating loop state): then every read must come before any write.
pub(crate) fn copies_overlap(p: &Program, src: &[usize], dst: &[usize]) -> bool {
    let alloc = |b: usize| p.buffers[b].allocation;
    (0..dst.len()).any(|i| {
        alloc(src[i]) != alloc(dst[i]) && src[i + 1..].iter().any(|&s| alloc(s) == alloc(dst[i]))
    })
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
            Thunk::While {
                name,
                cond,
                cond_result,
                body,
                body_results,
                state,
                init,
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
                        prof.record(plan::profile_label(p, other), took);
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
        } => run_streamed(
            p,
            producer,
            *lhs_arg,
            *block_elements,
            *slots,
            gemm,
            env,
            mem,
        )?,
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

/// Whether a kernel of `blocks` blocks writing `elements` elements runs its whole grid on
/// the calling thread (too small to pay for splitting).
pub(crate) fn runs_on_one_thread(env: &Env<'_>, blocks: i64, elements: i64) -> bool {
    env.threads <= 1 || blocks <= 1 || elements < PARALLEL_MIN_ELEMENTS
}

/// Kernel `kernel`'s entry point.
pub(crate) fn kernel_fn(env: &Env<'_>, kernel: usize) -> Result<KernelFn, BackendError> {
    env.kernels
        .get(kernel)
        .copied()
        .ok_or_else(|| BackendError::Internal(format!("no kernel {kernel}")))
}

/// The pointers kernel `kernel` takes as `bufs[]`: its arguments' allocations, writable
/// where the kernel writes.
pub(crate) fn kernel_args(
    p: &Program,
    kernel: usize,
    args: &[usize],
    mem: &mut [Memory<'_>],
) -> Result<Vec<*mut c_void>, BackendError> {
    let mut ptrs = vec![std::ptr::null_mut(); args.len()];
    bind_kernel_args(p, kernel, args, mem, &mut ptrs)?;
    Ok(ptrs)
}

/// [`kernel_args`] into `out` (one slot per argument).
fn bind_kernel_args(
    p: &Program,
    kernel: usize,
    args: &[usize],
    mem: &mut [Memory<'_>],
    out: &mut [*mut c_void],
) -> Result<(), BackendError> {
    let params = &p.kernels[kernel].buffers;
    for ((j, &b), slot) in args.iter().enumerate().zip(out.iter_mut()) {
        let a = p.buffers[b].allocation;
        let writes = params.get(j).is_some_and(|bp| bp.access != Access::In);
        let ptr = if writes {
            mem[a].ptr_mut().ok_or_else(|| {
                BackendError::Internal(format!(
                    "kernel {} writes read-only buffer %{}",
                    p.kernels[kernel].name, p.buffers[b].name
                ))
            })?
        } else {
            mem[a].ptr()
        };
        *slot = ptr;
    }
    Ok(())
}

/// Runs a [`Thunk::StreamedGemm`]: the producer's blocks split into `slots` runs of
/// consecutive blocks, in parallel; each run writes one block at a time into its scratch
/// slot (of the lhs buffer's allocation) and multiplies that block's rows at once.
#[allow(clippy::too_many_arguments)]
fn run_streamed(
    p: &Program,
    producer: &Thunk,
    lhs_arg: usize,
    block_elements: i64,
    slots: usize,
    gemm: &Thunk,
    env: &Env<'_>,
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    let (
        Thunk::Kernel {
            kernel,
            args,
            blocks,
            ..
        },
        Thunk::Gemm {
            shape, rhs, out, ..
        },
    ) = (producer, gemm)
    else {
        return Err(BackendError::Internal("malformed streamed gemm".into()));
    };
    let f = kernel_fn(env, *kernel)?;
    let bound = kernel_args(p, *kernel, args, mem)?;
    let ptrs = Args(&bound);
    let element_bytes = match shape.ty {
        ScalarType::F32 => 4,
        ScalarType::F64 => 8,
        t => return Err(BackendError::Internal(format!("gemm of {t}"))),
    };
    let block_bytes = block_elements as usize * element_bytes;
    let scratch = ptrs.0[lhs_arg] as usize;
    let scratch_len = mem[p.buffers[args[lhs_arg]].allocation]
        .bytes(usize::MAX)
        .len();
    if scratch_len < slots * block_bytes || block_elements % shape.k as i64 != 0 {
        return Err(BackendError::Internal(
            "streamed gemm scratch too small".into(),
        ));
    }
    let rhs_ptr = mem[p.buffers[*rhs].allocation].ptr() as usize;
    let out_ptr = mem[p.buffers[*out].allocation]
        .ptr_mut()
        .ok_or_else(|| BackendError::Internal("gemm writes a read-only buffer".into()))?
        as usize;
    let rows = block_elements as usize / shape.k;
    let block_shape = GemmShape {
        m: rows,
        batch: Vec::new(),
        ..shape.clone()
    };
    let blocks = *blocks as usize;
    let run = |slot: usize| {
        let slot_ptr = scratch + slot * block_bytes;
        let mut bufs = ptrs.copy();
        for b in blocks * slot / slots..blocks * (slot + 1) / slots {
            // The kernel addresses block `b`'s elements at `[b C, (b + 1) C)` of the
            // lhs: its base moves down by `b C` so they land in this slot. Address
            // arithmetic only (the kernel dereferences just the slot).
            bufs[lhs_arg] = slot_ptr.wrapping_sub(b * block_bytes) as *mut c_void;
            // SAFETY: `f` has the kernel signature; every pointer but the lhs is the
            // argument's allocation (as for a plain kernel thunk); the codegen proved
            // (`stream::block_elements`) that block `b` writes only lhs elements
            // `[b C, (b + 1) C)`, which now lie in this run's slot, inside the lhs
            // allocation (`scratch_len` checked above); runs use distinct slots and
            // write distinct blocks of the other outputs.
            unsafe { f(bufs.as_ptr(), b as i64, b as i64 + 1) };
            let rows_out = (out_ptr as isize
                + (b * rows) as isize * shape.out.0 * element_bytes as isize)
                as usize;
            let ops = (slot_ptr, rhs_ptr, rows_out);
            // SAFETY: the block's `rows` x `k` lhs rows are in the slot, row-major (the
            // GEMM's lhs strides are `(k, 1)`, checked by the codegen); rhs is the
            // GEMM's own operand; result rows `[b rows, (b + 1) rows)` lie inside the
            // result and no other run writes them.
            unsafe {
                match shape.ty {
                    ScalarType::F32 => gemm_one::<f32>(
                        &block_shape,
                        0,
                        (ops.0 as *const f32, ops.1 as *const f32, ops.2 as *mut f32),
                        (0, rows),
                        (0, block_shape.n),
                        faer::Par::Seq,
                    ),
                    _ => gemm_one::<f64>(
                        &block_shape,
                        0,
                        (ops.0 as *const f64, ops.1 as *const f64, ops.2 as *mut f64),
                        (0, rows),
                        (0, block_shape.n),
                        faer::Par::Seq,
                    ),
                }
            }
        }
    };
    if env.threads > 1 {
        (0..slots).into_par_iter().for_each(run);
    } else {
        (0..slots).for_each(run);
    }
    Ok(())
}

/// Runs GEMM `shape` (with `k > 0`) on operands `lhs` and `rhs` into `out`.
///
/// The pointers are the allocations of the thunk's buffers, which the thunk builder
/// checked against the shape's strides; `out` is writable and aliases neither operand.
pub(crate) fn gemm(
    shape: &GemmShape,
    (lhs, rhs, out): (*mut c_void, *mut c_void, *mut c_void),
    threads: usize,
) -> Result<(), BackendError> {
    match shape.ty {
        ScalarType::F32 => gemm_batches::<f32>(shape, lhs.cast(), rhs.cast(), out.cast(), threads),
        ScalarType::F64 => gemm_batches::<f64>(shape, lhs.cast(), rhs.cast(), out.cast(), threads),
        t => return Err(BackendError::Internal(format!("gemm of {t}"))),
    }
    Ok(())
}

/// Products below this many multiply-adds run single-threaded.
const PARALLEL_MIN_FLOPS: usize = 1 << 18;

/// Runs one GEMM per batch element through faer's matmul: on x86-64 it dispatches to AVX-512 (or AVX2) microkernels at
/// run time on stable Rust, where the `gemm` crate needs a nightly feature for AVX-512
/// (measured on a 2048^3 f32 product: about twice as fast here).
fn gemm_batches<T: faer::traits::ComplexField + Copy + num_one::One>(
    s: &GemmShape,
    lhs: *const T,
    rhs: *const T,
    out: *mut T,
    threads: usize,
) {
    if s.m == 0 || s.n == 0 {
        return;
    }
    let count: usize = s.batch.iter().map(|b| b.0).product();
    let big = s.m * s.n * s.k >= PARALLEL_MIN_FLOPS;
    // Enough batch elements: one sequential product per thread at a time (no
    // synchronization inside a product); else each product uses every thread.
    if threads > 1 && count >= threads && big {
        let ptrs = (lhs as usize, rhs as usize, out as usize);
        (0..count).into_par_iter().for_each(|i| {
            let (l, r, o) = (ptrs.0 as *const T, ptrs.1 as *const T, ptrs.2 as *mut T);
            // SAFETY: as in `gemm_one`; batch elements write disjoint parts of `out`.
            unsafe { gemm_one(s, i, (l, r, o), (0, s.m), (0, s.n), faer::Par::Seq) };
        });
        return;
    }
    // A tall product (many rows, few columns) splits by rows, a wide one by columns: one
    // sequential product per part, in parallel (each packs only its own operand part; no
    // synchronization inside a product).
    let tall = s.m >= TALL_ROWS_PER_THREAD * threads && s.m >= 4 * s.n;
    let wide = s.n >= WIDE_COLS_PER_THREAD * threads;
    if threads > 1 && big && (tall || wide) {
        let ptrs = (lhs as usize, rhs as usize, out as usize);
        let parts = if tall { threads * 2 } else { threads };
        let split = |len: usize, j: usize| (len * j / parts, len * (j + 1) / parts);
        for i in 0..count {
            (0..parts).into_par_iter().for_each(|j| {
                let (rows, cols) = if tall {
                    (split(s.m, j), (0, s.n))
                } else {
                    ((0, s.m), split(s.n, j))
                };
                let (l, r, o) = (ptrs.0 as *const T, ptrs.1 as *const T, ptrs.2 as *mut T);
                // SAFETY: as in `gemm_one`; the parts' row or column ranges are disjoint.
                unsafe { gemm_one(s, i, (l, r, o), rows, cols, faer::Par::Seq) };
            });
        }
        return;
    }
    let par = if threads > 1 && big {
        faer::Par::rayon(threads)
    } else {
        faer::Par::Seq
    };
    for i in 0..count {
        // SAFETY: as in `gemm_one`.
        unsafe { gemm_one(s, i, (lhs, rhs, out), (0, s.m), (0, s.n), par) };
    }
}

/// Columns per thread from which a product is split by columns.
const WIDE_COLS_PER_THREAD: usize = 128;

/// Rows per thread from which a tall product is split by rows.
const TALL_ROWS_PER_THREAD: usize = 1024;

/// Rows `[m0, m1)` and columns `[n0, n1)` of the product of batch element `i` (batch offsets in
/// mixed radix over the batch dims).
///
/// # Safety
/// The pointers hold the dot's operands and result with the layouts `s`'s strides were
/// computed from (checked by the thunk builder), so every element the views cover, at
/// batch element `i`'s offsets, lies inside its allocation; the result does not alias
/// the operands (a fresh temporary) and nothing else touches batch element `i`'s result
/// during the call.
unsafe fn gemm_one<T: faer::traits::ComplexField + Copy + num_one::One>(
    s: &GemmShape,
    i: usize,
    (lhs, rhs, out): (*const T, *const T, *mut T),
    (m0, m1): (usize, usize),
    (n0, n1): (usize, usize),
    par: faer::Par,
) {
    let (mut rest, mut lo, mut ro, mut oo) = (i, 0isize, 0isize, 0isize);
    for &(n, ls, rs, os) in s.batch.iter().rev() {
        let j = (rest % n) as isize;
        rest /= n;
        lo += j * ls;
        ro += j * rs;
        oo += j * os;
    }
    // SAFETY: the caller's contract: the views lie inside their allocations and the
    // result is written by this call alone.
    let (a, b, c) = unsafe {
        (
            faer::MatRef::from_raw_parts(
                lhs.offset(lo + m0 as isize * s.lhs.0),
                m1 - m0,
                s.k,
                s.lhs.0,
                s.lhs.1,
            ),
            faer::MatRef::from_raw_parts(
                rhs.offset(ro + n0 as isize * s.rhs.1),
                s.k,
                n1 - n0,
                s.rhs.0,
                s.rhs.1,
            ),
            faer::MatMut::from_raw_parts_mut(
                out.offset(oo + m0 as isize * s.out.0 + n0 as isize * s.out.1),
                m1 - m0,
                n1 - n0,
                s.out.0,
                s.out.1,
            ),
        )
    };
    faer::linalg::matmul::matmul(c, faer::Accum::Replace, a, b, T::one(), par);
}

/// The multiplicative identity of the GEMM element types.
mod num_one {
    /// `1` of a type.
    pub trait One {
        /// The value one.
        fn one() -> Self;
    }
    impl One for f32 {
        fn one() -> f32 {
            1.0
        }
    }
    impl One for f64 {
        fn one() -> f64 {
            1.0
        }
    }
}
