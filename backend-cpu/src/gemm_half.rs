//! GEMMs with `bf16` or `f16` operands or results, computed in `f32` as XLA:CPU computes
//! them (operands widened exactly, `f32` sums, the result rounded once to nearest even).
//!
//! The half operands are widened inside the GEMM call, in memory order (so the `f32`
//! copy keeps the operand's strides and batch offsets) by vector conversions split among
//! the threads, into scratch buffers that each calling thread keeps between calls (no
//! page faults per call); the `f32` product then runs on `gemm`'s path; a half result
//! is summed in `f32` scratch and rounded in one vector pass. Before, each half
//! operand was a separate generated convert kernel writing an `f32` array (~1 ns per
//! element) and a half result another one.
#![allow(unsafe_code)]

use std::cell::Cell;

use codegen::kir::ScalarType;
use plan::GemmShape;
use rayon::prelude::*;

use crate::error::BackendError;

/// Elements from which a conversion is split among the threads.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 16;

/// Elements of one conversion chunk handed to a thread.
const CHUNK: usize = 1 << 14;

thread_local! {
    /// Scratch `f32` buffers of this thread's mixed GEMMs (lhs, rhs, result), kept
    /// between calls; taken out while in use, so a nested call on the same thread gets
    /// fresh ones.
    static SCRATCH: [Cell<Vec<f32>>; 3] = const {
        [Cell::new(Vec::new()), Cell::new(Vec::new()), Cell::new(Vec::new())]
    };
}

/// A scratch buffer of at least `len` elements (contents unspecified) from slot `slot`.
fn take_scratch(slot: usize, len: usize) -> Vec<f32> {
    let mut v = SCRATCH.with(|s| s[slot].take());
    if v.len() < len {
        v = vec![0.0; len];
    }
    v
}

/// Gives buffer `v` back to slot `slot` for the next call on this thread.
fn put_scratch(slot: usize, v: Vec<f32>) {
    SCRATCH.with(|s| s[slot].set(v));
}

/// Elements an operand spans from its base: one past its farthest element (`0` when it
/// has none). Strides are those of a layout, so never negative.
fn span(dims: &[(usize, isize)]) -> usize {
    if dims.iter().any(|d| d.0 == 0) {
        return 0;
    }
    1 + dims
        .iter()
        .map(|&(n, st)| (n - 1) * st.unsigned_abs())
        .sum::<usize>()
}

/// A mixed GEMM's operands widened to `f32` and its `f32` result: the pointers an `f32`
/// GEMM with the same strides runs on ([`Widened::ptrs`]), then [`Widened::finish`]
/// rounds the result into its type.
pub(crate) struct Widened {
    /// The scratch copies (lhs, rhs, result) in use, `None` where the type is `f32`.
    scratch: [Option<Vec<f32>>; 3],
    /// The lhs, rhs and result of the `f32` product.
    ptrs: (*const f32, *const f32, *mut f32),
    /// The result's type and its pointer and span (elements).
    out: (ScalarType, *mut u16, usize),
}

impl Widened {
    /// Widens mixed GEMM `s`'s half operands (`s.ty` is `f32`; each stored type is
    /// `f32`, `bf16` or `f16`); `None` when the result has no element.
    ///
    /// # Safety
    /// As `gemm::gemm`'s: the pointers hold the operands and the result with the
    /// layouts the shape's strides were computed from.
    pub(crate) unsafe fn new(
        s: &GemmShape,
        (lhs, rhs, out): (*const u8, *const u8, *mut u8),
        threads: usize,
    ) -> Result<Option<Widened>, BackendError> {
        for t in [s.ty, s.lhs_ty, s.rhs_ty, s.out_ty] {
            if !matches!(t, ScalarType::F32 | ScalarType::BF16 | ScalarType::F16) {
                return Err(BackendError::Internal(format!(
                    "gemm of {} in {}",
                    s.type_label(),
                    s.ty
                )));
            }
        }
        let spans = |rows: (usize, isize), cols: (usize, isize), pick: usize| {
            let mut dims = vec![rows, cols];
            dims.extend(s.batch.iter().map(|b| (b.0, [b.1, b.2, b.3][pick])));
            span(&dims)
        };
        let lspan = spans((s.m, s.lhs.0), (s.k, s.lhs.1), 0);
        let rspan = spans((s.k, s.rhs.0), (s.n, s.rhs.1), 1);
        let ospan = spans((s.m, s.out.0), (s.n, s.out.1), 2);
        if ospan == 0 {
            return Ok(None);
        }
        let wide = |slot: usize, ty: ScalarType, src: *const u8, len: usize| {
            if ty == ScalarType::F32 {
                return (None, src.cast::<f32>());
            }
            let mut buf = take_scratch(slot, len);
            // SAFETY: the operand spans `len` elements of `ty` from `src` (the caller's
            // contract); `buf` holds at least `len`.
            unsafe { widen(ty, src.cast(), &mut buf[..len], threads) };
            let p = buf.as_ptr();
            (Some(buf), p)
        };
        let (lbuf, a) = wide(0, s.lhs_ty, lhs, lspan);
        let (rbuf, b) = wide(1, s.rhs_ty, rhs, rspan);
        let mut obuf = (s.out_ty != ScalarType::F32).then(|| take_scratch(2, ospan));
        let c = match obuf.as_mut() {
            Some(v) => v.as_mut_ptr(),
            None => out.cast::<f32>(),
        };
        Ok(Some(Widened {
            scratch: [lbuf, rbuf, obuf],
            ptrs: (a, b, c),
            out: (s.out_ty, out.cast(), ospan),
        }))
    }

