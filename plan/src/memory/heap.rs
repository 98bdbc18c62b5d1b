//! The heap simulator: places values with live ranges in one block at offsets, best fit
//! (XLA's `GlobalDecreasingSizeBestFitHeap`): each value in turn takes the smallest gap,
//! among those left by the values already placed that are live at the same time, that
//! holds it, else the first offset past them. Two orders are tried and the smaller block
//! kept, as XLA's `ChooseBestHeapAlgorithm` does: the largest value first (spatial), and
//! the longest-lived first (temporal). Neither wins everywhere: in
//! `wavenet_dilated_loss` eight 8 MiB skip outputs live from their layer to the final sum
//! while 16 and 32 MiB values come and go around them; placed by size, the short large
//! ones go low and the skips must then go past whatever sits above them at their steps
//! (a 100.7 MB block for 84.7 MB live at the peak); placed by lifetime, the skips stack
//! from offset 0 and the short values reuse what is left (92.3 MB).
//! Also the live-bytes peak of a set of ranges (a schedule's cost).

/// A value to place: its size and the steps it is live at, `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Size in bytes.
    pub bytes: u64,
    /// First step it is live at (its definition).
    pub start: usize,
    /// Last step it is live at (its last use).
    pub end: usize,
}

impl Interval {
    /// Whether two ranges share a step (then the values must not overlap in memory).
    pub fn overlaps(&self, other: &Interval) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

/// The placement of every interval: offsets (in `intervals` order, multiples of
/// `align`) and the block size (every value's end, rounded up to `align`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Offset of each interval.
    pub offsets: Vec<u64>,
    /// The block's size in bytes.
    pub size: u64,
}

/// `bytes` rounded up to a multiple of `align` (at least one `align`: every value gets
/// an address of its own, also an empty one).
pub fn padded(bytes: u64, align: u64) -> u64 {
    bytes.max(1).div_ceil(align) * align
}

/// Places `intervals` best fit in the better of two orders (see the module docs): by
/// decreasing size (ties: earlier start first, then input order), and by decreasing
/// lifetime (ties: larger first, then input order); the smaller block wins, the size
/// order on a tie. `align` must be positive.
pub fn best_fit(intervals: &[Interval], align: u64) -> Placement {
    use std::cmp::Reverse;
    let mut by_size: Vec<usize> = (0..intervals.len()).collect();
    by_size.sort_by_key(|&i| (Reverse(intervals[i].bytes), intervals[i].start, i));
    let spatial = best_fit_in(intervals, align, &by_size);
    let mut by_life = by_size;
    by_life.sort_by_key(|&i| {
        let iv = &intervals[i];
        (
            Reverse(iv.end.saturating_sub(iv.start)),
            Reverse(iv.bytes),
            i,
        )
    });
    let temporal = best_fit_in(intervals, align, &by_life);
    if temporal.size < spatial.size {
        temporal
    } else {
        spatial
    }
}

/// Places `intervals` best fit, one after another in `order` (a permutation of their
/// indices).
fn best_fit_in(intervals: &[Interval], align: u64, order: &[usize]) -> Placement {
    let align = align.max(1);
    let mut offsets = vec![0u64; intervals.len()];
    let mut placed: Vec<usize> = Vec::with_capacity(intervals.len());
    let mut size = 0u64;
    for &i in order {
        let need = padded(intervals[i].bytes, align);
        let busy: Vec<(u64, u64)> = placed
            .iter()
            .filter(|&&j| intervals[j].overlaps(&intervals[i]))
            .map(|&j| (offsets[j], offsets[j] + padded(intervals[j].bytes, align)))
            .collect();
        let past = busy.iter().map(|&(_, hi)| hi).max().unwrap_or(0);
        let offset = smallest_gap(busy, need, need, u64::MAX).map_or(past, |(_, o)| o);
        offsets[i] = offset;
        size = size.max(offset + need);
        placed.push(i);
    }
    Placement { offsets, size }
}

/// The narrowest gap between the `busy` ranges (`[lo, hi)`, any order) below `limit`
/// that holds `need` bytes, as (width, offset); the room from the last busy range up to
/// `limit` counts too, and needs only `tail_need` bytes (a value ending at a region's end
/// needs no padding past it). `None` when nothing holds it. With `limit` unbounded that
/// last room always does, so a value goes past the others only where no gap between them
/// fits.
pub fn smallest_gap(
    mut busy: Vec<(u64, u64)>,
    need: u64,
    tail_need: u64,
    limit: u64,
) -> Option<(u64, u64)> {
    busy.sort_unstable();
    let mut cursor = 0u64;
    let mut best: Option<(u64, u64)> = None;
    let mut consider = |gap: u64, at: u64, need: u64| {
        if gap >= need && best.is_none_or(|(g, _)| gap < g) {
            best = Some((gap, at));
        }
    };
    for (lo, hi) in busy {
        let lo = lo.min(limit);
        if lo > cursor {
            consider(lo - cursor, cursor, need);
        }
        cursor = cursor.max(hi);
    }
    if limit > cursor {
        consider(limit - cursor, cursor, tail_need);
    }
    best
}

