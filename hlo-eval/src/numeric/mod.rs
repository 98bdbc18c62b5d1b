//! Numeric routines of the reference evaluator: the operations whose semantics take more
//! than an elementwise loop (dot, ragged-dot, convolution, gather, scatter, sort, top-k,
//! reduce-window, select-and-scatter, rng-bit-generator, fft, cholesky,
//! triangular-solve, the batch-norm ops, and the LAPACK custom calls JAX emits for CPU).
//!
//! The interpreter ([`crate::Evaluator`]) asks [`handles`](crate::numeric::handles) whether an
//! instruction is one of these, and calls [`evaluate`](crate::numeric::evaluate) with
//! the operand values; called computations (comparators, scatter updates, window
//! reducers) are applied through [`CallComputation`](crate::numeric::CallComputation),
//! with native fast paths for the scalar reducers
//! [`hlo::ir::reducer::classify`] recognises and for comparators
//! made of scalar compare/select/bitcast/logic ops.
//!
//! Values are [`Literal`](hlo::Literal)s in row-major logical order (layouts do not
//! matter here). Numeric kernels compute in a widened domain (`f32` for
//! `f32`/`f16`/`bf16`, `f64`, wrapping 64-bit integers, complex; `f64` for fft and
//! linear algebra) and round once to the result type.
//!
//! The XLA semantics the compiled CPU backend shares are public here as pure functions
//! on row-major values and index vectors: [`fft_values`] (with a [`LineDft`]; its shape
//! rules [`FftGeometry`] and IRFFT's [`ignore_edge_imaginary`] also serve the backend's
//! own transforms), [`rng_bits`], [`ScatterIndexing`] and [`WindowTaps`]
//! (select-and-scatter's choice).
//!
//! `rng` draws from its distribution with a deterministic per-instruction stream
//! (`rng_dist.rs`): XLA:CPU seeds it process-wide, so no recorded output can be matched.

mod batchnorm;
mod conv;
mod dot;
mod eigen;
pub mod eigen_call;
pub mod eigen_check;
mod fft;
mod fft_lines;
mod gather;
mod kernel;
mod linalg;
pub mod prng;
mod ragged;
mod reducer;
mod rng;
mod rng_bits;
mod rng_dist;
mod scalar;
mod scaled_dot;
mod scatter;
mod scatter_index;
mod sort;
mod util;
mod widen;
mod window;
mod window_scan;
mod window_taps;

pub use fft::{fft_values, ignore_edge_imaginary, FftGeometry, FftType};
pub use fft_lines::{LineDft, ReferenceDft};
pub use kernel::{CallComputation, KernelError};
pub use linalg::{geqrf_f64, orgqr_f64};
pub use rng_bits::{rng_bits, RngAlgorithm};
pub use scatter_index::{ScatterDims, ScatterIndexing};
pub use sort::merge_sort;
pub use window_taps::WindowTaps;

use hlo::{Instruction, Literal, Module, Opcode};

/// The LAPACK custom-call targets (XLA:CPU FFI names) the kernels implement.
const LAPACK_TARGETS: &[&str] = &[
    "lapack_spotrf_ffi",
    "lapack_dpotrf_ffi",
    "lapack_cpotrf_ffi",
    "lapack_zpotrf_ffi",
    "lapack_strsm_ffi",
    "lapack_dtrsm_ffi",
    "lapack_ctrsm_ffi",
    "lapack_ztrsm_ffi",
    "lapack_sgetrf_ffi",
    "lapack_dgetrf_ffi",
    "lapack_cgetrf_ffi",
    "lapack_zgetrf_ffi",
    "lapack_sgeqrf_ffi",
    "lapack_dgeqrf_ffi",
    "lapack_cgeqrf_ffi",
    "lapack_zgeqrf_ffi",
    "lapack_sorgqr_ffi",
    "lapack_dorgqr_ffi",
    "lapack_cungqr_ffi",
    "lapack_zungqr_ffi",
    "lapack_ssyevd_ffi",
    "lapack_dsyevd_ffi",
    "lapack_sgesdd_ffi",
    "lapack_dgesdd_ffi",
];

/// True for the instructions [`evaluate`] implements.
pub fn handles(op: Opcode, instr: &Instruction) -> bool {
    match op {
        Opcode::Dot
        | Opcode::Convolution
        | Opcode::Gather
        | Opcode::Scatter
        | Opcode::Sort
        | Opcode::TopK
        | Opcode::ReduceWindow
        | Opcode::SelectAndScatter
        | Opcode::RngBitGenerator
        | Opcode::Fft
        | Opcode::Cholesky
        | Opcode::TriangularSolve
        | Opcode::BatchNormTraining
        | Opcode::BatchNormInference
        | Opcode::BatchNormGrad
        | Opcode::RaggedDot
        | Opcode::ScaledDot
        | Opcode::Rng => true,
        Opcode::CustomCall => instr
            .custom_call_target()
            .is_some_and(|t| t == "TopK" || LAPACK_TARGETS.contains(&t)),
        _ => false,
    }
}

/// Evaluates `instr` on `operands`; the result has `instr.shape()` (a tuple for
/// multi-output instructions).
pub fn evaluate(
    module: &Module,
    instr: &Instruction,
    operands: &[&Literal],
    calls: &mut dyn CallComputation,
) -> Result<Literal, KernelError> {
    match instr.opcode() {
        Opcode::Dot => dot::dot(instr, operands),
        Opcode::Convolution => conv::convolution(instr, operands),
        Opcode::Gather => gather::gather(instr, operands),
        Opcode::Scatter => scatter::scatter(module, instr, operands, calls),
        Opcode::RngBitGenerator => rng::rng_bit_generator(instr, operands),
        Opcode::Fft => fft::fft(instr, operands),
        Opcode::Cholesky => linalg::cholesky_op(instr, operands),
        Opcode::TriangularSolve => linalg::triangular_solve_op(instr, operands),
        Opcode::BatchNormTraining => batchnorm::training(instr, operands),
        Opcode::BatchNormInference => batchnorm::inference(instr, operands),
        Opcode::BatchNormGrad => batchnorm::grad(instr, operands),
        Opcode::RaggedDot => ragged::ragged_dot(instr, operands),
        Opcode::ScaledDot => scaled_dot::scaled_dot(instr, operands),
        Opcode::Sort => sort::sort(module, instr, operands, calls),
        Opcode::TopK => sort::topk(instr, operands),
        Opcode::ReduceWindow => window::reduce_window(module, instr, operands, calls),
        Opcode::SelectAndScatter => window::select_and_scatter(module, instr, operands, calls),
        Opcode::CustomCall => match instr.custom_call_target() {
            Some("TopK") => sort::topk_custom_call(module, instr, operands, calls),
            Some(t) if t.ends_with("syevd_ffi") || t.ends_with("gesdd_ffi") => {
                eigen_call::evaluate(t, instr, operands)
            }
            Some(t) if LAPACK_TARGETS.contains(&t) => {
                linalg::lapack_custom_call(t, instr, operands)
            }
            other => Err(KernelError::Unsupported(format!(
                "custom-call target {:?} is not implemented",
                other.unwrap_or("<none>")
            ))),
        },
        Opcode::Rng => rng_dist::rng(instr, operands),
        op => Err(KernelError::Unsupported(format!(
            "{op} is not a kernel of the reference evaluator"
        ))),
    }
}