    /// The `f32` lhs, rhs and result, with the strides and batch offsets of the shape.
    pub(crate) fn ptrs(&self) -> (*const f32, *const f32, *mut f32) {
        self.ptrs
    }

    /// Rounds an `f32` result scratch into the result and keeps the scratch buffers for
    /// this thread's next call.
    ///
    /// # Safety
    /// The result pointer given to [`Widened::new`] is still valid, and nothing else
    /// reads or writes the result during the call.
    pub(crate) unsafe fn finish(self, threads: usize) {
        let [l, r, o] = self.scratch;
        if let Some(v) = o {
            let (ty, out, len) = self.out;
            // SAFETY: the result spans `len` elements of `ty` (the caller's contract).
            unsafe { narrow(ty, &v[..len], out, threads) };
            put_scratch(2, v);
        }
        for (slot, v) in [(0, l), (1, r)] {
            if let Some(v) = v {
                put_scratch(slot, v);
            }
        }
    }
}

/// `dst[i] = src[i]` widened from `ty` (`bf16` or `f16` bits) to `f32`, in chunks split
/// among the threads for large arrays.
///
/// # Safety
/// `src` holds `dst.len()` elements.
unsafe fn widen(ty: ScalarType, src: *const u16, dst: &mut [f32], threads: usize) {
    // SAFETY: the caller's contract.
    let src = unsafe { std::slice::from_raw_parts(src, dst.len()) };
    let f16 = ty == ScalarType::F16;
    let one = |(s, d): (&[u16], &mut [f32])| {
        if f16 {
            convert::f16_to_f32(s, d)
        } else {
            convert::bf16_to_f32(s, d)
        }
    };
    if threads > 1 && dst.len() >= PARALLEL_MIN_ELEMENTS {
        src.par_chunks(CHUNK)
            .zip(dst.par_chunks_mut(CHUNK))
            .for_each(one);
    } else {
        one((src, dst));
    }
}

/// `dst[i] = src[i]` rounded to nearest even into `ty` (`bf16` or `f16` bits), in chunks
/// split among the threads for large arrays.
///
/// # Safety
/// `dst` holds `src.len()` writable elements that nothing else reads or writes during
/// the call.
unsafe fn narrow(ty: ScalarType, src: &[f32], dst: *mut u16, threads: usize) {
    // SAFETY: the caller's contract.
    let dst = unsafe { std::slice::from_raw_parts_mut(dst, src.len()) };
    let f16 = ty == ScalarType::F16;
    let one = |(s, d): (&[f32], &mut [u16])| {
        if f16 {
            convert::f32_to_f16(s, d)
        } else {
            convert::f32_to_bf16(s, d)
        }
    };
    if threads > 1 && src.len() >= PARALLEL_MIN_ELEMENTS {
        src.par_chunks(CHUNK)
            .zip(dst.par_chunks_mut(CHUNK))
            .for_each(one);
    } else {
        one((src, dst));
    }
}

