//! What the CUDA executor asks of a device: memory, copies, kernel launches on one stream
//! and GEMMs. [`crate::DriverDevice`] is a GPU through the CUDA driver and cuBLAS;
//! [`crate::HostDevice`] is this CPU running the CUDA host emulation's kernels, so every
//! step of the executor is tested on a machine without a GPU and only the driver calls
//! themselves need one.

use plan::GemmShape;

use crate::error::CudaError;

/// A device address (a `CUdeviceptr` on the GPU, a host address on the host device).
pub type DevPtr = u64;

/// A device the executor runs a program on. Work is ordered as issued (one stream);
/// [`Device::download`] and [`Device::synchronize`] wait for everything issued before.
pub trait Device: Send + Sync {
    /// The device's name, for messages and profiles.
    fn name(&self) -> String;

    /// Allocates `bytes` bytes (at least one), aligned to 256 bytes.
    fn alloc(&self, bytes: u64) -> Result<DevPtr, CudaError>;

    /// Frees memory [`Device::alloc`] returned.
    fn free(&self, ptr: DevPtr);

    /// Copies `data` to `dst`; `data` may be reused when this returns.
    fn upload(&self, dst: DevPtr, data: &[u8]) -> Result<(), CudaError>;

    /// Copies `out.len()` bytes at `src` into `out`, after all work issued before.
    fn download(&self, src: DevPtr, out: &mut [u8]) -> Result<(), CudaError>;

    /// Copies `bytes` bytes from `src` to `dst` on the device (the ranges do not overlap).
    fn copy(&self, dst: DevPtr, src: DevPtr, bytes: u64) -> Result<(), CudaError>;

    /// Launches kernel `kernel` (its index in the program) over `blocks` blocks of
    /// `threads` threads, its buffer parameters bound to `args`.
    fn launch(
        &self,
        kernel: usize,
        blocks: u32,
        threads: u32,
        args: &[DevPtr],
    ) -> Result<(), CudaError>;

    /// `out = lhs x rhs` per batch element, as `shape` describes (`k > 0`).
    fn gemm(
        &self,
        shape: &GemmShape,
        lhs: DevPtr,
        rhs: DevPtr,
        out: DevPtr,
    ) -> Result<(), CudaError>;

    /// Waits for all work issued so far.
    fn synchronize(&self) -> Result<(), CudaError>;
}
