//! The AVX512-BF16 register tile of [`crate::gemm_bf16`]: `MR` result rows times one or
//! two 16-column panels, summed with `vdpbf16ps` (`_mm512_dpbf16_ps`), which adds to each
//! `f32` lane the two products of a pair of `bf16` along the contraction. The rhs panels
//! are [`crate::gemm_amx_pack`]'s (16 columns of `(even, odd)` pairs a row: one `zmm` a
//! contracted pair), and each lhs pair (one `u32`) is broadcast to all 16 lanes, the
//! pattern of the `s8` VNNI tile ([`crate::gemm_s8_vnni`]).
//!
//! `vdpbf16ps` reads `bf16` denormal inputs as zero, flushes denormal results to zero and
//! rounds to nearest even whatever MXCSR says (as the AMX tiles' `tdpbf16ps`, and as
//! XLA:CPU's oneDNN kernels compute on this hardware); the additions of the accumulators
//! into the result ([`tile`]'s `add`) are ordinary `vaddps`.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

/// Result rows of the register tile: with two panels, `2 * MR` accumulators plus the two
/// rhs rows of a step fit the 32 `zmm` registers, and enough independent sums are in
/// flight to cover `vdpbf16ps`'s latency at two a cycle.
pub(crate) const MR: usize = 8;

/// Columns of one rhs panel (one `zmm` of `f32` sums).
pub(crate) const NR: usize = 16;

/// Whether this CPU runs [`tile`]: AVX-512F and AVX512-BF16.
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512bf16")
}

/// Where the `MR` rows of lhs pairs of a tile lie: pair `q` of row `i` is the `u32` at
/// `rows[i] + q * pair` bytes (a packed chunk: rows 4 bytes apart, pairs `4 * MR`; an lhs
/// read in place: each row's own address, pairs 4 bytes apart).
#[derive(Clone, Copy)]
pub(crate) struct LhsPairs {
    /// Pair 0 of each row.
    pub(crate) rows: [*const u8; MR],
    /// Bytes from one pair to the next.
    pub(crate) pair: usize,
}

/// The `MR x (PN * NR)` sums over `qn` pairs of lhs `a` times rhs panels `b` (each panel
/// `[qn][NR]` pairs, one `u32` a column, 64 bytes a pair), written to `c` (row stride
/// `ldc` elements; columns `p * NR..` from panel `p`): stored when `add` is false, added to
/// what `c` holds when it is true.
///
/// # Safety
/// The CPU has AVX-512F and AVX512-BF16 ([`available`]); each of `a`'s rows holds `qn`
/// pairs where its fields say, each `b[p]` `qn * NR` `u32`s, and `c` is writable at
/// `i * ldc + j` for `i < MR`, `j < PN * NR`.
#[target_feature(enable = "avx512f,avx512bf16")]
pub(crate) unsafe fn tile<const PN: usize>(
    a: LhsPairs,
    b: [*const u32; PN],
    qn: usize,
    c: *mut f32,
    ldc: usize,
    add: bool,
) {
    let mut acc = [[_mm512_setzero_ps(); PN]; MR];
    for q in 0..qn {
        let off = q * a.pair;
        // SAFETY: pair `q` of each panel (16 `u32`, one `zmm`) and of each lhs row lie
        // where the caller's contract says.
        unsafe {
            let y: [__m512bh; PN] =
                b.map(|p| std::mem::transmute(_mm512_loadu_si512(p.add(q * NR).cast())));
            for (i, acc) in acc.iter_mut().enumerate() {
                let pair = a.rows[i].add(off).cast::<i32>().read_unaligned();
                let x: __m512bh = std::mem::transmute(_mm512_set1_epi32(pair));
                for (acc, &y) in acc.iter_mut().zip(&y) {
                    *acc = _mm512_dpbf16_ps(*acc, y, x);
                }
            }
        }
    }
    for (i, acc) in acc.iter().enumerate() {
        for (p, &acc) in acc.iter().enumerate() {
            // SAFETY: row `i`'s 16 sums of panel `p` lie in `c` (the caller's contract).
            unsafe {
                let at = c.add(i * ldc + p * NR);
                let v = if add {
                    _mm512_add_ps(_mm512_loadu_ps(at), acc)
                } else {
                    acc
                };
                _mm512_storeu_ps(at, v);
            }
        }
    }
}
