//! Packing of the `s8` operands into the AMX tile layouts of `tdpbssd`
//! ([`crate::gemm_amx`]): panels of 16 rows (lhs) or 16 columns (rhs), each a run of 1 KiB
//! tiles along the contraction, the edges padded with zeros (which add nothing to the
//! sums), as [`crate::gemm_amx_pack`] packs `bf16` with four contracted elements to a
//! 32-bit lane instead of two:
//!
//! - lhs panel: tile `s` holds rows `16p..16p+16`, contracted elements `64s..64s+64`, row
//!   by row (64 bytes a row);
//! - rhs panel (the quad layout): tile `s` holds 16 rows of contracted quads
//!   `64s + 4q .. 64s + 4q + 4`, each row the 16 columns `16p..16p+16`, one `u32` each
//!   (the quad's first element in the low byte).
#![allow(unsafe_code)]

use crate::gemm_amx_tiles::TILE_ROWS;

/// Contracted `s8` elements of one tile step (a 64-byte lhs tile row).
pub(crate) const TILE_K_S8: usize = 64;

/// Columns of an rhs panel (one quad each in a tile row).
const PANEL_COLS: usize = 16;

/// A strided `rows x cols` matrix of `s8`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View8 {
    /// Element `(0, 0)`.
    pub(crate) at: *const i8,
    /// Rows.
    pub(crate) rows: usize,
    /// Columns.
    pub(crate) cols: usize,
    /// Element strides of rows and columns.
    pub(crate) strides: (isize, isize),
}

impl View8 {
    /// Element `(r, c)` as a byte, zero outside the matrix.
    ///
    /// # Safety
    /// The view's elements lie inside one allocation.
    #[inline(always)]
    unsafe fn get(&self, r: usize, c: usize) -> u8 {
        if r >= self.rows || c >= self.cols {
            return 0;
        }
        // SAFETY: `(r, c)` is an element of the view (the caller's contract).
        unsafe {
            *self
                .at
                .offset(r as isize * self.strides.0 + c as isize * self.strides.1) as u8
        }
    }

    /// Row `r`'s elements `c0..c0 + len` when the row is contiguous and they all exist.
    ///
    /// # Safety
    /// As [`View8::get`]'s.
    #[inline(always)]
    unsafe fn row_run(&self, r: usize, c0: usize, len: usize) -> Option<&[u8]> {
        if self.strides.1 != 1 || r >= self.rows || c0 + len > self.cols {
            return None;
        }
        // SAFETY: elements `(r, c0..c0 + len)` of the view, contiguous.
        Some(unsafe {
            std::slice::from_raw_parts(
                self.at
                    .offset(r as isize * self.strides.0 + c0 as isize)
                    .cast::<u8>(),
                len,
            )
        })
    }
}

/// Bytes of one packed tile.
const TILE_BYTES: usize = TILE_ROWS * TILE_K_S8;

/// Packs lhs panel `p` (rows `16p..16p+16` of `v`, `m x k`) into `dst`: `steps` tiles.
///
/// # Safety
/// `v`'s elements lie inside one allocation; `dst` holds `steps * 1024` bytes.
pub(crate) unsafe fn lhs_panel(v: &View8, p: usize, steps: usize, dst: &mut [u8]) {
    for (s, tile) in dst[..steps * TILE_BYTES]
        .chunks_exact_mut(TILE_BYTES)
        .enumerate()
    {
        let k0 = s * TILE_K_S8;
        for (r, out) in tile.chunks_exact_mut(TILE_K_S8).enumerate() {
            let row = p * TILE_ROWS + r;
            // SAFETY: the caller's contract (`row_run` and `get` check the extents).
            unsafe {
                if let Some(run) = v.row_run(row, k0, TILE_K_S8) {
                    out.copy_from_slice(run);
                } else {
                    for (j, o) in out.iter_mut().enumerate() {
                        *o = v.get(row, k0 + j);
                    }
                }
            }
        }
    }
}

