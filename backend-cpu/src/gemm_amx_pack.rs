//! Packing of the `bf16` operands into the AMX tile layouts ([`crate::gemm_amx`]): panels of
//! 16 rows (lhs) or 16 columns (rhs), each a run of 1 KiB tiles along the contraction, the
//! edges (rows, columns or contracted elements past the operand's extent) padded with zeros
//! so every tile the kernels load is whole and the padding adds nothing to the sums.
//!
//! - lhs panel: tile `s` holds rows `16p..16p+16`, contracted elements `32s..32s+32`, row
//!   by row (64 bytes a row);
//! - rhs panel (the pair or "VNNI" layout `tdpbf16ps` reads): tile `s` holds 16 rows of
//!   contracted pairs `(32s + 2q, 32s + 2q + 1)`, each row the 16 columns `16p..16p+16` as
//!   `(even, odd)` pairs of `bf16` (one `u32` each, the even element in the low half).
#![allow(unsafe_code)]

use crate::gemm_amx_tiles::{TILE_K, TILE_ROWS};

/// A strided `rows x cols` matrix of `bf16` bits.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View {
    /// Element `(0, 0)`.
    pub(crate) at: *const u16,
    /// Rows.
    pub(crate) rows: usize,
    /// Columns.
    pub(crate) cols: usize,
    /// Element strides of rows and columns.
    pub(crate) strides: (isize, isize),
}

impl View {
    /// Element `(r, c)`, zero outside the matrix.
    ///
    /// # Safety
    /// The view's elements lie inside one allocation.
    #[inline(always)]
    pub(crate) unsafe fn get(&self, r: usize, c: usize) -> u16 {
        if r >= self.rows || c >= self.cols {
            return 0;
        }
        // SAFETY: `(r, c)` is an element of the view (the caller's contract).
        unsafe {
            *self
                .at
                .offset(r as isize * self.strides.0 + c as isize * self.strides.1)
        }
    }

    /// Row `r`'s elements `c0..c0 + len` when the row is contiguous and they all exist.
    ///
    /// # Safety
    /// As [`View::get`]'s.
    #[inline(always)]
    unsafe fn row_run(&self, r: usize, c0: usize, len: usize) -> Option<&[u16]> {
        if self.strides.1 != 1 || r >= self.rows || c0 + len > self.cols {
            return None;
        }
        // SAFETY: elements `(r, c0..c0 + len)` of the view, contiguous.
        Some(unsafe {
            std::slice::from_raw_parts(
                self.at.offset(r as isize * self.strides.0 + c0 as isize),
                len,
            )
        })
    }
}

/// `u16`s of one packed tile.
pub(crate) const TILE_U16: usize = TILE_ROWS * TILE_K;

