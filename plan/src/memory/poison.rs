//! What the poison mode (`HLOC_CHECK_BUFFERS=1`, issue 32 item 8) checks around each thunk
//! of the entry sequence: which buffers the thunk may change (those it names as written
//! and those it defines) and which die there (their bytes may be poisoned once no value
//! still live shares them). The backend applies it with the run's real addresses, so a
//! wrong offset in the assignment shows as a changed live value or a poisoned read, not as
//! an output that happens to match.

use crate::thunk_names::each_access;
use crate::{BufferId, Program};

/// One entry thunk's effect on the buffers, as the plan states it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThunkBuffers {
    /// Buffers the thunk may change: those it (or a sequence nested in it) names as
    /// written, and those defined there. Any other buffer live across it must keep its
    /// bytes.
    pub written: Vec<BufferId>,
    /// Buffers it (or a nested sequence) reads.
    pub read: Vec<BufferId>,
    /// Temporaries whose last reader is this thunk (loop-body and branch values included:
    /// their range is the one thunk that holds them). Outputs never die.
    pub dying: Vec<BufferId>,
}

/// Whether buffer `b` holds a value after entry thunk `i` ran: defined at or before `i`
/// (parameters and constants always) and read by a later thunk.
pub fn live_after(p: &Program, b: BufferId, i: usize) -> bool {
    let buf = &p.buffers[b];
    buf.defined_at.is_none_or(|d| d <= i) && buf.last_use.is_some_and(|l| l > i)
}

/// The plan's buffer effects per entry thunk, and each buffer's mentions in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects {
    /// Each entry thunk's [`ThunkBuffers`], in order.
    pub steps: Vec<ThunkBuffers>,
    /// For each buffer, the entry thunks that name it with whether they read it, in order.
    mentions: Vec<Vec<(usize, bool)>>,
}

impl Effects {
    /// Whether buffer `b`'s bytes after entry thunk `i` are a value some later thunk
    /// reads: it is [`live_after`] `i`, and the next thunk naming it reads it (or none
    /// does: an output). A buffer written afresh before its next read (a sliced chain
    /// writes the same buffer once per slice) holds nothing in between, so other values
    /// may use its bytes there.
    pub fn holds_value_after(&self, p: &Program, b: BufferId, i: usize) -> bool {
        if !live_after(p, b, i) {
            return false;
        }
        let m = &self.mentions[b];
        let next = m.partition_point(|&(t, _)| t <= i);
        m.get(next).is_none_or(|&(_, read)| read)
    }
}

/// Each entry thunk's [`ThunkBuffers`] and each buffer's mentions.
pub fn effects(p: &Program) -> Effects {
    let mut steps: Vec<ThunkBuffers> = vec![ThunkBuffers::default(); p.thunks.len()];
    let mut mentions: Vec<Vec<(usize, bool)>> = vec![Vec::new(); p.buffers.len()];
    for (i, t) in p.thunks.iter().enumerate() {
        let (mut written, mut read) = (Vec::new(), Vec::new());
        each_access(t, &p.kernels, &mut |b, r, w| {
            if w {
                written.push(b);
            }
            if r {
                read.push(b);
            }
            if let Some(m) = mentions.get_mut(b) {
                match m.last_mut() {
                    Some((at, was_read)) if *at == i => *was_read |= r,
                    _ => m.push((i, r)),
                }
            }
        });
        steps[i].written = written;
        steps[i].read = read;
    }
    for (b, buf) in p.buffers.iter().enumerate() {
        let Some(d) = buf.defined_at else {
            continue;
        };
        if let Some(s) = steps.get_mut(d) {
            s.written.push(b);
        }
        let last = buf.last_use.unwrap_or(d).max(d);
        if let Some(s) = steps.get_mut(last) {
            s.dying.push(b);
        }
    }
    for s in &mut steps {
        let bases: Vec<BufferId> = s
            .written
            .iter()
            .flat_map(|&w| bases_of_view(p, w))
            .collect();
        s.written.extend(bases);
        s.written.sort_unstable();
        s.written.dedup();
        s.read.sort_unstable();
        s.read.dedup();
    }
    Effects { steps, mentions }
}

/// Where an allocation's bytes lie: the temp block (`None`) or an allocation with memory
/// of its own, and the offset there.
fn region(p: &Program, a: usize) -> (Option<usize>, u64) {
    let al = &p.allocations[a];
    match (al.offset, al.parent) {
        (Some(o), None) => (None, o),
        (Some(o), Some(h)) => (Some(h), o),
        (None, _) => (Some(a), 0),
    }
}