/// Packs rhs panel `p` (columns `16p..16p+16` of `v`, `k x n`) into `dst`: `steps` tiles
/// of contracted quads. Four whole rows' 16 bytes are interleaved in SSE2 registers
/// ([`interleave_quads`]): byte by byte, the interleave was 40% of an `int8_quantized_mlp`
/// run (`perf`), the whole 4096 x 4096 rhs being packed on every call.
///
/// # Safety
/// `v`'s elements lie inside one allocation; `dst` holds `steps * 256` `u32`s.
pub(crate) unsafe fn rhs_panel(v: &View8, p: usize, steps: usize, dst: &mut [u32]) {
    let quad = |b: [u8; 4]| u32::from_le_bytes(b);
    let c0 = p * PANEL_COLS;
    let tile_u32 = TILE_BYTES / 4;
    for (s, tile) in dst[..steps * tile_u32]
        .chunks_exact_mut(tile_u32)
        .enumerate()
    {
        for (q, out) in tile.chunks_exact_mut(PANEL_COLS).enumerate() {
            let k = s * TILE_K_S8 + 4 * q;
            // SAFETY: the caller's contract (`row_run` and `get` check the extents).
            unsafe {
                if let (Some(r0), Some(r1), Some(r2), Some(r3)) = (
                    v.row_run(k, c0, PANEL_COLS),
                    v.row_run(k + 1, c0, PANEL_COLS),
                    v.row_run(k + 2, c0, PANEL_COLS),
                    v.row_run(k + 3, c0, PANEL_COLS),
                ) {
                    interleave_quads([r0, r1, r2, r3], out);
                } else {
                    for (c, o) in out.iter_mut().enumerate() {
                        *o = quad([
                            v.get(k, c0 + c),
                            v.get(k + 1, c0 + c),
                            v.get(k + 2, c0 + c),
                            v.get(k + 3, c0 + c),
                        ]);
                    }
                }
            }
        }
    }
}

/// Rows ahead of the ones being packed whose runs [`rhs_step`] prefetches: a column
/// block's run of each row (128-512 bytes, [`crate::gemm_amx`]'s fused blocks) is in its
/// own page, where the hardware prefetchers do not follow, so each row would wait on its
/// lines from memory (hundreds of cycles, some 8 tile rows' packing).
const PREFETCH_ROWS_AHEAD: usize = 32;

/// The longest run prefetched by software (bytes): longer runs (whole rows) the hardware
/// prefetcher follows within their page.
const PREFETCH_MAX_RUN: usize = 1024;

/// Asks for the cache lines of the `bytes` bytes from `at` where they are at most
/// [`PREFETCH_MAX_RUN`] (a hint: any address is allowed, none faults).
#[inline(always)]
fn prefetch_run(at: *const u8, bytes: usize) {
    if bytes > PREFETCH_MAX_RUN {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let lead = at as usize & 63;
        for off in (0..lead + bytes).step_by(64) {
            let line = at.wrapping_sub(lead).wrapping_add(off);
            // SAFETY: a prefetch is a hint: it never faults nor changes memory.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.cast()) };
        }
    }
}

