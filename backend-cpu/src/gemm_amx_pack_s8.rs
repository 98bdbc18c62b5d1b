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
/// of contracted quads.
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
                    for (c, o) in out.iter_mut().enumerate() {
                        *o = quad([r0[c], r1[c], r2[c], r3[c]]);
                    }
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
