//! Buffer assignment with offsets (issue 32 item 4): parameters and constants keep the
//! allocations the builder gave them; every output value gets an allocation of its own
//! (the run hands its memory to the caller); every other temporary lives in one temp
//! block, at an offset the heap simulator chooses best fit by decreasing size among the
//! values live at the same steps ([`super::heap::best_fit`]). `temp_bytes` is that block,
//! as XLA defines it.

use super::heap::{best_fit, peak, Interval};
use crate::{Allocation, AllocationKind, Buffer, BufferId};

/// Alignment of every value in the temp block: XLA:CPU's minimum alignment (16 bytes;
/// the executor's slices need 8, the kernels' unaligned vector loads nothing more).
pub const TEMP_ALIGN: u64 = 16;

/// What [`assign`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Assigned {
    /// The temp block's size.
    pub temp_block_bytes: u64,
    /// Live bytes at the peak step: parameters, constants, outputs and temporaries.
    pub peak_bytes: u64,
}

/// Assigns every buffer the builder left unassigned (those with `defined_at`): output
/// buffers (`outputs`, in output order) to an allocation of their own, the others to
/// slices of the temp block. A buffer live `defined_at..=last_use` never shares bytes
/// with another live at one of those steps.
pub fn assign(
    buffers: &mut [Buffer],
    allocations: &mut Vec<Allocation>,
    outputs: &[BufferId],
) -> Assigned {
    let fixed: u64 = allocations.iter().map(|a| a.bytes).sum();
    let mut ranges: Vec<Interval> = Vec::new();
    let mut temps: Vec<BufferId> = Vec::new();
    for (n, &b) in outputs.iter().enumerate() {
        if buffers[b].defined_at.is_some() && buffers[b].allocation == usize::MAX {
            allocations.push(Allocation {
                kind: AllocationKind::Output(n),
                bytes: buffers[b].bytes,
                offset: None,
            });
            buffers[b].allocation = allocations.len() - 1;
        }
    }
    let mut live: Vec<Interval> = Vec::new();
    for (b, buf) in buffers.iter().enumerate() {
        let Some(start) = buf.defined_at else {
            continue;
        };
        let end = buf.last_use.unwrap_or(start).max(start);
        let iv = Interval {
            bytes: buf.bytes,
            start,
            end,
        };
        live.push(iv);
        if buf.allocation == usize::MAX {
            ranges.push(iv);
            temps.push(b);
        }
    }
    let placed = best_fit(&ranges, TEMP_ALIGN);
    for (&b, &offset) in temps.iter().zip(&placed.offsets) {
        allocations.push(Allocation {
            kind: AllocationKind::Temp,
            bytes: buffers[b].bytes,
            offset: Some(offset),
        });
        buffers[b].allocation = allocations.len() - 1;
    }
    Assigned {
        temp_block_bytes: placed.size,
        peak_bytes: fixed + peak(&live),
    }
}
