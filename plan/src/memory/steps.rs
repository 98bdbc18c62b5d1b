//! Live ranges inside nested sequences (issue 32 item 3). The program builder tracks
//! liveness at the entry sequence's level: every temporary of a loop body or a
//! conditional branch lives through the whole loop or conditional thunk, beside every
//! other value of the body, so no two of them share bytes (`ddim_sampler`'s sampling loop
//! keeps each of its activations apart). Here every thunk gets steps of its own, nested
//! sequences included, and a nested temporary lives from the first step naming it to the
//! last; the buffer assignment places values by these steps ([`assign_by_steps`]).
//!
//! The steps of a loop: its start (the initial values copied into the state), its
//! condition's thunks, its body's, its end (the body's results copied into the state). Of
//! a conditional: its start (the selector read), each branch's thunks after the other's,
//! its end (the chosen branch's results copied out). The state and results of a loop or a
//! conditional live through its whole range, a body's results to the loop's end, a
//! branch's results to the conditional's end, a loop's condition result through the loop.
//! That is exact for one iteration, and it holds across iterations: HLO carries nothing
//! from one iteration to the next but the state, so a body value is written before it is
//! read in each iteration; the condition's values are dead before the body runs, the
//! body's (its results copied) before the condition runs again; one branch runs.

use super::assign::{assign_best, Assigned};
use crate::thunk_names::each_named;
use crate::{Allocation, Buffer, BufferId, Thunk};

/// Each entry thunk's range of steps, and each buffer's first and last step naming it
/// (`None`: named by no thunk).
struct Walk {
    step: usize,
    named: Vec<Option<(usize, usize)>>,
}

impl Walk {
    fn next(&mut self) -> usize {
        self.step += 1;
        self.step - 1
    }

    fn name(&mut self, b: BufferId, from: usize, to: usize) {
        if let Some(r) = self.named.get_mut(b) {
            *r = Some(r.map_or((from, to), |(lo, hi)| (lo.min(from), hi.max(to))));
        }
    }

    fn names(&mut self, bs: &[BufferId], from: usize, to: usize) {
        bs.iter().for_each(|&b| self.name(b, from, to));
    }

    /// The steps of `t` (see the module docs), as `(first, last)`.
    fn thunk(&mut self, t: &Thunk) -> (usize, usize) {
        match t {
            Thunk::While {
                cond,
                cond_result,
                body,
                body_results,
                state,
                init,
                ..
            } => {
                let start = self.next();
                self.names(init, start, start);
                cond.iter().chain(body).for_each(|t| {
                    self.thunk(t);
                });
                let end = self.next();
                self.names(body_results, end, end);
                self.names(state, start, end);
                self.name(*cond_result, start, end);
                (start, end)
            }
            Thunk::Conditional {
                selector,
                branches,
                results,
                ..
            } => {
                let start = self.next();
                self.name(*selector, start, start);
                for (ts, _) in branches {
                    ts.iter().for_each(|t| {
                        self.thunk(t);
                    });
                }
                let end = self.next();
                for (_, rs) in branches {
                    self.names(rs, end, end);
                }
                self.names(results, start, end);
                (start, end)
            }
            leaf => {
                let s = self.next();
                let mut bs = Vec::new();
                each_named(leaf, &[], &mut |b, _| bs.push(b));
                self.names(&bs, s, s);
                (s, s)
            }
        }
    }
}

/// Every buffer's live range in steps (see the module docs) as `(defined_at, last_use)`:
/// from the first step naming it within the entry thunk defining it to the last step
/// naming it within its last reader (a leaf thunk is one step; a loop or conditional
/// thunk its range, of which a value passed in or kept through it by the builder,
/// `defined_at == last_use`, takes only the steps naming it); `usize::MAX`, the end,
/// stays. Parameters and constants keep `None`.
pub fn live_steps(thunks: &[Thunk], buffers: &[Buffer]) -> Vec<(Option<usize>, Option<usize>)> {
    let mut walk = Walk {
        step: 0,
        named: vec![None; buffers.len()],
    };
    let spans: Vec<(usize, usize)> = thunks.iter().map(|t| walk.thunk(t)).collect();
    let within = |x: usize, (lo, hi): (usize, usize)| lo <= x && x <= hi;
    buffers
        .iter()
        .zip(&walk.named)
        .map(|(b, named)| {
            let Some(d) = b.defined_at else {
                return (None, b.last_use);
            };
            let u = b.last_use.unwrap_or(d);
            let (Some(&def), Some(last)) = (
                spans.get(d),
                spans
                    .get(u)
                    .copied()
                    .or((u == usize::MAX).then_some((usize::MAX, usize::MAX))),
            ) else {
                // Not an entry thunk's index: the range as the builder gave it.
                return (b.defined_at, b.last_use);
            };
            // Inside the defining thunk and the last reader, the steps naming it; a step
            // naming it outside them (none the builder leaves) widens the range.
            let (first, end) = match *named {
                Some((lo, hi)) => (
                    if within(lo, def) { lo } else { lo.min(def.0) },
                    if within(hi, last) { hi } else { hi.max(last.1) },
                ),
                None => (def.0, last.1),
            };
            (Some(first), Some(end.max(first)))
        })
        .collect()
}

