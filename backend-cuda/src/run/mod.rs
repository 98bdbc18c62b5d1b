//! Running a program on a CUDA device: the [`device::Device`] trait and its two
//! implementations (the GPU through the driver, this CPU through the host emulation), the
//! executor that walks a program over either, and the backend that compiles for them.

pub mod backend;
pub mod cubin_cache;
pub mod cublas_plan;
pub mod device;
pub mod driver_device;
pub mod executable;
pub mod host_device;
pub mod layout;
