//! What a planned kernel's grid changes in its predicted time: the CPU runtime runs a kernel
//! of one block, or one touching fewer than [`PARALLEL_MIN_ELEMENTS`] elements, on the
//! calling thread (backend-cpu's `launch::runs_on_one_thread`): one core computes it, and
//! the call is a plain function call, not a hand-off to the thread pool and back. The
//! fusion passes cannot see this (the grid comes from tiling, after fusion), so
//! [`fusion::cost::CostModel::kernel`] prices every kernel as split over all cores with the
//! pool's `launch_s`; the prediction of a planned thunk knows its grid and prices what runs.
//!
//! Measured on the fresh programs (/tmp/up1, up3-up7, load 8): the scalar kernels of loop
//! bodies (`add` of a counter, one block) took 0.06-0.09 us a call where the pool's 1.5 us
//! was predicted (19x over), and the 1-10 us kernels, most of them under 2^17 elements,
//! read 2.7x over.

use device::Device;
use fusion::cost::KernelCost;

/// Elements (the largest buffer a kernel reads or writes) below which the CPU runtime runs
/// a kernel on the calling thread: backend-cpu's `launch::PARALLEL_MIN_ELEMENTS` (private
/// there; the runtime's prediction mirrors it as the fusion model mirrors the GEMM's
/// one-thread threshold in `fusion::cost::GEMM_ONE_THREAD_MULTIPLY_ADDS`).
pub(crate) const PARALLEL_MIN_ELEMENTS: i64 = 1 << 17;

/// Seconds of one kernel call on the calling thread beyond its work: binding the argument
/// pointers and the call (the profile's timer included). A one-block scalar `add` in a loop
/// body measured 0.06-0.09 us per call.
pub(crate) const INLINE_CALL_S: f64 = 1e-7;

/// Whether a kernel of `blocks` blocks touching `elements` elements runs on the calling
/// thread alone (with more than one thread in the pool).
pub(crate) fn runs_on_one_thread(blocks: i64, elements: i64) -> bool {
    blocks <= 1 || elements < PARALLEL_MIN_ELEMENTS
}

/// The modelled seconds of a kernel of cost `c` run on the calling thread of `device`:
/// its compute on one core of the `units` the model shared it over, its memory time as
/// modelled (the bandwidths are measured on one core), and an inline call in place of the
/// pool's launch.
pub(crate) fn on_one_thread(c: &KernelCost, device: &Device) -> f64 {
    let units = f64::from(device.compute.units.max(1));
    c.memory_s.max(c.compute_s * units) + INLINE_CALL_S
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small kernel is one core's compute and an inline call; the split threshold is the
    /// backend's.
    #[test]
    fn a_kernel_on_the_calling_thread_takes_one_core_and_no_pool_launch() {
        let cpu = device::load("cpu").unwrap();
        let c = KernelCost {
            time_s: 3e-6 + cpu.kernel.launch_s,
            memory_s: 1e-6,
            compute_s: 3e-6,
            launch_s: cpu.kernel.launch_s,
            ..KernelCost::default()
        };
        let one = on_one_thread(&c, &cpu);
        assert_eq!(one, 3e-6 * f64::from(cpu.compute.units) + INLINE_CALL_S);
        // Memory bound: the modelled memory time stays.
        let m = KernelCost {
            memory_s: 1e-5,
            ..c.clone()
        };
        assert_eq!(on_one_thread(&m, &cpu), 1e-5 + INLINE_CALL_S);
        assert!(runs_on_one_thread(1, 1 << 24));
        assert!(runs_on_one_thread(64, (1 << 17) - 1));
        assert!(!runs_on_one_thread(64, 1 << 17));
    }
}