/// Packs tile step `s` (contracted elements `64s..64s+64`) of every rhs panel of `v`
/// (`k x n`, rows contiguous: `strides.1 == 1`) among `panels`, panel `p`'s at
/// `dst + (p - panels.start) * panel` (`u32`s),
/// as `bf16`'s [`crate::gemm_amx_pack::rhs_step`]: four rows' runs at a time are read
/// whole and in order (prefetched a few rows ahead, [`PREFETCH_ROWS_AHEAD`]), and each 16
/// columns of them interleaved into one tile row of a panel, where
/// [`rhs_panel`] reads 16 bytes a row apart (a 4 KiB stride for a 4096-column rhs, which
/// keeps the lines in no cache between panels: 29% of an `int8_quantized_mlp` run).
///
/// # Safety
/// `v`'s elements lie inside one allocation and its rows are contiguous; `panels` are
/// panels of `v` (`p < n.div_ceil(16)`); `dst` holds `panels.len()` panels of `panel`
/// `u32`s, whose step-`s` tiles nothing else touches meanwhile.
pub(crate) unsafe fn rhs_step(
    v: &View8,
    s: usize,
    panels: std::ops::Range<usize>,
    dst: *mut u32,
    panel: usize,
) {
    debug_assert!(v.strides.1 == 1 && panels.end <= v.cols.div_ceil(PANEL_COLS));
    let tile_u32 = TILE_BYTES / 4;
    let whole = v.cols / PANEL_COLS;
    let row = |k: usize| -> &[u8] {
        if k < v.rows {
            // SAFETY: row `k` of the view, contiguous (the caller's contract).
            unsafe {
                std::slice::from_raw_parts(
                    v.at.offset(k as isize * v.strides.0).cast::<u8>(),
                    v.cols,
                )
            }
        } else {
            &[]
        }
    };
    let first = (panels.start * PANEL_COLS).min(v.cols);
    let run = (panels.end * PANEL_COLS).min(v.cols) - first;
    for q in 0..TILE_ROWS {
        let k = s * TILE_K_S8 + 4 * q;
        for r in (k + PREFETCH_ROWS_AHEAD..k + PREFETCH_ROWS_AHEAD + 4).filter(|&r| r < v.rows) {
            let at =
                v.at.wrapping_offset(r as isize * v.strides.0 + first as isize);
            prefetch_run(at.cast(), run);
        }
        let rows = [row(k), row(k + 1), row(k + 2), row(k + 3)];
        let full = rows.iter().all(|r| !r.is_empty());
        for (j, p) in panels.clone().enumerate() {
            // SAFETY: row `q` of panel `p`'s step-`s` tile (the caller's contract).
            let out = unsafe {
                std::slice::from_raw_parts_mut(
                    dst.add(j * panel + s * tile_u32 + q * PANEL_COLS),
                    PANEL_COLS,
                )
            };
            let c0 = p * PANEL_COLS;
            if p < whole && full {
                interleave_quads(rows.map(|r| &r[c0..c0 + PANEL_COLS]), out);
            } else {
                for (c, o) in out.iter_mut().enumerate() {
                    *o = u32::from_le_bytes(rows.map(|r| r.get(c0 + c).copied().unwrap_or(0)));
                }
            }
        }
    }
}

