//! Errors of [`crate::fuse`].

/// Why a module could not be fused.
#[derive(Debug, thiserror::Error)]
pub enum FusionError {
    /// The input does not verify: the verifier's errors, one per line.
    #[error("the module does not verify:\n{0}")]
    InvalidInput(String),
    /// A pass failed.
    #[error(transparent)]
    Pass(#[from] hlo::pass::PassError),
    /// The fused module does not verify (a bug in a pass).
    #[error("the fused module does not verify:\n{0}")]
    InvalidOutput(String),
}