/// Packs lhs panel `p` (rows `16p..16p+16` of `v`, `m x k`) into `dst`: `steps` tiles.
///
/// # Safety
/// `v`'s elements lie inside one allocation; `dst` holds `steps * TILE_U16` elements.
pub(crate) unsafe fn lhs_panel(v: &View, p: usize, steps: usize, dst: &mut [u16]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2; the caller's contract.
        return unsafe { lhs_panel_avx2(v, p, steps, dst) };
    }
    // SAFETY: the caller's contract.
    unsafe { lhs_panel_plain(v, p, steps, dst) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lhs_panel_avx2(v: &View, p: usize, steps: usize, dst: &mut [u16]) {
    // SAFETY: the caller's contract.
    unsafe { lhs_panel_plain(v, p, steps, dst) }
}

#[inline(always)]
unsafe fn lhs_panel_plain(v: &View, p: usize, steps: usize, dst: &mut [u16]) {
    for (s, tile) in dst[..steps * TILE_U16]
        .chunks_exact_mut(TILE_U16)
        .enumerate()
    {
        let k0 = s * TILE_K;
        for (r, out) in tile.chunks_exact_mut(TILE_K).enumerate() {
            let row = p * TILE_ROWS + r;
            // SAFETY: the caller's contract (`row_run` and `get` check the extents).
            unsafe {
                if let Some(run) = v.row_run(row, k0, TILE_K) {
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
/// of contracted pairs.
///
/// # Safety
/// `v`'s elements lie inside one allocation; `dst` holds `steps * TILE_U16 / 2` elements.
pub(crate) unsafe fn rhs_panel(v: &View, p: usize, steps: usize, dst: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2; the caller's contract.
        return unsafe { rhs_panel_avx2(v, p, steps, dst) };
    }
    // SAFETY: the caller's contract.
    unsafe { rhs_panel_plain(v, p, steps, dst) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rhs_panel_avx2(v: &View, p: usize, steps: usize, dst: &mut [u32]) {
    // SAFETY: the caller's contract.
    unsafe { rhs_panel_plain(v, p, steps, dst) }
}

/// Columns of an rhs panel (16 pairs a tile row).
const PANEL_COLS: usize = 16;

#[inline(always)]
unsafe fn rhs_panel_plain(v: &View, p: usize, steps: usize, dst: &mut [u32]) {
    let pair = |lo: u16, hi: u16| u32::from(lo) | (u32::from(hi) << 16);
    let c0 = p * PANEL_COLS;
    let tile_u32 = TILE_U16 / 2;
    for (s, tile) in dst[..steps * tile_u32]
        .chunks_exact_mut(tile_u32)
        .enumerate()
    {
        for (q, out) in tile.chunks_exact_mut(PANEL_COLS).enumerate() {
            let k = s * TILE_K + 2 * q;
            // SAFETY: the caller's contract (`row_run` and `get` check the extents).
            unsafe {
                if let (Some(lo), Some(hi)) = (
                    v.row_run(k, c0, PANEL_COLS),
                    v.row_run(k + 1, c0, PANEL_COLS),
                ) {
                    for ((o, &l), &h) in out.iter_mut().zip(lo).zip(hi) {
                        *o = pair(l, h);
                    }
                } else {
                    for (c, o) in out.iter_mut().enumerate() {
                        *o = pair(v.get(k, c0 + c), v.get(k + 1, c0 + c));
                    }
                }
            }
        }
    }
}

/// Packs tile step `s` (contracted elements `32s..32s+32`) of the rhs panels `panels` of
/// `v` (`k x n`, rows contiguous: `strides.1 == 1`), panel `q`'s at
/// `dst + (q - panels.start) * panel` (`u32`s): the rows' runs are read whole, in order,
/// which the per-panel packing of [`rhs_panel`] would read 32 bytes at a time, a row apart.
///
/// # Safety
/// `v`'s elements lie inside one allocation and its rows are contiguous; `panels` are
/// panels of `v` (`q < n.div_ceil(16)`); `dst` holds `panels.len()` panels of `panel`
/// `u32`s, whose step-`s` tiles nothing else touches meanwhile.
pub(crate) unsafe fn rhs_step(
    v: &View,
    s: usize,
    panels: std::ops::Range<usize>,
    dst: *mut u32,
    panel: usize,
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2; the caller's contract.
        return unsafe { rhs_step_avx2(v, s, panels, dst, panel) };
    }
    // SAFETY: the caller's contract.
    unsafe { rhs_step_plain(v, s, panels, dst, panel) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rhs_step_avx2(
    v: &View,
    s: usize,
    panels: std::ops::Range<usize>,
    dst: *mut u32,
    panel: usize,
) {
    // SAFETY: the caller's contract.
    unsafe { rhs_step_plain(v, s, panels, dst, panel) }
}

#[inline(always)]
unsafe fn rhs_step_plain(
    v: &View,
    s: usize,
    panels: std::ops::Range<usize>,
    dst: *mut u32,
    panel: usize,
) {
    debug_assert!(v.strides.1 == 1 && panels.end <= v.cols.div_ceil(PANEL_COLS));
    let tile_u32 = TILE_U16 / 2;
    let whole = v.cols / PANEL_COLS;
    let row = |k: usize| -> &[u16] {
        if k < v.rows {
            // SAFETY: row `k` of the view, contiguous (the caller's contract).
            unsafe { std::slice::from_raw_parts(v.at.offset(k as isize * v.strides.0), v.cols) }
        } else {
            &[]
        }
    };
    for q in 0..TILE_ROWS {
        let k = s * TILE_K + 2 * q;
        let (lo, hi) = (row(k), row(k + 1));
        for (j, p) in panels.clone().enumerate() {
            // SAFETY: row `q` of panel `p`'s step-`s` tile (the caller's contract).
            let out = unsafe {
                std::slice::from_raw_parts_mut(
                    dst.add(j * panel + s * tile_u32 + q * PANEL_COLS),
                    PANEL_COLS,
                )
            };
            let c0 = p * PANEL_COLS;
            if p < whole && !lo.is_empty() && !hi.is_empty() {
                let (l, h) = (&lo[c0..c0 + PANEL_COLS], &hi[c0..c0 + PANEL_COLS]);
                for c in 0..PANEL_COLS {
                    out[c] = u32::from(l[c]) | (u32::from(h[c]) << 16);
                }
            } else {
                for (c, o) in out.iter_mut().enumerate() {
                    let l = lo.get(c0 + c).copied().unwrap_or(0);
                    let h = hi.get(c0 + c).copied().unwrap_or(0);
                    *o = u32::from(l) | (u32::from(h) << 16);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `rows x cols` matrix with distinct elements, in row- or column-major order.
    fn matrix(rows: usize, cols: usize, row_major: bool) -> (Vec<u16>, (isize, isize)) {
        let mut data = vec![0u16; rows * cols];
        let strides = if row_major {
            (cols as isize, 1)
        } else {
            (1, rows as isize)
        };
        for r in 0..rows {
            for c in 0..cols {
                data[(r as isize * strides.0 + c as isize * strides.1) as usize] =
                    (1 + r * cols + c) as u16;
            }
        }
        (data, strides)
    }

    #[test]
    fn panels_hold_every_element_once_and_zeros_elsewhere() {
        for &(rows, cols) in &[(1, 1), (16, 32), (17, 33), (40, 70), (5, 100)] {
            for row_major in [true, false] {
                let (data, strides) = matrix(rows, cols, row_major);
                let v = View {
                    at: data.as_ptr(),
                    rows,
                    cols,
                    strides,
                };
                let steps = cols.div_ceil(TILE_K);
                let mut a = vec![7u16; steps * TILE_U16];
                // The lhs: `rows x cols` is `m x k`.
                for p in 0..rows.div_ceil(TILE_ROWS) {
                    // SAFETY: `data` holds the view; `a` holds `steps` tiles.
                    unsafe { lhs_panel(&v, p, steps, &mut a) };
                    for (i, &x) in a.iter().enumerate() {
                        let (s, r, j) = (i / TILE_U16, i % TILE_U16 / TILE_K, i % TILE_K);
                        let (row, col) = (p * TILE_ROWS + r, s * TILE_K + j);
                        let want = if row < rows && col < cols {
                            (1 + row * cols + col) as u16
                        } else {
                            0
                        };
                        assert_eq!(x, want, "lhs {rows}x{cols} ({row}, {col})");
                    }
                }
                // The rhs: `rows x cols` is `k x n`.
                let steps = rows.div_ceil(TILE_K);
                let panel = steps * TILE_U16 / 2;
                if row_major {
                    // Step by step, every panel at once: the same panels.
                    let np = cols.div_ceil(16);
                    let (mut by_step, mut by_panel) =
                        (vec![7u32; np * panel], vec![9u32; np * panel]);
                    for s in 0..steps {
                        // SAFETY: `by_step` holds every panel.
                        unsafe { rhs_step(&v, s, 0..np, by_step.as_mut_ptr(), panel) };
                    }
                    for (p, dst) in by_panel.chunks_exact_mut(panel).enumerate() {
                        // SAFETY: `dst` is one panel.
                        unsafe { rhs_panel(&v, p, steps, dst) };
                    }
                    assert_eq!(by_step, by_panel, "rhs {rows}x{cols} by steps");
                    // A range of panels (a column block), from its first.
                    let (p0, p1) = (np / 3, np - np / 4);
                    let mut some = vec![5u32; (p1 - p0) * panel];
                    for s in 0..steps {
                        // SAFETY: `some` holds panels `p0..p1`.
                        unsafe { rhs_step(&v, s, p0..p1, some.as_mut_ptr(), panel) };
                    }
                    assert_eq!(
                        some,
                        by_panel[p0 * panel..p1 * panel],
                        "rhs {rows}x{cols} block"
                    );
                }
                let mut b = vec![7u32; panel];
                for p in 0..cols.div_ceil(16) {
                    // SAFETY: as above.
                    unsafe { rhs_panel(&v, p, steps, &mut b) };
                    for (i, &x) in b.iter().enumerate() {
                        let (s, q, c) = (i / 256, i % 256 / 16, i % 16);
                        let col = p * 16 + c;
                        for (half, k) in [
                            (x as u16, s * TILE_K + 2 * q),
                            ((x >> 16) as u16, s * TILE_K + 2 * q + 1),
                        ] {
                            let want = if k < rows && col < cols {
                                (1 + k * cols + col) as u16
                            } else {
                                0
                            };
                            assert_eq!(half, want, "rhs {rows}x{cols} ({k}, {col})");
                        }
                    }
                }
            }
        }
    }
}
