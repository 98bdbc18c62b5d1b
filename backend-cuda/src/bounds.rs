//! Launch bounds for the kernels `ptxas` spills: a kernel that spills under
//! `__launch_bounds__(T)` is compiled again, alone, under `__launch_bounds__(T, B)` for
//! register budgets of 32, 64, 128 and 255 per thread (B = 65,536 registers per
//! multiprocessor / (budget × T) blocks, at most 32), from the smallest budget not below
//! the registers it used; the first budget without a spill is kept, and the module is
//! printed and compiled again with it.
//!
//! Why: given only the thread count, `ptxas` aims at full occupancy (32 registers for 128
//! threads) and would rather spill a few bytes than use more registers (up1
//! gpt_train_step `scatter_add_7`: 32 registers and 24 bytes of spills, a binary search
//! and 32 chunks of guarded positions; with B = 16 it uses 30 registers and spills
//! nothing). Given B it allocates to the budget B allows. Measured over the 80 fresh
//! programs' 5,843 kernels: the 5 spilling kernels reach 0 this way, while a bound on
//! every kernel raised 995 kernels' registers (130,313 -> 144,012 in all) and lowered
//! their occupancy for no spill anywhere else, so only spilling kernels get one.

use std::collections::HashMap;

use codegen::kir::Kernel;

use crate::error::CudaError;
use crate::nvrtc::{compile_cubin, Cubin, KernelResources};
use crate::printer::module_cu_bounded;

/// The register file of one multiprocessor (sm_90: 64 Ki 32-bit registers).
const REGISTERS_PER_SM: u32 = 65536;
/// The most blocks one multiprocessor holds at once (sm_90).
const MAX_BLOCKS_PER_SM: u32 = 32;
/// The register budgets per thread tried, smallest first (255 is the hardware's limit).
const BUDGETS: [u32; 4] = [32, 64, 128, 255];

/// Whether `ptxas` reports spills for `k`.
fn spills(k: &KernelResources) -> bool {
    k.spill_stores + k.spill_loads > 0
}

/// The blocks per multiprocessor that leave `budget` registers to each of `threads`
/// threads.
pub fn min_blocks(budget: u32, threads: u32) -> u32 {
    (REGISTERS_PER_SM / (budget * threads.max(1))).clamp(1, MAX_BLOCKS_PER_SM)
}

/// `source` (`module_cu(kernels)`) compiled by NVRTC for `arch`; when a kernel spills,
/// the module printed again with launch bounds for the spilling kernels (see the module
/// doc) and compiled again. Returns the module NVRTC compiled last (`None`: `source`
/// itself) and its cubin. A kernel that spills under every budget keeps the budget with
/// the fewest spilled bytes; its spills stay in the cubin's report.
pub fn compile_without_spills(
    kernels: &[Kernel],
    source: &str,
    arch: &str,
) -> Result<(Option<String>, Cubin), CudaError> {
    let cubin = compile_cubin(source, arch)?;
    let spilling: Vec<&KernelResources> = cubin.kernels.iter().filter(|k| spills(k)).collect();
    if spilling.is_empty() {
        return Ok((None, cubin));
    }
    let mut bounds = HashMap::new();
    for r in spilling {
        let Some(k) = kernels.iter().find(|k| k.name == r.name) else {
            continue;
        };
        if let Some(b) = bound_for(k, r, arch)? {
            bounds.insert(k.name.clone(), b);
        }
    }
    if bounds.is_empty() {
        return Ok((None, cubin));
    }
    let bounded = module_cu_bounded(kernels, &bounds)?;
    let cubin = compile_cubin(&bounded, arch)?;
    Ok((Some(bounded), cubin))
}

/// The blocks per multiprocessor for kernel `k` (`unbounded`: what `ptxas` reported of
/// it without a bound): the first budget from [`BUDGETS`] without a spill, else the one
/// spilling least; `None` when no budget spills less than no bound.
fn bound_for(
    k: &Kernel,
    unbounded: &KernelResources,
    arch: &str,
) -> Result<Option<u32>, CudaError> {
    let mut best = (unbounded.spill_stores + unbounded.spill_loads, None);
    let used = unbounded.registers;
    for budget in BUDGETS.into_iter().filter(|&b| b >= used || b == 255) {
        let b = min_blocks(budget, u32::try_from(k.grid.threads).unwrap_or(u32::MAX));
        let alone = module_cu_bounded(
            std::slice::from_ref(k),
            &HashMap::from([(k.name.clone(), b)]),
        )?;
        let cubin = compile_cubin(&alone, arch)?;
        let Some(r) = cubin.kernels.iter().find(|r| r.name == k.name) else {
            continue;
        };
        let bytes = r.spill_stores + r.spill_loads;
        if bytes == 0 {
            return Ok(Some(b));
        }
        if bytes < best.0 {
            best = (bytes, Some(b));
        }
    }
    Ok(best.1)
}

#[cfg(test)]
mod tests {
    use super::min_blocks;

    #[test]
    fn blocks_per_multiprocessor_leave_the_budget_to_each_thread() {
        // 128 threads: 16 blocks leave 32 registers each, 8 leave 64, 2 leave 256 (the
        // hardware's 255).
        assert_eq!(min_blocks(32, 128), 16);
        assert_eq!(min_blocks(64, 128), 8);
        assert_eq!(min_blocks(255, 128), 2);
        // At most 32 resident blocks; at least one.
        assert_eq!(min_blocks(32, 32), 32);
        assert_eq!(min_blocks(255, 1024), 1);
    }
}
