//! A thunk's time at the machine's roofline (`hloc compile`'s slow-kernel warnings,
//! `--profile`'s `roof %`): its flops at the peak of what could run them or its bytes at the
//! bandwidth of the level they fit in, whichever is longer.

use device::Device;
use fusion::cost_library::GemmType;
use hlo::{CompId, ElementType, InstrId, Module, Opcode};

use crate::RuntimeError;

/// The operand type of the first dot or convolution among `members` of computation
/// `comp` (what a library GEMM of it would run as); `None` when the kernel contracts
/// nothing.
pub fn contraction_type(module: &Module, comp: CompId, members: &[InstrId]) -> Option<GemmType> {
    let body = module.get_computation(comp)?;
    members.iter().find_map(|&m| {
        let i = body.instr(m);
        matches!(i.opcode(), Opcode::Dot | Opcode::Convolution).then(|| {
            let ty = |k: usize| {
                i.operands()
                    .get(k)
                    .and_then(|&o| body.instr(o).shape().element_type())
                    .unwrap_or(ElementType::F32)
            };
            GemmType::of(ty(0), ty(1))
        })
    })
}

/// Seconds of work of `flops` and `bytes` (read and written once) at `device`'s roofline:
/// `max(flops / peak, bytes / bandwidth)`, the peak being the whole device's library
/// GEMM rate for the operand type (on the path the description's CPU runs it: AMX tiles or
/// not) where the work contracts (`contraction`), else the
/// generated vector code's `f32` rate; the bandwidth that of the level the bytes fit in
/// (DRAM beyond the last cache: a kernel's operands just written by its producer are
/// read from the cache they fit in).
pub fn roofline_seconds(
    device: &Device,
    flops: f64,
    bytes: f64,
    contraction: Option<GemmType>,
) -> f64 {
    let peak = match (contraction, &device.library) {
        (Some(GemmType::Half), Some(l)) if l.half_on_tiles => l.gemm_bf16_flops_per_unit,
        (Some(GemmType::Half), Some(l)) if l.half_on_registers => {
            l.gemm_bf16_registers_flops_per_unit
        }
        (Some(GemmType::F64), Some(l)) => l.gemm_f64_flops_per_unit,
        // Half operands without the tiles are widened and run as the `f32` GEMM.
        (Some(GemmType::F32 | GemmType::Widened | GemmType::Half), Some(l)) => {
            l.gemm_f32_flops_per_unit
        }
        (Some(GemmType::S8), Some(l)) if l.s8_on_tiles => l.gemm_s8_ops_per_unit,
        (Some(GemmType::S8), Some(l)) => l.gemm_s8_portable_ops_per_unit,
        _ => device.compute.f32_flops_per_unit,
    } * f64::from(device.compute.units.max(1));
    (flops / peak).max(bytes / device.reread_bytes_per_s(bytes as u64))
}

/// The `cpu` description with the GEMM paths of the CPU this process runs on
/// ([`backend_cpu::gemm_tiles`]): whether `bf16` and `s8` GEMMs run on AMX tiles, and
/// `bf16` ones without them on AVX512-BF16 register tiles, sets their rate (2-8x apart),
/// and the machines hloc runs on differ in it.
pub(crate) fn cpu_here() -> Result<Device, RuntimeError> {
    let mut cpu = device::load("cpu").map_err(|e| RuntimeError::Pass(e.to_string()))?;
    if let Some(l) = cpu.library.as_mut() {
        let tiles = backend_cpu::gemm_tiles();
        l.half_on_tiles = tiles.half;
        l.half_on_registers = tiles.half_registers;
        l.s8_on_tiles = tiles.s8;
    }
    Ok(cpu)
}
