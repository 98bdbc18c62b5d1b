//! Library routines of the runtime, run by [`Thunk::Library`](plan::Thunk):
//! sort and top-k (typed keys where the comparator is a recognized key order, else a
//! stable merge sort of a permutation per line ordered by the compiled comparator),
//! scatter and select-and-scatter (sequential, combining through the compiled update
//! computation), the LAPACK custom calls (through `faer`) and rng-bit-generator (ThreeFry
//! and Philox, bit-exact with XLA).
//!
//! Every routine but the FFT and LAPACK's `potrf`, `trsm` and `getrf` (which read and
//! write the executor's memory in place) works on copies of its operands in their
//! physical layout ([`Arr`]), addressed by
//! logical index, and writes each result once. Called computations are
//! scalar-function kernels: their buffer pointers are aimed at single elements.
#![allow(unsafe_code)]

mod arrays;
mod fft;
mod lapack;
mod lapack_direct;
mod lapack_mem;
mod rng;
mod scatter;
mod sort;
mod sort_keys;

use plan::{ArraySpec, LibraryCall, Program};

use crate::error::BackendError;
use crate::loaded::KernelFn;
use crate::memory::Memory;
use arrays::{Arr, ScalarFn};

/// Runs one library call: reads its inputs, computes, writes its outputs.
pub(crate) fn run(
    p: &Program,
    call: &LibraryCall,
    inputs: &[ArraySpec],
    outputs: &[ArraySpec],
    kernels: &[KernelFn],
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    if let LibraryCall::Fft { kind, lengths } = call {
        // On the executor's memory: no copies of the operand or the result.
        return fft::run_on(p, *kind, lengths, inputs, outputs, mem);
    }
    if let LibraryCall::Lapack(l) = call {
        if lapack_direct::handles(*l) {
            // On the executor's memory too, in place where the plan shares the bytes.
            return lapack_direct::run_on(p, *l, inputs, outputs, mem);
        }
    }
    let mut ins = Vec::with_capacity(inputs.len());
    for spec in inputs {
        let shape = Arr::with_words(spec, |_| Vec::new());
        let n = shape.count() * shape.width;
        let b = &p.buffers[spec.buffer];
        let a = Arr::from_bytes(spec, mem[b.allocation].bytes(n)).ok_or_else(|| {
            BackendError::Internal(format!("library input %{} is too small", b.name))
        })?;
        ins.push(a);
    }
    let mut outs: Vec<Arr> = outputs.iter().map(Arr::new).collect();
    let f = |k: usize| ScalarFn::new(p, kernels, k);
    match call {
        LibraryCall::Sort {
            dim,
            comparator,
            order,
        } => sort::sort(&mut ins, &mut outs, *dim, f(*comparator)?, order.as_ref())?,
        LibraryCall::TopK {
            k,
            largest,
            comparator,
            order,
        } => {
            let cmp = comparator.map(f).transpose()?;
            sort::topk(&mut ins, &mut outs, *k, *largest, cmp, order.as_ref())?
        }
        LibraryCall::Scatter { combiner, .. } => {
            scatter::scatter(call, &mut ins, &mut outs, f(*combiner)?)?
        }
        LibraryCall::SelectAndScatter {
            window,
            select,
            scatter: sc,
        } => scatter::select_and_scatter(window, &mut ins, &mut outs, f(*select)?, f(*sc)?)?,
        LibraryCall::Lapack(l) => lapack::run(*l, &ins, &mut outs)?,
        LibraryCall::Fft { kind, lengths } => fft::run(*kind, lengths, &ins, &mut outs)?,
        LibraryCall::RngBitGenerator { philox } => rng::run(*philox, &ins, &mut outs)?,
    }
    for (spec, a) in outputs.iter().zip(&outs) {
        let n = a.count() * a.width;
        mem[p.buffers[spec.buffer].allocation].write(&a.bytes()[..n])?;
    }
    Ok(())
}
