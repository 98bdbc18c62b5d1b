//! The passes of a multi-dimensional FFT over a row-major array, parallel on rayon's
//! pool (the one the executor's kernels and GEMMs run on) once an array is large enough:
//! [`rows`] visits every contiguous row (the last dimension, where the one-dimensional
//! transforms read their operand and write their result in place), [`columns`]
//! transforms every line of a strided axis by gathering a tile of neighbouring lines into
//! a contiguous scratch buffer (small enough for L1), transforming them there, and storing
//! them back.

use rayon::prelude::*;
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftNum};

/// Elements a pass touches from which it runs in parallel.
const PARALLEL_MIN: usize = 1 << 15;

/// Elements per parallel task of [`rows`] (whole rows, at least one).
const TASK_ELEMENTS: usize = 1 << 14;

/// Bytes of the contiguous lines one task of [`columns`] gathers and transforms at once:
/// half of a 32 KiB L1 data cache, so that they stay there while the strided rows are
/// read (measured on 8x512x257 `c64`: a 64 KiB tile took three times as long).
const TILE_LINES_BYTES: usize = 16 << 10;

/// The most bytes of each row a tile reads at once (two cache lines).
const TILE_ROW_BYTES: usize = 128;

/// Whether a pass over `elements` elements runs on the pool.
fn parallel(elements: usize) -> bool {
    elements >= PARALLEL_MIN && rayon::current_num_threads() > 1
}

/// Calls `f(i, row, state)` for every row `i` of `out` (rows of `row_len` elements,
/// `row_len > 0`), in parallel over groups of rows when `out` is large; each task makes
/// its own `state` with `init`.
pub(super) fn rows<E, S>(
    out: &mut [E],
    row_len: usize,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(usize, &mut [E], &mut S) + Sync + Send,
) where
    E: Send,
{
    if row_len == 0 || out.is_empty() {
        return;
    }
    let per = (TASK_ELEMENTS / row_len).max(1);
    let body = |state: &mut S, (t, group): (usize, &mut [E])| {
        for (j, row) in group.chunks_mut(row_len).enumerate() {
            f(t * per + j, row, state);
        }
    };
    if parallel(out.len()) {
        out.par_chunks_mut(per * row_len)
            .enumerate()
            .for_each_init(&init, body);
    } else {
        let mut state = init();
        for item in out.chunks_mut(per * row_len).enumerate() {
            body(&mut state, item);
        }
    }
}

/// A pointer into the array [`columns`] works on, shared by its tasks.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);

// SAFETY: the tasks of `columns` that hold copies of this pointer read and write
// disjoint elements of one array that `columns` borrows mutably for as long as they run.
unsafe impl<T: Send> Send for Shared<T> {}
// SAFETY: as for `Send`; no two tasks touch the same element.
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// Row segment `[at, at + len)` of the array.
    ///
    /// # Safety
    /// The segment lies inside the array, and no other live reference covers any of its
    /// elements.
    #[allow(clippy::mut_from_ref)]
    unsafe fn segment(&self, at: usize, len: usize) -> &mut [T] {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(at), len) }
    }
}

/// Transforms every line along a strided axis of row-major `data`, which is `outer`
/// blocks of `n` rows of `inner` elements: line `(o, c)` is
/// `data[o*n*inner + i*inner + c]` for `i` in `0..n`. Up to a tile's worth of
/// neighbouring lines are gathered into contiguous scratch lines, transformed there by
/// `plan` (of length `n`), scaled by `scale` when given, and stored back.
pub(super) fn columns<T: FftNum + Default>(
    data: &mut [Complex<T>],
    (outer, n, inner): (usize, usize, usize),
    plan: &dyn Fft<T>,
    scale: Option<T>,
) {
    assert_eq!(data.len(), outer * n * inner, "columns: array size");
    if data.is_empty() {
        return;
    }
    let size = std::mem::size_of::<Complex<T>>();
    let tile = (TILE_LINES_BYTES / (n * size))
        .clamp(2, TILE_ROW_BYTES / size)
        .min(inner);
    let tiles = inner.div_ceil(tile);
    let elements = data.len();
    let shared = Shared(data.as_mut_ptr());
    let init = || {
        (
            vec![Complex::<T>::default(); tile * n],
            vec![Complex::<T>::default(); plan.get_inplace_scratch_len()],
        )
    };
    let task = |(lines, scratch): &mut (Vec<Complex<T>>, Vec<Complex<T>>), t: usize| {
        let (o, c0) = (t / tiles, (t % tiles) * tile);
        let width = tile.min(inner - c0);
        let base = o * n * inner + c0;
        let lines = &mut lines[..width * n];
        for i in 0..n {
            // SAFETY: `base + i*inner + width <= (o*n + i)*inner + inner <= data.len()`;
            // task `t` alone touches columns `c0..c0 + width` of block `o`, and this
            // segment is dropped before the next one is made.
            let row = unsafe { shared.segment(base + i * inner, width) };
            for (j, v) in row.iter().enumerate() {
                lines[j * n + i] = *v;
            }
        }
        plan.process_with_scratch(lines, scratch);
        for i in 0..n {
            // SAFETY: as above.
            let row = unsafe { shared.segment(base + i * inner, width) };
            match scale {
                Some(s) => {
                    for (j, v) in row.iter_mut().enumerate() {
                        *v = lines[j * n + i].scale(s);
                    }
                }
                None => {
                    for (j, v) in row.iter_mut().enumerate() {
                        *v = lines[j * n + i];
                    }
                }
            }
        }
    };
    let count = outer * tiles;
    if parallel(elements) {
        (0..count).into_par_iter().for_each_init(init, task);
    } else {
        let mut state = init();
        for t in 0..count {
            task(&mut state, t);
        }
    }
}
