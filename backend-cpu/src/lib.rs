//! # backend-cpu — run a [`plan::Program`] on this CPU
//!
//! [`CpuBackend`] prints the program's kernels as C translation units ([`c`]), compiles
//! them in parallel with the system `cc` (`-O2 -ftree-vectorize -march=native
//! -fno-math-errno`, never `-ffast-math`), caches the shared object by content hash and
//! loads it; a [`CpuExecutable`] (the driver's [`plan::Executable`]) runs the thunk
//! sequence on a rayon pool, with library calls (GEMM through faer, sort and top-k,
//! scatter, FFT, LAPACK, RNG) for what no kernel does well.
//!
//! With the CUDA backend, this is the only kind of crate with `unsafe` code: the loader,
//! the kernel calls and the library calls' raw buffers.

mod bound_loop;
pub mod c;
mod cache;
mod cc;
pub mod check_buffers;
mod collective_exec;
mod collective_fold;
mod collective_hub;
mod collective_pack;
mod compile;
mod data;
mod error;
mod exec;
mod executable;
mod gemm;
#[cfg(target_arch = "x86_64")]
mod gemm_amx;
#[cfg(target_arch = "x86_64")]
mod gemm_amx_geometry;
#[cfg(target_arch = "x86_64")]
mod gemm_amx_pack;
#[cfg(target_arch = "x86_64")]
mod gemm_amx_pack_s8;
#[cfg(target_arch = "x86_64")]
mod gemm_amx_tiles;
#[cfg(target_arch = "x86_64")]
mod gemm_bf16;
#[cfg(target_arch = "x86_64")]
mod gemm_bf16_tile;
mod gemm_half;
mod gemm_lhs_pack;
#[cfg(target_arch = "x86_64")]
mod gemm_path;
mod gemm_s8;
#[cfg(target_arch = "x86_64")]
mod gemm_s8_avx2;
#[cfg(target_arch = "x86_64")]
mod gemm_s8_vnni;
mod gemm_small;
mod gemm_small_kernels;
mod gemv;
mod inprocess;
pub mod kernel_calls;
mod kernel_source;
mod launch;
mod library;
mod loaded;
mod memory;
#[cfg(feature = "mpi")]
mod mpi_comm;
mod on_pool;
mod reduce_bytes;
pub mod reuse;
mod run;
mod run_output;
mod streamed_contraction;
mod streamed_rows;
mod thin_gemm;

pub use cache::cache_dir;
pub use cc::{reporting_to, Listener as CompileListener};
/// The object cache's entries and their management (`hloc cache`).
pub mod cache_admin {
    pub use crate::cache::{entries, prune, Entry, DEFAULT_MAX_BYTES};
}
pub use compile::CpuBackend;
pub use error::BackendError;
pub use gemm::{gemm_tiles, GemmTiles};
pub use inprocess::{InProcess, DEFAULT_TIMEOUT as DEFAULT_COLLECTIVE_TIMEOUT};
pub use kernel_source::{KernelSource, UnitPrinter};
#[cfg(feature = "mpi")]
pub use mpi_comm::MpiDevice;
pub use run::{CpuExecutable, CpuOutputs, CpuPrepared};
pub use run_output::CpuOutputBuffer;
