//! Streaming the GEMM operands that set the program's temp peak (issue 32 item 5): a
//! patch matrix under [`super::stream::STREAM_MIN_BYTES`] stays whole, since writing it
//! whole costs little traffic and one big GEMM call runs faster than many small ones
//! (streaming every patch matrix was measured 1.5-3x slower in session 52). But where
//! such a matrix is live at the temp peak its bytes are the peak's: there it streams, in
//! row blocks like the big ones, and everywhere else it stays whole.
//!
//! The peak is the liveness sum of the entry's temporaries by thunk (each allocation
//! counted once over the span of its buffers), the quantity the heap packs; after each
//! round of streaming it is taken again, since the next highest step may hold another
//! patch matrix.

use super::stream::{fuse_in_entry, pair_streams, scratch_bytes, StreamAxis, StreamOptions};
use super::{Buffer, BufferId, Thunk};
use codegen::kir::Kernel;

/// Operands smaller than this stay whole even at the peak: they fit in the L2 cache and
/// the peak they set is small.
pub const PEAK_STREAM_MIN_BYTES: u64 = 256 << 10;

/// An operand streams at the peak only when its scratch slots are at most this fraction
/// (`1 / n`) of its bytes: "a few blocks" of it, so that streaming really lowers the peak.
const PEAK_SCRATCH_FRACTION: u64 = 4;

/// Fewest result rows a GEMM call of a row stream at the peak multiplies: resnet18_forward's
/// `m = 1024` patch matrices in 64 calls of 16 rows streamed made it 1.54x slower
/// (session 55, F2), while conv_transpose_autoencoder's calls of 128 rows cost nothing
/// (calls take several producer blocks since session 56, `stream_group`).
const PEAK_MIN_BLOCK_ROWS: i64 = 64;

/// Most rounds of streaming; each round removes at least one thunk, so this only bounds
/// the work on a program with very many patch matrices at one plateau.
const MAX_ROUNDS: usize = 64;

/// Streams, round by round, the entry's producer + GEMM pairs whose operand (at least
/// [`PEAK_STREAM_MIN_BYTES`], below `options.min_bytes`, dying at the GEMM) is live at a
/// step of the temp peak, while every step at the peak holds such a pair: when one does
/// not, streaming the others would not lower the peak and would only cost their speed.
pub fn stream_at_peak(
    thunks: &mut Vec<Thunk>,
    buffers: &mut [Buffer],
    kernels: &[Kernel],
    options: StreamOptions,
) {
    let small = StreamOptions {
        min_bytes: PEAK_STREAM_MIN_BYTES.min(options.min_bytes),
        ..options
    };
    for _ in 0..MAX_ROUNDS {
        let loads = temp_loads(thunks.len(), buffers);
        let Some(&peak) = loads.iter().max() else {
            return;
        };
        if peak == 0 {
            return;
        }
        // Patch matrices live at the peak but built a few thunks before their GEMM (a
        // transposed convolution's phases build theirs first) move next to it, as the
        // main pass moves the big ones.
        let at_peak = |b: &Buffer| {
            let (lo, hi) = (b.defined_at.unwrap_or(0), b.last_use.unwrap_or(0));
            (lo..=hi.min(loads.len().saturating_sub(1))).any(|t| loads[t] == peak)
        };
        super::stream_reorder::producers_next_to_gemms(
            thunks,
            buffers,
            kernels,
            &|producer, gemm, bufs, b| {
                let ok =
                    |x: BufferId| x == b && bufs[x].bytes < options.min_bytes && at_peak(&bufs[x]);
                pair_streams(producer, gemm, bufs, kernels, small, &ok).is_some()
            },
        );
        let loads = temp_loads(thunks.len(), buffers);
        let Some(&peak) = loads.iter().max() else {
            return;
        };
        let mut pairs: Vec<(usize, super::stream::Streaming)> = Vec::new();
        for step in (0..loads.len()).filter(|&t| loads[t] == peak) {
            let covered = pairs.iter().any(|(i, _)| *i == step || i + 1 == step);
            if covered {
                continue;
            }
            let found = [step.checked_sub(1), Some(step)]
                .into_iter()
                .flatten()
                .filter(|&i| i + 1 < thunks.len())
                .find_map(|i| {
                    streams_at(thunks, buffers, kernels, small, options, i).map(|s| (i, s))
                });
            match found {
                Some(p) => pairs.push(p),
                None => return,
            }
        }
        if pairs.is_empty() {
            return;
        }
        pairs.sort_by_key(|p| std::cmp::Reverse(p.0));
        pairs.dedup_by_key(|p| p.0);
        let mut last = usize::MAX;
        for (i, s) in pairs {
            // Two pairs sharing a thunk cannot both fuse; the next round retakes the peak.
            if i + 1 >= last {
                continue;
            }
            fuse_in_entry(thunks, i, buffers, s);
            last = i;
        }
    }
}