/// Every loop inside a loop or conditional (at any depth) with its first step (its
/// start, where its initial values are copied into its state) in the numbering of
/// [`live_steps`].
pub fn nested_loops(thunks: &[Thunk]) -> Vec<(usize, &Thunk)> {
    nested_thunks(thunks)
        .into_iter()
        .filter(|(_, t)| matches!(t, Thunk::While { .. }))
        .collect()
}

/// Every leaf thunk inside a loop or conditional (its condition, body or branches, at any
/// depth) with its step in the numbering of [`live_steps`]: the thunks whose buffers only
/// the steps, not the entry indices, tell apart.
pub fn nested_leaves(thunks: &[Thunk]) -> Vec<(usize, &Thunk)> {
    nested_thunks(thunks)
        .into_iter()
        .filter(|(_, t)| !matches!(t, Thunk::While { .. } | Thunk::Conditional { .. }))
        .collect()
}

/// Every thunk inside a loop or conditional (at any depth), with its first step in the
/// numbering of [`live_steps`]: a leaf takes one step; a loop or conditional takes its
/// start, the steps of its nested thunks, and its end.
fn nested_thunks(thunks: &[Thunk]) -> Vec<(usize, &Thunk)> {
    fn walk<'t>(t: &'t Thunk, nested: bool, step: &mut usize, out: &mut Vec<(usize, &'t Thunk)>) {
        if nested {
            out.push((*step, t));
        }
        let inner: Vec<&[Thunk]> = match t {
            Thunk::While { cond, body, .. } => vec![cond, body],
            Thunk::Conditional { branches, .. } => branches.iter().map(|(ts, _)| &ts[..]).collect(),
            _ => {
                *step += 1;
                return;
            }
        };
        *step += 1;
        for ts in inner {
            ts.iter().for_each(|t| walk(t, true, step, out));
        }
        *step += 1;
    }
    let (mut step, mut out) = (0, Vec::new());
    thunks
        .iter()
        .for_each(|t| walk(t, false, &mut step, &mut out));
    out
}

/// [`assign_best`] over the live ranges of [`live_steps`]: values of loop bodies and
/// branches share bytes where their steps allow. The buffers keep the builder's entry
/// indices in `defined_at` and `last_use` afterwards (the dumps and the in-place checks
/// read those).
pub fn assign_by_steps(
    thunks: &[Thunk],
    buffers: &mut [Buffer],
    allocations: &mut Vec<Allocation>,
    outputs: &[BufferId],
    shares: &[(BufferId, BufferId)],
) -> (Assigned, bool) {
    let steps = live_steps(thunks, buffers);
    let entry: Vec<(Option<usize>, Option<usize>)> =
        buffers.iter().map(|b| (b.defined_at, b.last_use)).collect();
    for (b, &(d, u)) in buffers.iter_mut().zip(&steps) {
        (b.defined_at, b.last_use) = (d, u);
    }
    let r = assign_best(buffers, allocations, outputs, shares);
    for (b, &(d, u)) in buffers.iter_mut().zip(&entry) {
        (b.defined_at, b.last_use) = (d, u);
    }
    r
}

/// A pair of buffers that may share bytes, as [`assign_by_steps`] takes them.
pub type SharePair = (BufferId, BufferId);

