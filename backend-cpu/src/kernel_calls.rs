//! How often a run calls each kernel, estimated from the thunk sequence: the C printer
//! compiles a kernel that touches few elements at `-O1` with libm's scalar functions
//! because it "runs in microseconds either way", which holds for one call, not for a call
//! in every iteration of a scan (ctc_loss_grad's two [8,60] logaddexp kernels in a
//! 400-trip loop: 58 ms each at `-O1` with `log1pf`, 0.4 ms at `-O2` with the vector
//! functions). The printer weighs a kernel's elements by these counts.

use plan::{Program, Thunk};

/// The trips assumed for a while loop whose trip count the plan does not know (a bound
/// computed at run time, a convergence test): a loop's body is where a program spends
/// its time (scans, samplers, solvers), so a loop counts as hot. A finite figure keeps a body's scalar kernels (a counter's increment,
/// a one-element carry) at `-O1`: with 64 trips a kernel of 256 elements reaches
/// [`crate::c::SMALL_KERNEL_ELEMENTS`] and compiles for speed.
pub const ASSUMED_WHILE_TRIPS: u64 = 64;

/// Each kernel's estimated calls in one run of `program` (indexed as its kernels): 1 for
/// a kernel the top level runs once, times each enclosing while loop's known trips
/// (`Thunk::While::trips`; [`ASSUMED_WHILE_TRIPS`] when unknown), its condition and body
/// alike; summed over the thunks that run it, at least 1
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
            Thunk::While {
                cond, body, trips, ..
            } => {
                let inner = times.saturating_mul(trips.unwrap_or(ASSUMED_WHILE_TRIPS));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The calls per run of the kernel that doubles the loop's `f32[4]` state, for a loop
    /// from 0 below `bound` by 1.
    fn body_calls(bound: &str) -> u64 {
        let text = format!(
            "HloModule m\ncond {{\n  p = (s32[], f32[4]) parameter(0)\n  \
             i = s32[] get-tuple-element(p), index=0\n  n = s32[] {bound}\n  \
             ROOT lt = pred[] compare(i, n), direction=LT\n}}\n\
             body {{\n  p = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
             x = f32[4] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  i1 = s32[] add(i, one)\n  \
             x1 = f32[4] add(x, x)\n  ROOT t = (s32[], f32[4]) tuple(i1, x1)\n}}\n\
             ENTRY e {{\n  x = f32[4] parameter(0)\n  z = s32[] constant(0)\n  \
             t = (s32[], f32[4]) tuple(z, x)\n  w = (s32[], f32[4]) while(t), condition=cond, body=body\n  \
             ROOT r = f32[4] get-tuple-element(w), index=1\n}}\n"
        );
        let m = hlo::parse_module(&text).expect("parses");
        let p = plan::build_program(&m).expect("builds");
        let k = p
            .kernels
            .iter()
            .position(|k| k.name.ends_with("_x1"))
            .expect("the doubling kernel");
        calls_per_run(&p)[k]
    }

    #[test]
    fn a_loop_weighs_by_its_known_trips_else_the_assumed_count() {
        assert_eq!(body_calls("constant(400)"), 400);
        assert_eq!(body_calls("constant(0)"), 1);
        // A bound computed from the counter: unknown, so the assumed trips.
        assert_eq!(body_calls("add(i, i)"), ASSUMED_WHILE_TRIPS);
    }
}
