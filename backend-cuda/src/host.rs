//! The CUDA host emulation's units: the exact CUDA module that NVRTC compiles, after the
//! emulation header (`host/emulation.h`: threads as fibers with real barriers, shared
//! memory per block, `HLOC_CUDA_HOST_ORDER=reverse`), compiled as host C++. Each kernel
//! gets a host entry point with the CPU kernels' signature, so the CPU's compile, cache,
//! load and launch path runs it.

use std::fmt::Write as _;

use backend_cpu::c::c_type;
use backend_cpu::KernelSource;
use codegen::kir::{has_barrier, Access, Kernel};

use crate::error::CudaError;
use crate::printer::module_cu;

/// The emulation header.
pub const EMULATION_HEADER: &str = include_str!("host/emulation.h");

/// The host entry point of kernel `name`: `void NAME_host(void *const *bufs, int64_t
/// block_begin, int64_t block_end)` runs blocks `[block_begin, block_end)`.
pub fn host_entry(name: &str) -> String {
    format!("{name}_host")
}

/// The CPU backend's printer for the host emulation: one C++ unit of the whole program,
/// entry points [`host_entry`]; compiled by a C++ compiler (`c++`).
pub fn host_kernel_source() -> KernelSource {
    KernelSource {
        name: "cuda-host",
        source: |kernels, _| host_unit(kernels).map_err(|e| e.to_string()),
        units: |kernels, _, _, _| {
            host_unit(kernels)
                .map(|u| vec![u])
                .map_err(|e| e.to_string())
        },
        entry: |name| host_entry(name),
    }
}

/// One host C++ unit for `kernels`: the emulation header, the CUDA module as NVRTC
/// compiles it, and a host entry point per kernel.
pub fn host_unit(kernels: &[Kernel]) -> Result<String, CudaError> {
    let mut out = String::from(EMULATION_HEADER);
    out.push_str(&module_cu(kernels)?);
    for k in kernels {
        let args: Vec<String> = k
            .buffers
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let cq = if b.access == Access::In { "const " } else { "" };
                format!("({cq}{} *)bufs[{i}]", c_type(b.ty))
            })
            .collect();
        // The block's body is a plain function of the buffers, passed by pointer: a
        // lambda through `std::function` cost the C++ compiler about twice as much per
        // kernel (the emulation's compile dominates `cuda-host` test time).
        let _ = write!(
            out,
            "\nstatic void {name}_block(void *const *bufs) {{ {name}({args}); }}\n\
             extern \"C\" void {entry}(void *const *bufs, int64_t block_begin, int64_t block_end) {{\n  \
             gridDim = {{{blocks}u, 1u, 1u}};\n  \
             for (int64_t b = block_begin; b < block_end; ++b) {{\n    \
             blockIdx = {{(unsigned int)b, 0u, 0u}};\n    \
             hloc_host::run_block({threads}u, {fibers}, {name}_block, bufs);\n  \
             }}\n}}\n",
            entry = host_entry(&k.name),
            blocks = k.grid.blocks,
            threads = k.grid.threads,
            fibers = has_barrier(&k.body),
            name = k.name,
            args = args.join(", "),
        );
    }
    Ok(out)
}