/// [`assign_by_steps`] with the pairs `optional` added to `shares` and without them,
/// keeping the smaller temp block (with them on a tie). Every pair lengthens a group's
/// live range, so pairs that pay alone can make the whole set lose to no pairs at all;
/// the optional ones are weighed apart so that adding them never costs the others.
/// Returns the assignment, whether `shares` were kept and whether `optional` were.
pub fn assign_by_steps_with(
    thunks: &[Thunk],
    buffers: &mut [Buffer],
    allocations: &mut Vec<Allocation>,
    outputs: &[BufferId],
    (shares, optional): (&[SharePair], &[SharePair]),
) -> (Assigned, bool, bool) {
    if optional.is_empty() {
        let (a, kept) = assign_by_steps(thunks, buffers, allocations, outputs, shares);
        return (a, kept, false);
    }
    let (mut b2, mut a2) = (buffers.to_vec(), allocations.clone());
    let (without, kept) = assign_by_steps(thunks, &mut b2, &mut a2, outputs, shares);
    let all: Vec<(BufferId, BufferId)> = shares.iter().chain(optional).copied().collect();
    let (with, all_kept) = assign_by_steps(thunks, buffers, allocations, outputs, &all);
    if all_kept && with.temp_block_bytes <= without.temp_block_bytes {
        return (with, true, true);
    }
    buffers.clone_from_slice(&b2);
    *allocations = a2;
    (without, kept, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(defined: usize, last: usize) -> Buffer {
        Buffer {
            name: String::new(),
            bytes: 64,
            allocation: usize::MAX,
            defined_at: Some(defined),
            last_use: Some(last),
        }
    }

    fn kernel(args: Vec<BufferId>) -> Thunk {
        Thunk::Kernel {
            kernel: 0,
            args,
            blocks: 1,
            elements: 1,
        }
    }

    /// Entry: 0 a kernel writing b0; 1 a loop (state b1 from init b0, condition result
    /// b2, body b1 -> b3 -> b4 -> b5, the body's result); 2 a kernel reading b1 into b6.
    fn one_loop() -> Vec<Thunk> {
        vec![
            kernel(vec![0]),
            Thunk::While {
                name: "w".into(),
                cond: vec![kernel(vec![1, 2])],
                cond_result: 2,
                body: vec![kernel(vec![1, 3]), kernel(vec![3, 4]), kernel(vec![4, 5])],
                body_results: vec![5],
                state: vec![1],
                init: vec![0],
                trips: None,
            },
            kernel(vec![1, 6]),
        ]
    }

    /// [`one_loop`]'s buffers at their entry thunks: b0 defined at 0 and last used by the
    /// loop; b1 through the kernel after it; b2 to b5 inside the loop; b6 from 2 on.
    fn one_loop_buffers() -> Vec<Buffer> {
        vec![
            temp(0, 1),
            temp(1, 2),
            temp(1, 1),
            temp(1, 1),
            temp(1, 1),
            temp(1, 1),
            temp(2, usize::MAX),
        ]
    }

    #[test]
    fn body_values_live_at_their_own_steps() {
        let thunks = one_loop();
        let buffers = one_loop_buffers();
        let steps = live_steps(&thunks, &buffers);
        // The nested leaves at the same numbering.
        let leaves: Vec<usize> = nested_leaves(&thunks).iter().map(|l| l.0).collect();
        assert_eq!(leaves, [2, 3, 4, 5]);
        // Steps: 0 | 1 start, 2 cond, 3 4 5 body, 6 end | 7.
        let want = [
            (0, 1),
            (1, 7),
            (1, 6),
            (3, 4),
            (4, 5),
            (5, 6),
            (7, usize::MAX),
        ];
        for (b, &(d, u)) in want.iter().enumerate() {
            assert_eq!(steps[b], (Some(d), Some(u)), "buffer {b}");
        }
    }

    #[test]
    fn optional_pairs_are_kept_only_when_they_pay() {
        // Entry: 0 writes b0; 1 a loop starting state b1 from b0 (dying there); 2 reads
        // b1 into the output b6.
        let thunks = one_loop();
        let (mut b1, mut a1) = (one_loop_buffers(), Vec::new());
        let (apart, _, kept) = assign_by_steps_with(&thunks, &mut b1, &mut a1, &[6], (&[], &[]));
        assert!(!kept);
        let (mut b2, mut a2) = (one_loop_buffers(), Vec::new());
        let (with, _, kept) =
            assign_by_steps_with(&thunks, &mut b2, &mut a2, &[6], (&[], &[(1, 0)]));
        // The state takes its initial value's offset (no larger a block: kept on a tie).
        assert!(kept);
        assert!(with.temp_block_bytes <= apart.temp_block_bytes);
        assert_eq!(a2[b2[0].allocation].offset, a2[b2[1].allocation].offset);
    }

    #[test]
    fn branches_follow_one_another() {
        let thunks = vec![Thunk::Conditional {
            selector: 0,
            selector_is_pred: true,
            branches: vec![
                (vec![kernel(vec![1, 2]), kernel(vec![2, 3])], vec![3]),
                (vec![kernel(vec![1, 4])], vec![4]),
            ],
            results: vec![5],
        }];
        let mut buffers = vec![temp(0, 0); 6];
        buffers[1].defined_at = None;
        let steps = live_steps(&thunks, &buffers);
        // Steps: 0 start, 1 2 branch 0, 3 branch 1, 4 end.
        let leaves: Vec<usize> = nested_leaves(&thunks).iter().map(|l| l.0).collect();
        assert_eq!(leaves, [1, 2, 3]);
        assert_eq!(steps[2], (Some(1), Some(2)));
        assert_eq!(steps[3], (Some(2), Some(4)));
        assert_eq!(steps[4], (Some(3), Some(4)));
        assert_eq!(steps[5], (Some(0), Some(4)));
        assert_eq!(steps[0], (Some(0), Some(0)));
    }
}
