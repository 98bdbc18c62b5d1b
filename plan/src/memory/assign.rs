//! Buffer assignment with offsets (issue 32 items 4 and 1): parameters and constants keep
//! the allocations the builder gave them; every output value gets an allocation of its
//! own (the run hands its memory to the caller). A temporary that dies before an output
//! is written may live inside that output's allocation (XLA's maybe-live-out
//! allocations): the largest temporaries go first, each into the narrowest room any
//! output leaves it. Every other temporary lives in one temp block, at an offset the
//! heap simulator chooses best fit by decreasing size among the values live at the same
//! steps ([`super::heap::best_fit`]). `temp_bytes` is that block, as XLA defines it.

use super::heap::{best_fit, padded, peak, smallest_gap, Interval};
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

/// An output allocation that may hold temporaries before its output is written.
struct Host {
    /// The output's allocation.
    allocation: usize,
    /// Its size.
    bytes: u64,
    /// The first step the output is written at: temporaries living there must end before.
    written_at: usize,
    /// The temporaries placed in it: (live range, offset).
    held: Vec<(Interval, u64)>,
}

impl Host {
    /// The narrowest room for `iv` here, as (width, offset): none where `iv` lives
    /// when the output is written.
    fn room(&self, iv: &Interval) -> Option<(u64, u64)> {
        if iv.end >= self.written_at {
            return None;
        }
        let busy: Vec<(u64, u64)> = self
            .held
            .iter()
            .filter(|(h, _)| h.overlaps(iv))
            .map(|(h, o)| (*o, o + padded(h.bytes, TEMP_ALIGN)))
            .collect();
        // Each value gets its padded room, as in the temp block (a kernel may store up to
        // a whole 16-byte vector at its end): the output's memory is padded too.
        let need = padded(iv.bytes, TEMP_ALIGN);
        smallest_gap(busy, need, need, padded(self.bytes, TEMP_ALIGN))
    }
}

/// Groups of buffers that share one place: each `(output, operand)` pair of `shares` (an
/// in-place kernel, [`super::in_place`]) joins the two; every other buffer is alone. The
/// root of a buffer's group is its smallest member.
fn groups(n: usize, shares: &[(BufferId, BufferId)]) -> Vec<BufferId> {
    let mut root: Vec<BufferId> = (0..n).collect();
    fn find(root: &mut [BufferId], mut b: BufferId) -> BufferId {
        while root[b] != b {
            root[b] = root[root[b]];
            b = root[b];
        }
        b
    }
    for &(o, b) in shares {
        if o >= n || b >= n {
            continue;
        }
        let (x, y) = (find(&mut root, o), find(&mut root, b));
        root[x.max(y)] = x.min(y);
    }
    (0..n).map(|b| find(&mut root, b)).collect()
}

