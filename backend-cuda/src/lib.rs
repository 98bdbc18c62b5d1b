//! # backend-cuda — kernels for NVIDIA GPUs
//!
//! The kernel IR's blocks of threads become CUDA blocks and threads: [`module_cu`] prints
//! one self-contained CUDA C module per program (NVRTC ships no headers, so the module
//! brings its own typedefs and the C prelude's helpers as `__device__` functions), and
//! [`compile_cubin`] compiles it with NVRTC for sm_90, keeping what `ptxas` reports of each
//! kernel (registers, shared bytes, spills). The printer overrides only what CUDA does
//! differently from the CPU's C printer ([`backend_cpu::c::CDialect`]), as TVM's
//! `CodeGenCUDA` does over `CodeGenC`.
//!
//! Without a GPU, [`host_unit`] compiles the same CUDA text as host C++ after an emulation
//! header (threads as fibers, real barriers, shared memory per block), so the printer, the
//! launch dimensions and the shared-memory logic are tested against the CPU's kernels.
//!
//! NVRTC is loaded at run time (cudarc's dynamic loading): the crate builds on machines
//! without CUDA, and compiling says clearly when NVRTC is missing.

mod bounds;
mod error;
mod host;
mod index32;
mod nvrtc;
mod prelude;
mod printer;
mod run;
mod unroll;

pub use bounds::{compile_without_spills, min_blocks};
pub use error::CudaError;
pub use host::{host_entry, host_kernel_source, host_unit, EMULATION_HEADER};
pub use nvrtc::{compile_cubin, nvrtc_present, nvrtc_version, Cubin, KernelResources};
pub use prelude::cuda_prelude;
pub use printer::{kernel_cu, kernel_cu_bounded, module_cu, module_cu_bounded, CudaDialect};
pub use run::backend::{CudaBackend, CudaTarget};
pub use run::cublas_plan::{cublas_gemm, CublasGemm, Op};
pub use run::device::{DevPtr, Device};
pub use run::driver_device::{cublas_present, driver_present, DriverDevice};
pub use run::executable::{CudaExecutable, CudaOutputs};
pub use run::host_device::HostDevice;
pub use run::layout::{device_layout, DeviceLayout};
