//! Errors of compiling and running a module.

/// Why compiling or running failed.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// Code generation failed (`Unsupported` ops included).
    #[error(transparent)]
    Codegen(#[from] codegen::CodegenError),
    /// An HLO pass failed.
    #[error("pass pipeline: {0}")]
    Pass(String),
    /// The backend failed to compile or run the program.
    #[error(transparent)]
    Backend(#[from] plan::BackendError),
    /// The CUDA backend failed (printing the module, or NVRTC).
    #[error(transparent)]
    Cuda(#[from] crate::CudaError),
    /// An unknown or unreadable device description.
    #[error("device description: {0}")]
    Device(String),
    /// The allocations would exceed the size limit (checked before anything is allocated).
    #[error("the executable needs {bytes} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// The bytes of all allocations.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// No schedule or streaming the planner tried fits `--memory-limit` (the least it
    /// reached and what is live at its peak).
    #[error(transparent)]
    MemoryLimit(#[from] plan::memory::limit::OverLimit),
    /// Any other internal inconsistency.
    #[error("internal error: {0}")]
    Internal(String),
}
