//! Liveness-based assignment of buffer values to allocations: a temporary takes the
//! smallest free allocation that fits (or grows the largest free one, or gets a new one)
//! when its first writer runs, and frees it after its last reader ran.

use super::{Allocation, AllocationKind, Buffer};

/// Assigns every temporary buffer (those with `defined_at`) to an allocation, appending
/// allocations as needed; returns the peak of live bytes (including the allocations that
/// exist already: parameters and constants).
pub fn assign_temps(
    buffers: &mut [Buffer],
    allocations: &mut Vec<Allocation>,
    thunks: usize,
) -> u64 {
    let fixed: u64 = allocations.iter().map(|a| a.bytes).sum();
    let mut free: Vec<usize> = Vec::new();
    let mut peak = fixed;
    let mut live = fixed;
    for t in 0..thunks {
        let defined: Vec<usize> = (0..buffers.len())
            .filter(|&b| buffers[b].defined_at == Some(t))
            .collect();
        for b in defined {
            let need = buffers[b].bytes;
            let fit = free
                .iter()
                .enumerate()
                .filter(|(_, &a)| allocations[a].bytes >= need)
                .min_by_key(|(_, &a)| allocations[a].bytes)
                .map(|(i, _)| i);
            let grow = || {
                free.iter()
                    .enumerate()
                    .max_by_key(|(_, &a)| allocations[a].bytes)
                    .map(|(i, _)| i)
            };
            let slot = match fit.or_else(grow) {
                Some(i) => free.swap_remove(i),
                None => {
                    allocations.push(Allocation {
                        kind: AllocationKind::Temp,
                        bytes: 0,
                    });
                    allocations.len() - 1
                }
            };
            allocations[slot].bytes = allocations[slot].bytes.max(need);
            buffers[b].allocation = slot;
            live += need;
        }
        peak = peak.max(live);
        for b in buffers.iter() {
            if b.defined_at.is_some() && b.last_use == Some(t) {
                free.push(b.allocation);
                live -= b.bytes;
            }
        }
    }
    peak
}
