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
    /// No CUDA driver library could be loaded.
    #[error("no CUDA driver (libcuda.so.1) on this machine; use --backend cuda-host")]
    NoDriver,
    /// cuBLAS could not be loaded (the program has GEMMs).
    #[error("cuBLAS not found (libcublas.so.13): put the directory holding it on LD_LIBRARY_PATH")]
    NoCublas,
    /// A CUDA driver call failed.
    #[error("CUDA driver: {0}")]
    Driver(String),
    /// A cuBLAS call failed.
    #[error("cuBLAS: {0}")]
    Cublas(String),
    /// The host device refused an access (outside its allocations) or could not run a
    /// step: a bug in the executor.
    #[error("host device: {0}")]
    Host(String),
    /// A step of the program the CUDA executor does not run.
    #[error("unsupported on CUDA: {0}")]
    UnsupportedStep(String),
}

impl From<CudaError> for plan::BackendError {
    fn from(e: CudaError) -> plan::BackendError {
        match e {
            CudaError::NoDriver | CudaError::NoCublas | CudaError::NoNvrtc => {
                plan::BackendError::Load {
                    path: match e {
                        CudaError::NoDriver => "libcuda.so.1",
                        CudaError::NoCublas => "libcublas.so.13",
                        _ => "libnvrtc.so.13",
                    }
                    .into(),
                    message: e.to_string(),
                }
            }
            CudaError::Unsupported { .. } | CudaError::UnsupportedStep(_) => {
                plan::BackendError::Unsupported {
                    printer: "cuda",
                    what: e.to_string(),
                }
            }
            e => plan::BackendError::Internal(e.to_string()),
        }
    }
}