/// The values a write through buffer `w` changes besides `w`, when `w` is a view (a
/// sliced chain's slice of a whole value, `crate::stream_chain`: no defining thunk, a
/// temporary allocation, its bytes running from its slice's start to the end of the
/// whole value's): the buffers whose bytes hold its start and end where it ends. Any
/// other buffer is a view of nothing.
fn bases_of_view(p: &Program, w: BufferId) -> Vec<BufferId> {
    let wb = &p.buffers[w];
    let is_view = wb.defined_at.is_none()
        && p.allocations
            .get(wb.allocation)
            .is_some_and(|a| a.kind == crate::AllocationKind::Temp);
    if !is_view {
        return Vec::new();
    }
    let (wr, ws) = region(p, wb.allocation);
    let we = ws + wb.bytes;
    (0..p.buffers.len())
        .filter(|&b| {
            let bb = &p.buffers[b];
            if b == w || bb.allocation >= p.allocations.len() {
                return false;
            }
            let (r, s) = region(p, bb.allocation);
            r == wr && s <= ws && s + bb.bytes == we && bb.defined_at.is_some()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Allocation, AllocationKind, Buffer, Thunk};

    fn buffer(name: &str, defined_at: Option<usize>, last_use: Option<usize>) -> Buffer {
        Buffer {
            name: name.into(),
            bytes: 16,
            allocation: 0,
            defined_at,
            last_use,
        }
    }

    /// A buffer written again before it is read (a sliced chain's per-slice value) holds
    /// no value between its last read and that write, though it is live in between.
    #[test]
    fn a_buffer_written_again_before_its_next_read_holds_nothing_in_between() {
        let mut p = chain();
        // a: written at 0, read at 1; written again at 2 (from p), read by the last copy.
        p.thunks[1] = Thunk::Copy {
            src: 1,
            dst: 2,
            bytes: 16,
        };
        p.thunks[2] = Thunk::Copy {
            src: 0,
            dst: 1,
            bytes: 16,
        };
        p.thunks.push(Thunk::Copy {
            src: 1,
            dst: 3,
            bytes: 16,
        });
        p.buffers[1].last_use = Some(3);
        p.buffers[3].defined_at = Some(3);
        let e = effects(&p);
        assert!(live_after(&p, 1, 1));
        assert!(!e.holds_value_after(&p, 1, 1));
        assert!(e.holds_value_after(&p, 1, 0) && e.holds_value_after(&p, 1, 2));
    }

    /// A write through a view (a sliced chain's slice: no defining thunk, a temporary at
    /// its slice's offset, running to the whole value's end) writes the whole value.
    #[test]
    fn a_write_through_a_view_writes_its_base() {
        let mut p = chain();
        // `b` (32 bytes at 0) is the whole value; the view of its second half at 16.
        p.buffers[2].bytes = 32;
        p.allocations.push(Allocation {
            kind: AllocationKind::Temp,
            bytes: 16,
            offset: Some(16),
            parent: None,
        });
        p.buffers.push(Buffer {
            name: "b.slice1".into(),
            bytes: 16,
            allocation: 1,
            defined_at: None,
            last_use: None,
        });
        p.thunks[2] = Thunk::Copy {
            src: 0,
            dst: 4,
            bytes: 16,
        };
        let e = effects(&p);
        assert_eq!(e.steps[2].written, vec![2, 3, 4]);
        // Not a view: a buffer with a defining thunk writes only itself.
        assert_eq!(e.steps[1].written, vec![2]);
    }

    /// A copy chain p -> a -> b -> out: each copy writes its destination, `a` dies at the
    /// second copy, `b` at the third; the parameter and the output never die.
    fn chain() -> Program {
        Program {
            name: "chain".into(),
            kernels: Vec::new(),
            thunks: (0..3)
                .map(|i| Thunk::Copy {
                    src: i,
                    dst: i + 1,
                    bytes: 16,
                })
                .collect(),
            buffers: vec![
                buffer("p", None, Some(0)),
                buffer("a", Some(0), Some(1)),
                buffer("b", Some(1), Some(2)),
                buffer("out", Some(2), Some(usize::MAX)),
            ],
            allocations: vec![Allocation {
                kind: AllocationKind::Temp,
                bytes: 16,
                offset: Some(0),
                parent: None,
            }],
            parameters: Vec::new(),
            outputs: Vec::new(),
            tuple_output: false,
            peak_bytes: 0,
            temp_block_bytes: 16,
        }
    }

    #[test]
    fn copies_write_their_destinations_and_kill_their_sources() {
        let p = chain();
        let e = effects(&p);
        let steps = &e.steps;
        assert_eq!(steps[0].written, vec![1]);
        assert_eq!(steps[1].written, vec![2]);
        assert_eq!(steps[2].written, vec![3]);
        assert_eq!(steps[0].dying, Vec::<BufferId>::new());
        assert_eq!(steps[1].dying, vec![1]);
        assert_eq!(steps[2].dying, vec![2]);
        assert_eq!(steps[1].read, vec![1]);
        assert!(!live_after(&p, 0, 0) && live_after(&p, 1, 0));
        assert!(!live_after(&p, 1, 1) && live_after(&p, 3, 2));
        assert!(e.holds_value_after(&p, 1, 0) && e.holds_value_after(&p, 3, 2));
    }
}
