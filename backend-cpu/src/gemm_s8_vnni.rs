//! The AVX-512 VNNI register tile of [`crate::gemm_s8_avx2`]'s packed `s8` GEMM: the
//! same packed operands (lhs `[q][MR]` pairs, rhs 16-column panels of `[q][16][2]` `s16`),
//! one 16-column panel's pair row being exactly one `zmm`, summed with `vpdpwssd` (pair
//! products added into `s32` lanes in one instruction, wrapping as `vpaddd`: the
//! non-saturating form). Twice the lanes of the AVX2 tile and no separate add: on a Zen 5
//! without AMX this is the s8 GEMM's fast path.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

/// Result rows of the register tile; the AVX2 tile takes the same, so the lhs packing is
/// shared (defined here because the AVX2 file already depends on this one).
pub(crate) const MR: usize = 6;
/// Columns of one rhs panel.
const NR: usize = 16;

/// Whether this CPU runs [`tile`].
pub(crate) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vnni")
}

/// Adds the `MR x (PN * NR)` product of `qn` packed pairs into `c` (row stride `ldc`):
/// `a` holds `[qn][MR]` lhs pairs, `b[p]` panel `p`'s `[qn][NR][2]` rhs pairs; result
/// columns `p * NR..` come from panel `p`. Wrapping `s32` sums.
///
/// # Safety
/// The CPU has AVX-512F and AVX-512 VNNI ([`available`]); `a` holds `qn * MR`, each
/// `b[p]` `qn * NR * 2` and `c` at least `(MR - 1) * ldc + PN * NR` elements.
#[target_feature(enable = "avx512f,avx512vnni")]
pub(crate) unsafe fn tile<const PN: usize>(
    a: &[u32],
    b: [&[i16]; PN],
    c: &mut [i32],
    ldc: usize,
    qn: usize,
) {
    debug_assert!(a.len() >= qn * MR && b.iter().all(|b| b.len() >= qn * NR * 2));
    debug_assert!(c.len() >= (MR - 1) * ldc + PN * NR);
    let ap = a.as_ptr();
    let bp = b.map(|b| b.as_ptr());
    let cp = c.as_mut_ptr();
    let mut acc = [[_mm512_setzero_si512(); PN]; MR];
    for q in 0..qn {
        // SAFETY: pair `q` of each panel (32 `s16`, one `zmm`) lies in `b[p]`, its `MR`
        // rows in `a`.
        unsafe {
            let y = bp.map(|p| _mm512_loadu_si512(p.add(q * NR * 2).cast()));
            for (i, acc) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_epi32(*ap.add(q * MR + i) as i32);
                for (acc, &y) in acc.iter_mut().zip(&y) {
                    *acc = _mm512_dpwssd_epi32(*acc, x, y);
                }
            }
        }
    }
    for (i, acc) in acc.iter().enumerate() {
        for (p, acc) in acc.iter().enumerate() {
            // SAFETY: row `i`'s 16 sums of panel `p` lie in `c` at `i * ldc + p * NR`.
            unsafe {
                let at = cp.add(i * ldc + p * NR).cast::<__m512i>();
                _mm512_storeu_si512(at, _mm512_add_epi32(_mm512_loadu_si512(at), *acc));
            }
        }
    }
}
