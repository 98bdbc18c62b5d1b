//! Calling loaded kernels: the environment of a run, kernel entry points and their
//! argument pointers, and when a kernel is worth splitting across threads. Shared by the
//! thunk executor and the bound loop.
#![allow(unsafe_code)]

use std::ffi::c_void;

use codegen::kir::Access;
use plan::Program;

use crate::error::BackendError;
use crate::loaded::KernelFn;
use crate::memory::Memory;

/// Kernels writing fewer elements than this run on the calling thread. The calling thread
/// is not one of the pool's: a kernel split among the threads waits for the pool's threads
/// to wake and finish (tens of microseconds, more while another process holds a core), as
/// long as a one-thread pass over 2^17 elements of a simple kernel. lstm_lm_scan128's
/// weight-gradient accumulations (`[192,192]` adds, 36864 elements, 128 steps) took
/// 60-400 us a call in 6 blocks on two threads, 45-70 on one (loaded 2-core machine).
const PARALLEL_MIN_ELEMENTS: i64 = 1 << 17;

/// Pointers to kernel arguments, shared by the threads running one kernel's blocks.
pub(crate) struct Args<'a>(pub(crate) &'a [*mut c_void]);
// SAFETY: the pointers refer to allocations that outlive the kernel call; threads run
// disjoint block ranges, and a kernel's blocks write disjoint output elements.
unsafe impl Sync for Args<'_> {}
// SAFETY: as above.
unsafe impl Send for Args<'_> {}

impl Args<'_> {
    pub(crate) fn ptr(&self) -> *const *mut c_void {
        self.0.as_ptr()
    }

    /// A copy of the pointers, for a thread to rebind one of them.
    pub(crate) fn copy(&self) -> Vec<*mut c_void> {
        self.0.to_vec()
    }
}

/// Most arguments bound on the stack (a kernel with more binds them in a vector): a
/// program of many tiny kernels spent a fifth of its time allocating argument vectors.
pub(crate) const STACK_ARGS: usize = 16;

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

/// Whether, copying `src[i]` into `dst[i]` in order, a copy writes an allocation a later
/// copy reads (rotating loop state): then every read must come before any write.
pub(crate) fn copies_overlap(p: &Program, src: &[usize], dst: &[usize]) -> bool {
    let alloc = |b: usize| p.buffers[b].allocation;
    (0..dst.len()).any(|i| {
        alloc(src[i]) != alloc(dst[i]) && src[i + 1..].iter().any(|&s| alloc(s) == alloc(dst[i]))
    })
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
pub(crate) fn bind_kernel_args(
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