/// Assigns every buffer the builder left unassigned (those with `defined_at`): output
/// buffers (`outputs`, in output order) to an allocation of their own, the others to
/// the outputs' allocations where they die before the output is written, else to slices
/// of the temp block. A buffer live `defined_at..=last_use` never shares bytes with
/// another live at one of those steps, except the pairs of `shares` (`(output, operand)`:
/// a kernel writing `output` over `operand`, which dies there), which take the same
/// bytes: the operand in its output's allocation at offset 0, or both at one offset.
pub fn assign(
    buffers: &mut [Buffer],
    allocations: &mut Vec<Allocation>,
    outputs: &[BufferId],
    shares: &[(BufferId, BufferId)],
) -> Assigned {
    let fixed: u64 = allocations.iter().map(|a| a.bytes).sum();
    let group = groups(buffers.len(), shares);
    let preplaced: Vec<bool> = buffers
        .iter()
        .map(|b| b.defined_at.is_some() && b.allocation != usize::MAX)
        .collect();
    let mut hosts: Vec<Host> = Vec::new();
    // The output allocation holding each group with an output in it.
    let mut hosted_group: std::collections::HashMap<BufferId, usize> = Default::default();
    for (n, &b) in outputs.iter().enumerate() {
        if let (Some(at), usize::MAX) = (buffers[b].defined_at, buffers[b].allocation) {
            allocations.push(Allocation {
                kind: AllocationKind::Output(n),
                bytes: buffers[b].bytes,
                offset: None,
                parent: None,
            });
            buffers[b].allocation = allocations.len() - 1;
            hosted_group.insert(group[b], hosts.len());
            hosts.push(Host {
                allocation: allocations.len() - 1,
                bytes: buffers[b].bytes,
                written_at: at,
                held: Vec::new(),
            });
        }
    }
    // Each group's live range: from its first definition to its last use.
    let mut span: std::collections::BTreeMap<BufferId, Interval> = Default::default();
    for (b, buf) in buffers.iter().enumerate() {
        // A buffer placed before (an output in its donated parameter's allocation,
        // [`super::donate`]) takes no room here.
        let (Some(start), false) = (buf.defined_at, preplaced[b]) else {
            continue;
        };
        let end = buf.last_use.unwrap_or(start).max(start);
        let iv = span.entry(group[b]).or_insert(Interval {
            bytes: buf.bytes,
            start,
            end,
        });
        iv.bytes = iv.bytes.max(buf.bytes);
        iv.start = iv.start.min(start);
        iv.end = iv.end.max(end);
    }
    let live: Vec<Interval> = span.values().copied().collect();
    // A group with an output in it: its temporaries at offset 0 of the output's memory,
    // there until the output is written.
    let mut placed: Vec<(BufferId, u64, Option<usize>)> = Vec::new();
    let mut temps: Vec<(BufferId, Interval)> = Vec::new();
    for (&g, &iv) in &span {
        match hosted_group.get(&g) {
            Some(&h) => {
                let held = Interval {
                    end: hosts[h].written_at,
                    ..iv
                };
                if held.start < held.end {
                    hosts[h].held.push((held, 0));
                }
            }
            None => temps.push((g, iv)),
        }
    }
    for (b, buf) in buffers.iter().enumerate() {
        if buf.allocation == usize::MAX {
            if let Some(&h) = hosted_group.get(&group[b]) {
                placed.push((b, 0, Some(hosts[h].allocation)));
            }
        }
    }
    // Largest first into the outputs' rooms (ties: earlier start, then buffer order).
    temps.sort_by_key(|&(b, iv)| (std::cmp::Reverse(iv.bytes), iv.start, b));
    let mut in_block: Vec<(BufferId, Interval)> = Vec::new();
    // (group, offset, the output allocation holding it or `None` for the block).
    let mut placed_groups: Vec<(BufferId, u64, Option<usize>)> = Vec::new();
    for (g, iv) in temps {
        let best = hosts
            .iter()
            .enumerate()
            .filter_map(|(h, host)| host.room(&iv).map(|(w, o)| (w, h, o)))
            .min();
        match best {
            Some((_, h, offset)) => {
                hosts[h].held.push((iv, offset));
                placed_groups.push((g, offset, Some(hosts[h].allocation)));
            }
            None => in_block.push((g, iv)),
        }
    }
    in_block.sort_by_key(|&(g, _)| g);
    let ranges: Vec<Interval> = in_block.iter().map(|&(_, iv)| iv).collect();
    let block = best_fit(&ranges, TEMP_ALIGN);
    placed_groups.extend(
        in_block
            .iter()
            .zip(&block.offsets)
            .map(|(&(g, _), &o)| (g, o, None)),
    );
    let at: std::collections::HashMap<BufferId, (u64, Option<usize>)> = placed_groups
        .into_iter()
        .map(|(g, o, parent)| (g, (o, parent)))
        .collect();
    for (b, buf) in buffers.iter().enumerate() {
        if buf.allocation == usize::MAX && buf.defined_at.is_some() {
            if let Some(&(o, parent)) = at.get(&group[b]) {
                placed.push((b, o, parent));
            }
        }
    }
    // Allocations in buffer order, whatever holds them.
    placed.sort_by_key(|&(b, _, _)| b);
    for (b, offset, parent) in placed {
        allocations.push(Allocation {
            kind: AllocationKind::Temp,
            bytes: buffers[b].bytes,
            offset: Some(offset),
            parent,
        });
        buffers[b].allocation = allocations.len() - 1;
    }
    Assigned {
        temp_block_bytes: block.size,
        peak_bytes: fixed + peak(&live),
    }
}

