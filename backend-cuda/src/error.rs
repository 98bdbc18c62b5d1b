//! Errors of printing and compiling CUDA.

/// Why a program could not be printed or compiled as CUDA.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// The kernel uses something the CUDA printer does not print yet.
    #[error("unsupported on CUDA: {what} (kernel `{kernel}`)")]
    Unsupported {
        /// The kernel.
        kernel: String,
        /// What it uses.
        what: String,
    },
    /// NVRTC could not be loaded.
    #[error("NVRTC not found (libnvrtc.so.13): run tools/setup.sh, or put the directory holding it on LD_LIBRARY_PATH")]
    NoNvrtc,
    /// NVRTC rejected the printed module: a bug in hloc.
    #[error("internal error: NVRTC rejected the CUDA module (kernel `{kernel}`):\n{log}")]
    Rejected {
        /// The first kernel named in the log (or `?`).
        kernel: String,
        /// NVRTC's log.
        log: String,
    },
    /// An NVRTC call failed.
    #[error("NVRTC: {0}")]
    Nvrtc(String),
}
