//! GEMM operands at the entry's peak stream below the size threshold (issue 32).
//!
//! [`super::stream::stream_gemms`] keeps an operand under
//! [`super::stream::STREAM_MIN_BYTES`] whole: it fits in the last-level cache, so
//! writing it costs no memory traffic to speak of. But where it is live at the step
//! with the most temporary bytes, its whole size is on the program's temp block:
//! `conv_transpose_autoencoder`'s two 4 MiB patch matrices of a transposed convolution
//! sat beside its four partial results. There such an operand of at least
//! [`PEAK_STREAM_MIN_BYTES`] streams too (then the peak moves; a few rounds follow it).
//! Operands at other steps stay whole, as fast as before. The peak here is estimated
//! from live ranges, so the builder keeps the streamed program only where its temp
//! block comes out smaller (`build_program_with`).

use super::memory::in_place::Candidate;
use super::stream::{fuse_pairs, pair_streams, StreamOptions};
use super::stream_reorder::producers_next_to_gemms;
use super::{Buffer, Thunk};
use codegen::kir::Kernel;

/// Smallest operand streamed at the peak (the nested sequences' threshold: smaller
/// ones cost their GEMM more calls than the bytes are worth).
pub const PEAK_STREAM_MIN_BYTES: u64 = super::stream::NESTED_STREAM_MIN_BYTES;

/// Rounds of streaming at the peak (each lowers the peak, which may then lie elsewhere).
const MAX_ROUNDS: usize = 8;

/// A step is at the peak when its temporaries come within this fraction of the highest
/// step's, as `(numerator, denominator)`: the estimate here does not know which
/// temporaries the assignment will place in outputs' memory nor the gaps between
/// offsets, so the assignment's peak may be a step just under the estimate's.
const NEAR_PEAK: (u64, u64) = (7, 8);

/// Streams the pairs of the entry sequence (moving producers next to their GEMMs as
/// [`producers_next_to_gemms`] does) whose operand, of at least
/// [`PEAK_STREAM_MIN_BYTES`], is live at the step where the temporaries' bytes peak
/// ([`live_at_peak`], the kernels' `in_place` candidates writing over the operand dying
/// at them), until none is. Nothing when `options.min_bytes` is already that low or is
/// `u64::MAX` (streaming off). Returns how many pairs stream.
pub fn stream_at_peak(
    thunks: &mut Vec<Thunk>,
    buffers: &mut [Buffer],
    kernels: &[Kernel],
    in_place: &[Candidate],
    options: StreamOptions,
) -> usize {
    if options.min_bytes <= PEAK_STREAM_MIN_BYTES || options.min_bytes == u64::MAX {
        return 0;
    }
    let low = StreamOptions {
        min_bytes: PEAK_STREAM_MIN_BYTES,
        ..options
    };
    let mut streamed = 0;
    for _ in 0..MAX_ROUNDS {
        let at_peak = live_at_peak(buffers, in_place);
        let streams = |producer: &Thunk, gemm: &Thunk, bufs: &[Buffer], b| {
            at_peak[b] && pair_streams(producer, gemm, bufs, kernels, low, &|x| x == b).is_some()
        };
        producers_next_to_gemms(thunks, buffers, kernels, &streams);
        match fuse_pairs(thunks, buffers, kernels, low, &|b| at_peak[b]) {
            0 => break,
            n => streamed += n,
        }
    }
    streamed
}

/// Which buffers are temporaries of the entry sequence live at its peak: the steps
/// (entry thunk indices) where the bytes of the temporaries live there (from the thunk
/// writing them to their last reader; outputs, parameters and constants apart, as the
/// temp block counts) come within [`NEAR_PEAK`] of the highest sum. An operand an
/// `in_place` candidate may write over where it dies ends the step before: from there
/// its bytes are the output's (as the assignment will place them).
fn live_at_peak(buffers: &[Buffer], in_place: &[Candidate]) -> Vec<bool> {
    let taken = |n: usize, u: usize| {
        in_place.iter().any(|c| {
            c.operand == n
                && c.output != n
                && buffers.get(c.output).and_then(|o| o.defined_at) == Some(u)
        })
    };
    let range = |(n, b): (usize, &Buffer)| match (b.defined_at, b.last_use) {
        (Some(d), Some(u)) if u != usize::MAX && u > d && taken(n, u) => Some((d, u - 1)),
        (Some(d), Some(u)) if u != usize::MAX => Some((d, u.max(d))),
        (Some(d), None) => Some((d, d)),
        _ => None,
    };
    let steps = buffers
        .iter()
        .enumerate()
        .filter_map(range)
        .map(|(_, u)| u + 1)
        .max()
        .unwrap_or(0);
    let mut live = vec![0u64; steps];
    for (n, b) in buffers.iter().enumerate() {
        if let Some((d, u)) = range((n, b)) {
            for slot in &mut live[d..=u] {
                *slot += b.bytes;
            }
        }
    }
    let peak = live.iter().copied().max().unwrap_or(0);
    let near = |bytes: u64| {
        u128::from(bytes) * u128::from(NEAR_PEAK.1) >= u128::from(peak) * u128::from(NEAR_PEAK.0)
    };
    let at_peak =
        |r: Option<(usize, usize)>| r.is_some_and(|(d, u)| live[d..=u].iter().any(|&b| near(b)));
    buffers
        .iter()
        .enumerate()
        .map(|nb| peak > 0 && at_peak(range(nb)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(bytes: u64, d: usize, u: usize) -> Buffer {
        Buffer {
            name: String::new(),
            bytes,
            allocation: usize::MAX,
            defined_at: Some(d),
            last_use: Some(u),
        }
    }

    #[test]
    fn the_values_live_at_the_highest_step_are_at_the_peak() {
        // Steps: 0: 4, 1: 4 + 2 = 6, 2: 2 + 3 = 5 (under 7/8 of 6); an output (to the
        // end) and a parameter do not count.
        let mut output = temp(100, 0, usize::MAX);
        output.last_use = Some(usize::MAX);
        let mut param = temp(100, 0, 0);
        param.defined_at = None;
        let buffers = [temp(4, 0, 1), temp(2, 1, 2), temp(3, 2, 2), output, param];
        assert_eq!(
            live_at_peak(&buffers, &[]),
            vec![true, true, false, false, false]
        );
        assert_eq!(live_at_peak(&[], &[]), Vec::<bool>::new());
        // Buffer 1 written over buffer 0 where 0 dies (step 1): step 1 holds 2, step 2
        // holds 5, the peak, and step 0 only 4 (under 7/8 of 5).
        let over = Candidate {
            kernel: 0,
            output: 1,
            operand: 0,
        };
        assert_eq!(
            live_at_peak(&buffers, &[over]),
            vec![false, true, true, false, false]
        );
    }
}