/// Writes `out[c]` = the quad of column `c` of four rows (`rows[0][c]` in the low byte).
#[inline(always)]
fn interleave_quads(rows: [&[u8]; 4], out: &mut [u32]) {
    assert!(rows.iter().all(|r| r.len() == PANEL_COLS) && out.len() == PANEL_COLS);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            __m128i, _mm_loadu_si128, _mm_storeu_si128, _mm_unpackhi_epi16, _mm_unpackhi_epi8,
            _mm_unpacklo_epi16, _mm_unpacklo_epi8,
        };
        // SAFETY: SSE2 is part of x86_64; the loads read the four 16-byte rows and the
        // stores write `out`'s 16 `u32`s (lengths asserted above), unaligned forms.
        unsafe {
            let load = |r: &[u8]| _mm_loadu_si128(r.as_ptr().cast::<__m128i>());
            let [a, b, c, d] = rows.map(load);
            // Rows 0 and 1 (and 2 and 3) byte-interleaved: columns 0..8, then 8..16.
            let (ab_lo, ab_hi) = (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b));
            let (cd_lo, cd_hi) = (_mm_unpacklo_epi8(c, d), _mm_unpackhi_epi8(c, d));
            // Pairs interleaved into quads: four columns a register.
            let quads = [
                _mm_unpacklo_epi16(ab_lo, cd_lo),
                _mm_unpackhi_epi16(ab_lo, cd_lo),
                _mm_unpacklo_epi16(ab_hi, cd_hi),
                _mm_unpackhi_epi16(ab_hi, cd_hi),
            ];
            for (i, q) in quads.into_iter().enumerate() {
                _mm_storeu_si128(out.as_mut_ptr().add(4 * i).cast::<__m128i>(), q);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    for (c, o) in out.iter_mut().enumerate() {
        *o = u32::from_le_bytes([rows[0][c], rows[1][c], rows[2][c], rows[3][c]]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte-by-byte packing of rhs panel `p`, element by element: the oracle.
    fn rhs_panel_oracle(v: &View8, p: usize, steps: usize) -> Vec<u32> {
        let mut dst = vec![0u32; steps * TILE_BYTES / 4];
        for (i, o) in dst.iter_mut().enumerate() {
            let (s, q, c) = (i / 256, i % 256 / 16, i % 16);
            let k = s * TILE_K_S8 + 4 * q;
            // SAFETY: `get` checks the extents; the view is the test's matrix.
            *o = u32::from_le_bytes(
                [k, k + 1, k + 2, k + 3].map(|k| unsafe { v.get(k, p * PANEL_COLS + c) }),
            );
        }
        dst
    }

    #[test]
    fn rhs_panels_and_steps_equal_the_byte_by_byte_quads_on_random_shapes() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let shapes = [(1, 1), (64, 16), (65, 17), (3, 33), (130, 48), (200, 95)];
        for (t, &(k, n)) in shapes.iter().enumerate() {
            for row_major in [true, false] {
                // Random shapes too, ragged in `k` and `n` by construction.
                let (k, n) = if t % 2 == 1 {
                    (1 + next() as usize % 300, 1 + next() as usize % 120)
                } else {
                    (k, n)
                };
                let data: Vec<i8> = (0..k * n).map(|_| next() as i8).collect();
                let strides = if row_major {
                    (n as isize, 1)
                } else {
                    (1, k as isize)
                };
                let v = View8 {
                    at: data.as_ptr(),
                    rows: k,
                    cols: n,
                    strides,
                };
                let steps = k.div_ceil(TILE_K_S8);
                for p in 0..n.div_ceil(PANEL_COLS) {
                    let mut got = vec![0xdead_beefu32; steps * TILE_BYTES / 4];
                    // SAFETY: `data` holds the view; `got` holds `steps` tiles.
                    unsafe { rhs_panel(&v, p, steps, &mut got) };
                    let want = rhs_panel_oracle(&v, p, steps);
                    assert_eq!(got, want, "{k}x{n} row-major {row_major} panel {p}");
                }
                if row_major {
                    // The same panels packed a step of all of them at a time.
                    let (panels, panel) = (n.div_ceil(PANEL_COLS), steps * TILE_BYTES / 4);
                    let mut got = vec![0xdead_beefu32; panels * panel];
                    for s in 0..steps {
                        // SAFETY: `data` holds the view, its rows contiguous; `got` holds
                        // every panel.
                        unsafe { rhs_step(&v, s, 0..panels, got.as_mut_ptr(), panel) };
                    }
                    for (p, got) in got.chunks_exact(panel).enumerate() {
                        let want = rhs_panel_oracle(&v, p, steps);
                        assert_eq!(got, want, "{k}x{n} by steps, panel {p}");
                    }
                    // And a range of them (a column block), from its first panel.
                    let (p0, p1) = (panels / 3, panels - panels / 4);
                    let mut some = vec![0xdead_beefu32; (p1 - p0) * panel];
                    for s in 0..steps {
                        // SAFETY: as above; `some` holds panels `p0..p1`.
                        unsafe { rhs_step(&v, s, p0..p1, some.as_mut_ptr(), panel) };
                    }
                    assert_eq!(
                        some,
                        got[p0 * panel..p1 * panel],
                        "{k}x{n} panels {p0}..{p1}"
                    );
                }
            }
        }
    }
}
