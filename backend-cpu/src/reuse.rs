//! What a backend that runs part of a program on this CPU reuses from this one: the
//! CUDA backend's host device compiles the CUDA host emulation through this crate's
//! compile, cache and load path, runs GEMMs through its GEMM, and runs library calls
//! (sort, scatter, FFT, LAPACK, RNG) on host copies of their operands with its routines.
//! One implementation of each, whichever backend drives the program.
#![allow(unsafe_code)]

use std::ffi::c_void;

use plan::{ArraySpec, GemmShape, LibraryCall, Program};

use crate::error::BackendError;
use crate::memory::Memory;

pub use crate::cache::load_or_build;
pub use crate::compile::constant_spec;
pub use crate::data::{from_buffer, permute, to_buffer};
pub use crate::loaded::{KernelFn, Loaded};

/// Runs GEMM `shape` on host operands (`k > 0`; a GEMM with `k == 0` writes zeros, which
/// the caller does), split among `threads` threads.
///
/// # Safety
/// `lhs`, `rhs` and `out` point to live memory holding every element the shape's
/// strides and batch strides reach, in the shape's stored types; `out` is writable and
/// aliases neither operand.
pub unsafe fn gemm_on_host(
    shape: &GemmShape,
    (lhs, rhs, out): (*const c_void, *const c_void, *mut c_void),
    threads: usize,
) -> Result<(), BackendError> {
    crate::gemm::gemm(shape, (lhs.cast_mut(), rhs.cast_mut(), out), threads)
}

/// Runs library call `call` of program `p` on host copies of the program's allocations:
/// `allocations[a]` holds allocation `a`'s words (those the call neither reads nor
/// writes may be empty); `kernels` are the program's kernels compiled for this CPU (the
/// called computations' scalar functions). Returns the allocations, the outputs written.
pub fn library_on_host(
    p: &Program,
    call: &LibraryCall,
    (inputs, outputs): (&[ArraySpec], &[ArraySpec]),
    kernels: &[KernelFn],
    allocations: Vec<Vec<u64>>,
) -> Result<Vec<Vec<u64>>, BackendError> {
    let mut mem: Vec<Memory<'_>> = allocations.into_iter().map(Memory::Owned).collect();
    crate::library::run(p, call, inputs, outputs, kernels, &mut mem)?;
    Ok(mem
        .into_iter()
        .map(|m| match m {
            Memory::Owned(v) => v,
            _ => Vec::new(),
        })
        .collect())
}

/// Runs collective step `step` of program `p` (through the calling thread's
/// communicator, as the CPU executor does) on host copies of the program's allocations,
/// as [`library_on_host`] runs library calls. Returns the allocations, the outputs
/// written.
pub fn collective_on_host(
    p: &Program,
    step: &plan::Collective,
    (inputs, outputs): (&[ArraySpec], &[ArraySpec]),
    allocations: Vec<Vec<u64>>,
) -> Result<Vec<Vec<u64>>, BackendError> {
    let mut mem: Vec<Memory<'_>> = allocations.into_iter().map(Memory::Owned).collect();
    crate::collective_exec::run(p, step, (inputs, outputs), &mut mem)?;
    Ok(mem
        .into_iter()
        .map(|m| match m {
            Memory::Owned(v) => v,
            _ => Vec::new(),
        })
        .collect())
}
