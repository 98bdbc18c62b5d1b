//! The process-wide FFT plans, one planner pair per precision: `rustfft`'s complex
//! planner and `realfft`'s real one, each caching every plan it made, so a length is
//! planned (twiddles computed, algorithm chosen) once per process and every later call
//! of any `fft` thunk takes the plan from the cache.

use std::sync::{Arc, Mutex, OnceLock};

use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftNum, FftPlanner};

/// The planners of one precision.
pub(super) struct Planners<T: FftNum> {
    complex: FftPlanner<T>,
    real: RealFftPlanner<T>,
}

impl<T: FftNum> Planners<T> {
    fn new() -> Self {
        Planners {
            complex: FftPlanner::new(),
            real: RealFftPlanner::new(),
        }
    }

    /// The complex transform of length `n` (unnormalized), forward or inverse.
    pub(super) fn complex(&mut self, n: usize, inverse: bool) -> Arc<dyn Fft<T>> {
        if inverse {
            self.complex.plan_fft_inverse(n)
        } else {
            self.complex.plan_fft_forward(n)
        }
    }

    /// The real-to-complex transform of length `n` (`n/2 + 1` outputs).
    pub(super) fn forward_real(&mut self, n: usize) -> Arc<dyn RealToComplex<T>> {
        self.real.plan_fft_forward(n)
    }

    /// The complex-to-real transform of length `n` (`n/2 + 1` inputs, unnormalized).
    pub(super) fn inverse_real(&mut self, n: usize) -> Arc<dyn ComplexToReal<T>> {
        self.real.plan_fft_inverse(n)
    }
}

/// A precision the FFT library computes in: `f32` for `c64` and `f32` operands, `f64`
/// for `c128` and `f64` ones.
pub(super) trait Precision: FftNum + bytemuck::Pod + Default {
    /// The process-wide planners of this precision.
    fn planners() -> &'static Mutex<Planners<Self>>;
}

impl Precision for f32 {
    fn planners() -> &'static Mutex<Planners<f32>> {
        static PLANS: OnceLock<Mutex<Planners<f32>>> = OnceLock::new();
        PLANS.get_or_init(|| Mutex::new(Planners::new()))
    }
}

impl Precision for f64 {
    fn planners() -> &'static Mutex<Planners<f64>> {
        static PLANS: OnceLock<Mutex<Planners<f64>>> = OnceLock::new();
        PLANS.get_or_init(|| Mutex::new(Planners::new()))
    }
}

/// Runs `f` with the planners of `T` (a poisoned lock is taken over: planners hold no
/// invariant a panicking planner call could break beyond a missing cache entry).
pub(super) fn with_planners<T: Precision, R>(f: impl FnOnce(&mut Planners<T>) -> R) -> R {
    let mut guard = T::planners()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f(&mut guard)
}
