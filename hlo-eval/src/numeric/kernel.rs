//! What every kernel shares: why one fails ([`KernelError`]), and how it applies a called
//! computation ([`CallComputation`], implemented by the interpreter).

use hlo::{CompId, Literal};

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
