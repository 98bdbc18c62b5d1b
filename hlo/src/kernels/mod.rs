//! Numeric kernels of the reference evaluator: the operations whose semantics take more
//! than an elementwise loop (dot, convolution, gather, scatter, sort, top-k,
//! reduce-window, select-and-scatter, rng-bit-generator, fft, cholesky,
//! triangular-solve and the LAPACK custom calls JAX emits for CPU).
//!
//! The interpreter ([`crate::eval`] once merged) asks [`handles`] whether an instruction
//! is one of these, and calls [`evaluate`] with the operand values; called computations
//! (comparators, scatter updates, window reducers) are applied through
//! [`CallComputation`], with a native fast path for the scalar reducers
//! [`simple_reducer`] recognises.
//!
//! Values are [`Literal`]s in row-major logical order (layouts do not matter here).
//! Numeric kernels compute in a widened domain (`f32` for `f32`/`f16`/`bf16`, `f64`,
//! wrapping 64-bit integers, complex) and round once to the result type.
//!
//! Deliberately unsupported: `rng` (XLA:CPU draws it from a process-wide seed, so its
//! values are not a function of the module and its inputs).

mod conv;
mod dot;
mod fft;
mod gather;
mod numeric;
mod reducer;
mod rng;
mod scatter;
mod sort;
mod util;
mod window;

pub use reducer::{simple_reducer, Reducer};

use crate::{CompId, Instruction, Literal, Module, Opcode};

/// Applies a called computation to argument values; implemented by the interpreter.
pub trait CallComputation {
    /// Evaluates computation `comp` of the module on `args` (one per parameter).
    fn call(&mut self, comp: CompId, args: &[Literal]) -> Result<Literal, KernelError>;
}

/// Why a kernel could not produce a value.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The instruction is valid HLO but this evaluator does not implement it.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The instruction or its operands are malformed (wrong shapes, attributes, types).
    #[error("invalid: {0}")]
    Invalid(String),
    /// A called computation failed.
    #[error("called computation failed: {0}")]
    Call(Box<dyn std::error::Error + Send + Sync>),
}

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
        | Opcode::Fft => true,
        Opcode::CustomCall => instr.custom_call_target().is_some_and(|t| t == "TopK"),
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
        Opcode::Sort => sort::sort(instr, operands, calls),
        Opcode::TopK => sort::topk(instr, operands),
        Opcode::ReduceWindow => window::reduce_window(module, instr, operands, calls),
        Opcode::SelectAndScatter => window::select_and_scatter(module, instr, operands, calls),
        Opcode::CustomCall => match instr.custom_call_target() {
            Some("TopK") => sort::topk_custom_call(module, instr, operands, calls),
            other => Err(KernelError::Unsupported(format!(
                "custom-call target {:?} is not implemented",
                other.unwrap_or("<none>")
            ))),
        },
        Opcode::Rng => Err(KernelError::Unsupported(
            "rng: XLA draws its values from a process-wide seed, so they are not reproducible"
                .into(),
        )),
        op => Err(KernelError::Unsupported(format!(
            "{op} is not a kernel of the reference evaluator"
        ))),
    }
}
