//! The host device: this CPU standing in for a GPU. Kernels are the CUDA host emulation's
//! entry points ([`crate::host_unit`], compiled and loaded through `backend-cpu`'s compile,
//! cache and load path), GEMMs run through `backend-cpu`'s GEMM, and memory is host memory
//! that the device hands out and checks: every upload, download and copy must lie inside
//! one live allocation, so the executor's address arithmetic is tested too. Fresh memory
//! is filled with NaNs, so a kernel reading a temporary before writing it fails a test
//! instead of passing on zeros.
#![allow(unsafe_code)]

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;

use backend_cpu::reuse::{gemm_on_host, KernelFn, Loaded};
use plan::GemmShape;
use rayon::prelude::*;

use crate::error::CudaError;
use crate::run::device::{DevPtr, Device};

/// Alignment of every allocation (the device's, so kernels' vector accesses line up).
const ALIGN: usize = 256;
/// The fill of fresh memory: all ones, a NaN in every `f32`, `f64`, `bf16` and `f16`
/// lane (and -1 in every signed integer).
const POISON: u8 = 0xff;

/// This CPU as a [`Device`] running the host emulation's kernels.
pub struct HostDevice {
    loaded: Loaded,
    threads: usize,
    /// Live allocations: start address to layout.
    live: Mutex<BTreeMap<u64, Layout>>,
}

/// Kernel argument pointers shared by the threads running one launch's blocks.
struct Args(Vec<*mut c_void>);
// SAFETY: the pointers address the device's live allocations for the whole launch;
// threads run disjoint block ranges of one kernel, whose blocks write disjoint elements
// (the same contract as the CPU executor's parallel blocks).
unsafe impl Sync for Args {}

impl Args {
    /// The `bufs` pointer the entry point takes (a method, so closures capture `Args`).
    fn ptr(&self) -> *const *mut c_void {
        self.0.as_ptr()
    }
}

impl HostDevice {
    /// The device running `loaded`'s kernels (entry points in program kernel order),
    /// large launches split among `threads` threads.
    pub fn new(loaded: Loaded, threads: usize) -> HostDevice {
        HostDevice {
            loaded,
            threads: threads.max(1),
            live: Mutex::new(BTreeMap::new()),
        }
    }

    /// The loaded kernels (the library calls' scalar functions among them).
    pub fn kernels(&self) -> &[KernelFn] {
        &self.loaded.kernels
    }

    /// Fails unless `[ptr, ptr + bytes)` lies inside one live allocation.
    fn check(&self, ptr: DevPtr, bytes: u64, what: &str) -> Result<(), CudaError> {
        let live = self
            .live
            .lock()
            .map_err(|_| CudaError::Host("allocation table poisoned".into()))?;
        let inside = live
            .range(..=ptr)
            .next_back()
            .is_some_and(|(&start, l)| ptr + bytes <= start + l.size() as u64);
        if inside || bytes == 0 {
            Ok(())
        } else {
            Err(CudaError::Host(format!(
                "{what} of {bytes} bytes at {ptr:#x} lies outside every allocation"
            )))
        }
    }
}

impl Device for HostDevice {
    fn name(&self) -> String {
        "host (CUDA host emulation)".into()
    }

    fn alloc(&self, bytes: u64) -> Result<DevPtr, CudaError> {
        let layout = Layout::from_size_align(bytes.max(1) as usize, ALIGN)
            .map_err(|e| CudaError::Host(e.to_string()))?;
        // SAFETY: the layout has a nonzero size.
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            return Err(CudaError::Host(format!("out of memory ({bytes} bytes)")));
        }
        // SAFETY: `p` points to `layout.size()` freshly allocated bytes.
        unsafe { std::ptr::write_bytes(p, POISON, layout.size()) };
        self.live
            .lock()
            .map_err(|_| CudaError::Host("allocation table poisoned".into()))?
            .insert(p as u64, layout);
        Ok(p as u64)
    }

    fn free(&self, ptr: DevPtr) {
        let Ok(mut live) = self.live.lock() else {
            return;
        };
        if let Some(layout) = live.remove(&ptr) {
            // SAFETY: `ptr` was allocated by `alloc` with `layout` and is removed from the
            // table, so it is freed once.
            unsafe { std::alloc::dealloc(ptr as *mut u8, layout) };
        }
    }

    fn upload(&self, dst: DevPtr, data: &[u8]) -> Result<(), CudaError> {
        self.check(dst, data.len() as u64, "upload")?;
        // SAFETY: `dst .. dst + len` lies inside a live allocation (checked), which no
        // caller's slice borrows.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst as *mut u8, data.len()) };
        Ok(())
    }

    fn download(&self, src: DevPtr, out: &mut [u8]) -> Result<(), CudaError> {
        self.check(src, out.len() as u64, "download")?;
        // SAFETY: `src .. src + len` lies inside a live allocation (checked).
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    fn copy(&self, dst: DevPtr, src: DevPtr, bytes: u64) -> Result<(), CudaError> {
        self.check(src, bytes, "copy source")?;
        self.check(dst, bytes, "copy destination")?;
        // SAFETY: both ranges lie inside live allocations (checked); `copy` handles
        // overlap.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes as usize) };
        Ok(())
    }

    fn launch(
        &self,
        kernel: usize,
        blocks: u32,
        _threads: u32,
        args: &[DevPtr],
    ) -> Result<(), CudaError> {
        let f: KernelFn = *self
            .loaded
            .kernels
            .get(kernel)
            .ok_or_else(|| CudaError::Host(format!("no kernel {kernel}")))?;
        let args = Args(args.iter().map(|&a| a as *mut c_void).collect());
        let blocks = i64::from(blocks);
        let chunks = (self.threads as i64 * 4).min(blocks);
        if chunks <= 1 {
            // SAFETY: `f` is the kernel's host entry (its threads per block are compiled
            // in) with one pointer per buffer parameter, each a live allocation the
            // executor sized from the buffer assignment; the blocks are the grid's.
            unsafe { f(args.ptr(), 0, blocks) };
            return Ok(());
        }
        let args = &args;
        (0..chunks).into_par_iter().for_each(|c| {
            let (begin, end) = (blocks * c / chunks, blocks * (c + 1) / chunks);
            // SAFETY: as above, for disjoint block ranges of the grid.
            unsafe { f(args.ptr(), begin, end) };
        });
        Ok(())
    }

    fn gemm(
        &self,
        shape: &GemmShape,
        lhs: DevPtr,
        rhs: DevPtr,
        out: DevPtr,
    ) -> Result<(), CudaError> {
        // SAFETY: the executor passes the thunk's buffers, live allocations that the
        // thunk builder checked against the shape's strides; the result aliases neither
        // operand.
        unsafe {
            gemm_on_host(
                shape,
                (
                    lhs as *const c_void,
                    rhs as *const c_void,
                    out as *mut c_void,
                ),
                self.threads,
            )
        }
        .map_err(|e| CudaError::Host(e.to_string()))
    }

    fn synchronize(&self) -> Result<(), CudaError> {
        Ok(())
    }
}

impl Drop for HostDevice {
    fn drop(&mut self) {
        if let Ok(live) = self.live.get_mut() {
            for (&p, &layout) in live.iter() {
                // SAFETY: each entry is a live allocation of `alloc`, freed once here.
                unsafe { std::alloc::dealloc(p as *mut u8, layout) };
            }
        }
    }
}