/// [`assign`] with the in-place pairs `shares` and without them, keeping the smaller temp
/// block (the pairs on a tie: they lower the peak). A pair lengthens one value's live
/// range, which can keep a later value from reusing its bytes, so sharing is not always
/// the smaller assignment. Returns whether the pairs were kept.
pub fn assign_best(
    buffers: &mut [Buffer],
    allocations: &mut Vec<Allocation>,
    outputs: &[BufferId],
    shares: &[(BufferId, BufferId)],
) -> (Assigned, bool) {
    if shares.is_empty() {
        return (assign(buffers, allocations, outputs, &[]), false);
    }
    let (mut b2, mut a2) = (buffers.to_vec(), allocations.clone());
    let apart = assign(&mut b2, &mut a2, outputs, &[]);
    let shared = assign(buffers, allocations, outputs, shares);
    if apart.temp_block_bytes < shared.temp_block_bytes {
        buffers.clone_from_slice(&b2);
        *allocations = a2;
        return (apart, false);
    }
    (shared, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, bytes: u64, defined_at: usize, last_use: usize) -> Buffer {
        Buffer {
            name: name.into(),
            bytes,
            allocation: usize::MAX,
            defined_at: Some(defined_at),
            last_use: Some(last_use),
        }
    }

    #[test]
    fn temporaries_dying_before_an_output_live_in_it() {
        // a [0,1] and b [1,2] die before the output (written at 3): a, the larger, goes
        // into the output; b is live with a, so it goes to the temp block. c [2,3] is read
        // by the kernel writing the output, so it stays out of it too.
        let mut buffers = vec![
            temp("a", 256, 0, 1),
            temp("b", 128, 1, 2),
            temp("c", 64, 2, 3),
            temp("out", 256, 3, usize::MAX),
        ];
        let mut allocations = Vec::new();
        let r = assign(&mut buffers, &mut allocations, &[3], &[]);
        let out = buffers[3].allocation;
        assert_eq!(allocations[out].kind, AllocationKind::Output(0));
        let a = &allocations[buffers[0].allocation];
        assert_eq!((a.parent, a.offset), (Some(out), Some(0)));
        for t in [1, 2] {
            assert_eq!(allocations[buffers[t].allocation].parent, None);
        }
        assert_eq!(r.temp_block_bytes, 128 + 64);
        assert_eq!(r.peak_bytes, 256 + 128);
    }

    #[test]
    fn an_output_holds_several_temporaries_at_offsets() {
        // Two 64-byte temporaries live together before a 256-byte output: both fit in it,
        // side by side; a third, later, reuses the first's bytes; nothing is left for the
        // temp block. A temporary larger than the output stays out.
        let mut buffers = vec![
            temp("x", 64, 0, 1),
            temp("y", 64, 0, 1),
            temp("z", 64, 2, 2),
            temp("big", 512, 0, 0),
            temp("out", 256, 3, usize::MAX),
        ];
        let mut allocations = Vec::new();
        let r = assign(&mut buffers, &mut allocations, &[4], &[]);
        let out = buffers[4].allocation;
        let at = |b: usize| {
            let a = &allocations[buffers[b].allocation];
            (a.parent, a.offset)
        };
        let (x, y) = (at(0), at(1));
        assert_eq!((x.0, y.0), (Some(out), Some(out)));
        assert_ne!(x.1, y.1);
        assert_eq!(at(2).0, Some(out));
        assert_eq!(at(3).0, None);
        assert_eq!(r.temp_block_bytes, 512);
    }
}