/// The [`super::stream::Streaming`] of the pair at `i`, `i + 1` when its operand is
/// below `options.min_bytes` (the main pass left it whole), dies at the GEMM, its
/// scratch is a few blocks of it (see [`PEAK_SCRATCH_FRACTION`]) and it is a row
/// stream whose blocks have at least [`PEAK_MIN_BLOCK_ROWS`] rows.
fn streams_at(
    thunks: &[Thunk],
    buffers: &[Buffer],
    kernels: &[Kernel],
    small: StreamOptions,
    options: StreamOptions,
    i: usize,
) -> Option<super::stream::Streaming> {
    let dies_here = |b: BufferId| {
        buffers[b].defined_at == Some(i)
            && buffers[b].last_use == Some(i + 1)
            && buffers[b].bytes < options.min_bytes
    };
    let s = pair_streams(
        &thunks[i],
        &thunks[i + 1],
        buffers,
        kernels,
        small,
        &dies_here,
    )?;
    let width = match &thunks[i + 1] {
        Thunk::Gemm { shape, .. } => u64::from(shape.ty.byte_width()),
        _ => return None,
    };
    let result = match (&thunks[i + 1], s.axis) {
        (Thunk::Gemm { shape, .. }, StreamAxis::Contraction { .. }) => (shape.m * shape.n) as u64,
        _ => 0,
    };
    let rows_ok = match (&thunks[i + 1], s.axis) {
        (Thunk::Gemm { shape, .. }, StreamAxis::Rows) => {
            s.block_elements * s.group / (shape.k as i64).max(1) >= PEAK_MIN_BLOCK_ROWS
        }
        // Contraction streams at the peak (weight-gradient patches) made
        // unet1d_audio_convtranspose_grad 1.24x slower (session 55, F2): rows only.
        _ => false,
    };
    let scratch = scratch_bytes(s.axis, s.slots, s.block_elements * s.group, width, result);
    (rows_ok && scratch * PEAK_SCRATCH_FRACTION <= buffers[s.buffer].bytes).then_some(s)
}

/// Bytes of temporaries live at each of the `steps` thunks: every allocation written by
/// a thunk and not an output (a temporary not yet assigned one on its own), its bytes
/// (the largest of its buffers) over the span from its first writer to its last reader.
pub fn temp_loads(steps: usize, buffers: &[Buffer]) -> Vec<u64> {
    let mut spans: std::collections::HashMap<(bool, usize), (usize, usize, u64, bool)> =
        std::collections::HashMap::new();
    for (id, b) in buffers.iter().enumerate() {
        // Before assignment a temporary has no allocation yet: it counts on its own.
        let key = if b.allocation == usize::MAX {
            (true, id)
        } else {
            (false, b.allocation)
        };
        let temp = b.defined_at.is_some() && b.last_use != Some(usize::MAX);
        let (lo, hi) = (b.defined_at.unwrap_or(0), b.last_use.unwrap_or(0));
        let e = spans.entry(key).or_insert((lo, hi.max(lo), b.bytes, temp));
        e.0 = e.0.min(lo);
        e.1 = e.1.max(hi);
        e.2 = e.2.max(b.bytes);
        e.3 &= temp;
    }
    let mut diff = vec![0i128; steps + 1];
    for &(lo, hi, bytes, temp) in spans.values() {
        if !temp || lo >= steps {
            continue;
        }
        diff[lo] += i128::from(bytes);
        diff[hi.min(steps - 1) + 1] -= i128::from(bytes);
    }
    let mut load = 0i128;
    diff[..steps]
        .iter()
        .map(|d| {
            load += d;
            load.max(0) as u64
        })
        .collect()
}