/// Conversions between `f32` and the half types' bits, bit for bit those of the C
/// prelude (`hloc_bf16_to_f32`, ...): nearest even, NaN quieted with its payload's
/// upper bits kept. The `f16` ones use the CPU's F16C instructions where it has them
/// (the same results, but for a signalling `f16` NaN, which F16C widens quieted: the
/// tests compare every `f16` and many `f32` values).
pub(crate) mod convert {
    /// `bf16` bits to `f32`: exact.
    pub(crate) fn bf16_to_f32(src: &[u16], dst: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked above).
            return unsafe { bf16_to_f32_avx2(src, dst) };
        }
        bf16_to_f32_plain(src, dst)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn bf16_to_f32_avx2(src: &[u16], dst: &mut [f32]) {
        bf16_to_f32_plain(src, dst)
    }

    #[inline(always)]
    fn bf16_to_f32_plain(src: &[u16], dst: &mut [f32]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f32::from_bits(u32::from(s) << 16);
        }
    }

    /// `f32` to `bf16` bits, nearest even; NaN quieted.
    pub(crate) fn f32_to_bf16(src: &[f32], dst: &mut [u16]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked above).
            return unsafe { f32_to_bf16_avx2(src, dst) };
        }
        f32_to_bf16_plain(src, dst)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn f32_to_bf16_avx2(src: &[f32], dst: &mut [u16]) {
        f32_to_bf16_plain(src, dst)
    }

    #[inline(always)]
    fn f32_to_bf16_plain(src: &[f32], dst: &mut [u16]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f32_to_bf16_one(s);
        }
    }

    /// One `f32` to `bf16` bits (the prelude's `hloc_f32_to_bf16`).
    #[inline(always)]
    pub(crate) fn f32_to_bf16_one(f: f32) -> u16 {
        let x = f.to_bits();
        let nan = (x & 0x7fff_ffff) > 0x7f80_0000;
        let quiet = (x >> 16) | 0x40;
        let rounded = x.wrapping_add(0x7fff + ((x >> 16) & 1)) >> 16;
        (if nan { quiet } else { rounded }) as u16
    }

    /// `f16` bits to `f32`: exact.
    pub(crate) fn f16_to_f32(src: &[u16], dst: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx")
        {
            // SAFETY: the CPU has F16C and AVX (checked above).
            return unsafe { f16_to_f32_f16c(src, dst) };
        }
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f16_to_f32_one(s);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn f16_to_f32_f16c(src: &[u16], dst: &mut [f32]) {
        use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
        let n = src.len().min(dst.len());
        let whole = n / 8 * 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: elements `i..i + 8` lie inside both slices (`i + 8 <= n`).
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(i).cast::<__m128i>());
                _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            }
        }
        for i in whole..n {
            dst[i] = f16_to_f32_one(src[i]);
        }
    }

    /// One `f16` to `f32` (the prelude's `hloc_f16_to_f32`).
    pub(crate) fn f16_to_f32_one(h: u16) -> f32 {
        let sign = u32::from(h & 0x8000) << 16;
        let e = u32::from((h >> 10) & 0x1f);
        let m = u32::from(h & 0x3ff);
        let bits = if e == 0x1f {
            sign | 0x7f80_0000 | (m << 13)
        } else if e == 0 {
            // `m * 2^-24`, exact.
            sign | (m as f32 * f32::from_bits(0x3380_0000)).to_bits()
        } else {
            sign | ((e + 112) << 23) | (m << 13)
        };
        f32::from_bits(bits)
    }

    /// `f32` to `f16` bits, nearest even; NaN quieted; too large gives infinity.
    pub(crate) fn f32_to_f16(src: &[f32], dst: &mut [u16]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx")
        {
            // SAFETY: the CPU has F16C and AVX (checked above).
            return unsafe { f32_to_f16_f16c(src, dst) };
        }
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f32_to_f16_one(s);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn f32_to_f16_f16c(src: &[f32], dst: &mut [u16]) {
        use std::arch::x86_64::{
            __m128i, _mm256_cvtps_ph, _mm256_loadu_ps, _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
        };
        let n = src.len().min(dst.len());
        let whole = n / 8 * 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: elements `i..i + 8` lie inside both slices (`i + 8 <= n`).
            unsafe {
                let f = _mm256_loadu_ps(src.as_ptr().add(i));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(f);
                _mm_storeu_si128(dst.as_mut_ptr().add(i).cast::<__m128i>(), h);
            }
        }
        for i in whole..n {
            dst[i] = f32_to_f16_one(src[i]);
        }
    }

    /// One `f32` to `f16` bits (the prelude's `hloc_f32_to_f16`).
    pub(crate) fn f32_to_f16_one(f: f32) -> u16 {
        let x = f.to_bits();
        let sign = ((x >> 16) & 0x8000) as u16;
        let ax = x & 0x7fff_ffff;
        if ax > 0x7f80_0000 {
            return sign | 0x7e00 | ((ax >> 13) & 0x3ff) as u16;
        }
        if ax >= 0x477f_f000 {
            return sign | 0x7c00;
        }
        if ax < 0x3880_0000 {
            let af = f32::from_bits(ax);
            return sign | (af * 16_777_216.0).round_ties_even() as u16;
        }
        let r = ax + 0xfff + ((ax >> 13) & 1);
        sign | ((r - 0x3800_0000) >> 13) as u16
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn every_f16_widens_as_the_prelude_does() {
            let src: Vec<u16> = (0..=u16::MAX).collect();
            let mut dst = vec![0f32; src.len()];
            f16_to_f32(&src, &mut dst);
            for (&h, &f) in src.iter().zip(&dst) {
                let want = f16_to_f32_one(h);
                // F16C quiets a signalling NaN (the prelude keeps it signalling); the
                // product quiets it either way.
                let quiet = |x: f32| x.to_bits() | if x.is_nan() { 0x0040_0000 } else { 0 };
                assert!(
                    quiet(f) == quiet(want),
                    "f16 {h:#06x}: {:#010x} != {:#010x}",
                    f.to_bits(),
                    want.to_bits()
                );
            }
            // The scalar port against known values.
            assert_eq!(f16_to_f32_one(0x3c00), 1.0);
            assert_eq!(f16_to_f32_one(0xc000), -2.0);
            assert_eq!(f16_to_f32_one(0x0001), 2f32.powi(-24));
            assert_eq!(f16_to_f32_one(0x7c00), f32::INFINITY);
            assert!(f16_to_f32_one(0x7e00).is_nan());
        }

        /// `f32` values around every rounding boundary of both half types, specials and
        /// random bit patterns.
        fn samples() -> Vec<f32> {
            let mut v = vec![
                0.0,
                -0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                -f32::NAN,
                f32::from_bits(0x7f80_0001),
                f32::from_bits(0xffc1_2345),
                65504.0,
                65519.99,
                65520.0,
                f32::MAX,
                f32::MIN_POSITIVE,
                1e-8,
                6.1e-5,
            ];
            for h in 0..=u16::MAX {
                // Each f16 and bf16 value and the points halfway to its neighbours.
                let f = f16_to_f32_one(h);
                let b = f32::from_bits(u32::from(h) << 16);
                for x in [f, b] {
                    v.push(x);
                    v.push(f32::from_bits(x.to_bits().wrapping_add(1)));
                    v.push(f32::from_bits(x.to_bits().wrapping_sub(1)));
                }
                v.push(f32::from_bits((u32::from(h) << 16) | 0x8000));
                v.push(f32::from_bits((u32::from(h) << 13) | 0x1000));
            }
            let mut s = 0x9e37_79b9_7f4a_7c15u64;
            for _ in 0..100_000 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                v.push(f32::from_bits(s as u32));
            }
            v
        }

        #[test]
        fn f32_narrows_as_the_prelude_does() {
            let src = samples();
            let mut h = vec![0u16; src.len()];
            let mut b = vec![0u16; src.len()];
            f32_to_f16(&src, &mut h);
            f32_to_bf16(&src, &mut b);
            for (i, &x) in src.iter().enumerate() {
                assert_eq!(h[i], f32_to_f16_one(x), "f16 of {:#010x}", x.to_bits());
                assert_eq!(b[i], f32_to_bf16_one(x), "bf16 of {:#010x}", x.to_bits());
            }
            // The scalar ports against known roundings.
            assert_eq!(f32_to_f16_one(1.0), 0x3c00);
            assert_eq!(f32_to_f16_one(65520.0), 0x7c00);
            assert_eq!(f32_to_f16_one(65519.99), 0x7bff);
            assert_eq!(f32_to_f16_one(f32::from_bits(0x3f80_1000)), 0x3c00);
            assert_eq!(f32_to_f16_one(f32::from_bits(0x3f80_3000)), 0x3c02);
            assert_eq!(f32_to_bf16_one(f32::from_bits(0x3f80_8000)), 0x3f80);
            assert_eq!(f32_to_bf16_one(f32::from_bits(0x3f81_8000)), 0x3f82);
            assert_eq!(f32_to_bf16_one(f32::from_bits(0x7f80_0001)), 0x7fc0);
            assert_eq!(f32_to_bf16_one(f32::MAX), 0x7f80);
        }

        #[test]
        fn bf16_widens_exactly() {
            let src: Vec<u16> = (0..=u16::MAX).collect();
            let mut dst = vec![0f32; src.len()];
            bf16_to_f32(&src, &mut dst);
            for (&h, &f) in src.iter().zip(&dst) {
                assert_eq!(f.to_bits(), u32::from(h) << 16);
            }
        }
    }
}