/// The most bytes live at one step: the sum of the intervals live there, maximized over
/// steps (0 without intervals).
pub fn peak(intervals: &[Interval]) -> u64 {
    let mut events: Vec<(usize, bool, u64)> = Vec::with_capacity(intervals.len() * 2);
    for iv in intervals {
        events.push((iv.start, false, iv.bytes));
        events.push((iv.end, true, iv.bytes));
    }
    // At one step, every start counts before any end (an end frees after its step).
    events.sort_unstable_by_key(|&(t, is_end, _)| (t, is_end));
    let (mut live, mut most) = (0u64, 0u64);
    for (_, is_end, bytes) in events {
        if is_end {
            live -= bytes;
        } else {
            live += bytes;
            most = most.max(live);
        }
    }
    most
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(bytes: u64, start: usize, end: usize) -> Interval {
        Interval { bytes, start, end }
    }

    #[test]
    fn disjoint_ranges_share_offsets() {
        let p = best_fit(&[iv(64, 0, 1), iv(64, 2, 3), iv(64, 1, 2)], 64);
        assert_eq!(p.offsets, vec![0, 0, 64]);
        assert_eq!(p.size, 128);
    }

    #[test]
    fn best_gap_is_the_smallest_that_fits() {
        // Largest first: 256 at 0; 192 (steps 3..5) at 256; 128 (0..2) at 256 too, as
        // the 192 is not live then; 128 (step 4) past the 192; 64 (live throughout) past
        // everything.
        let ivs = [
            iv(256, 0, 5),
            iv(128, 0, 2),
            iv(192, 3, 5),
            iv(64, 0, 5),
            iv(128, 4, 4),
        ];
        let p = best_fit(&ivs, 64);
        for a in 0..ivs.len() {
            for b in a + 1..ivs.len() {
                if ivs[a].overlaps(&ivs[b]) {
                    let (ea, eb) = (p.offsets[a] + ivs[a].bytes, p.offsets[b] + ivs[b].bytes);
                    assert!(
                        ea <= p.offsets[b] || eb <= p.offsets[a],
                        "{a} and {b} overlap"
                    );
                }
            }
        }
        assert_eq!(p.offsets, vec![0, 256, 256, 576, 448]);
        assert_eq!(p.size, 640);
        assert_eq!(peak(&ivs), 256 + 192 + 64 + 128);
    }

    #[test]
    fn the_longest_lived_first_when_that_packs_tighter() {
        // By size: the two 192s first (0 and 192), the 128 of steps 2..3 at 0, then the
        // 128 of step 2 finds only 64 bytes between it and the long 192: past it, 512.
        // By lifetime: the long 192 at 0, the others above it, 448 = the peak (step 2).
        let ivs = [iv(192, 0, 0), iv(128, 2, 3), iv(128, 2, 2), iv(192, 0, 3)];
        let by_size: Vec<usize> = vec![0, 3, 1, 2];
        assert_eq!(best_fit_in(&ivs, 64, &by_size).size, 512);
        let p = best_fit(&ivs, 64);
        assert_eq!(p.offsets, vec![192, 192, 320, 0]);
        assert_eq!(p.size, 448);
        assert_eq!(p.size, peak(&ivs));
    }

    #[test]
    fn a_gap_below_a_live_value_is_reused() {
        // The 256 dies at step 1, leaving [0, 256) free below the 128: the 64 (from step
        // 2) goes there, not past the 128.
        let ivs = [iv(256, 0, 1), iv(128, 0, 3), iv(64, 2, 3)];
        let p = best_fit(&ivs, 64);
        assert_eq!(p.offsets, vec![0, 256, 0]);
        assert_eq!(p.size, 384);
        // Two gaps, 128 and 64 bytes wide: a 64-byte value takes the narrower one.
        let ivs = [
            iv(128, 0, 0),
            iv(64, 0, 5),
            iv(64, 0, 0),
            iv(64, 0, 5),
            iv(64, 1, 1),
        ];
        let p = best_fit(&ivs, 64);
        assert_eq!(p.offsets, vec![0, 128, 192, 256, 192]);
    }

    #[test]
    fn a_region_end_needs_no_padding() {
        // A 20-byte region: a 20-byte value fits at 0 (its padded 32 bytes would not); a
        // 16-byte value past a busy [0, 16) does not, as only 4 bytes remain.
        assert_eq!(smallest_gap(vec![], 32, 20, 20), Some((20, 0)));
        assert_eq!(smallest_gap(vec![(0, 16)], 16, 16, 20), None);
        // Between busy ranges the padded size counts: the 16-byte gap at 16 holds 16.
        assert_eq!(
            smallest_gap(vec![(0, 16), (32, 48)], 16, 16, 64),
            Some((16, 16))
        );
    }
}
