//! How often a run calls each kernel, estimated from the thunk sequence: the C printer
//! compiles a kernel that touches few elements at `-O1` with libm's scalar functions
//! because it "runs in microseconds either way", which holds for one call, not for a call
//! in every iteration of a scan (ctc_loss_grad's two [8,60] logaddexp kernels in a
//! 400-trip loop: 58 ms each at `-O1` with `log1pf`, 0.4 ms at `-O2` with the vector
//! functions). The printer weighs a kernel's elements by these counts.

use plan::{Program, Thunk};

/// The trips assumed for a while loop: the plan does not carry the trip count, and a
/// loop's body is where a program spends its time (scans, samplers, solvers), so a loop
/// counts as hot. A finite figure keeps a body's scalar kernels (a counter's increment,
/// a one-element carry) at `-O1`: with 64 trips a kernel of 256 elements reaches
/// [`crate::c::SMALL_KERNEL_ELEMENTS`] and compiles for speed.
pub const ASSUMED_WHILE_TRIPS: u64 = 64;

/// Each kernel's estimated calls in one run of `program` (indexed as its kernels): 1 for
/// a kernel the top level runs once, times [`ASSUMED_WHILE_TRIPS`] per enclosing while
/// loop (its condition and body alike); summed over the thunks that run it, at least 1
/// (a kernel no thunk names, e.g. a library routine's comparator, counts as called once).
pub fn calls_per_run(program: &Program) -> Vec<u64> {
    let mut calls = vec![0u64; program.kernels.len()];
    count(&program.thunks, 1, &mut calls);
    for c in &mut calls {
        *c = (*c).max(1);
    }
    calls
}

fn add(calls: &mut [u64], kernel: usize, times: u64) {
    if let Some(c) = calls.get_mut(kernel) {
        *c = c.saturating_add(times);
    }
}

fn count(thunks: &[Thunk], times: u64, calls: &mut [u64]) {
    for t in thunks {
        match t {
            Thunk::Kernel { kernel, .. } => add(calls, *kernel, times),
            Thunk::While { cond, body, .. } => {
                let inner = times.saturating_mul(ASSUMED_WHILE_TRIPS);
                count(cond, inner, calls);
                count(body, inner, calls);
            }
            Thunk::Conditional { branches, .. } => {
                for (b, _) in branches {
                    count(b, times, calls);
                }
            }
            Thunk::StreamedGemm { producer, gemm, .. } => {
                count(std::slice::from_ref(&**producer), times, calls);
                count(std::slice::from_ref(&**gemm), times, calls);
            }
            // A library routine's kernels (comparators, scalar functions) each touch a
            // few scalars; they keep the count of 1 they had before this estimate.
            Thunk::Library { .. }
            | Thunk::Gemm { .. }
            | Thunk::Collective { .. }
            | Thunk::Copy { .. } => {}
        }
    }
}
