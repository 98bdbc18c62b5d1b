//! Conversions between `f32` and the half types' bits, bit for bit those of the C
//! prelude (`hloc_bf16_to_f32`, ...): nearest even, NaN quieted with its payload's
//! upper bits kept. The `f16` ones use the CPU's F16C instructions where it has them
//! (the same results, but for a signalling `f16` NaN, which F16C widens quieted: the
//! tests compare every `f16` and many `f32` values).
#![allow(unsafe_code)]

use codegen::kir::ScalarType;

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
    if std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx") {
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
    if std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx") {
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

/// Stores one row of `f32` sums as result elements of type `ty` starting `at` elements
/// into `out`, `cs` elements apart: `f32` (or `s32` sums' bits) as they are, `bf16` and
/// `f16` rounded once to nearest even. The last step of both tile paths for half
/// operands (AMX and AVX512-BF16), so they round their results the same way.
///
/// # Safety
/// Elements `at + j * cs` of `out` (in elements of `ty`) for `j < sums.len()` lie in one
/// writable allocation that nothing else reads or writes meanwhile.
pub(crate) unsafe fn store_row(sums: &[f32], ty: ScalarType, out: *mut u8, at: isize, cs: isize) {
    let cols = sums.len();
    // SAFETY: the caller's contract, for each element written.
    unsafe {
        match ty {
            ScalarType::F32 | ScalarType::S32 => {
                let dst = (out as *mut f32).offset(at);
                if cs == 1 {
                    std::ptr::copy_nonoverlapping(sums.as_ptr(), dst, cols);
                } else {
                    for (c, &x) in sums.iter().enumerate() {
                        *dst.offset(c as isize * cs) = x;
                    }
                }
            }
            ty if cs == 1 => {
                let dst = std::slice::from_raw_parts_mut((out as *mut u16).offset(at), cols);
                if ty == ScalarType::BF16 {
                    f32_to_bf16(sums, dst);
                } else {
                    f32_to_f16(sums, dst);
                }
            }
            ty => {
                let dst = (out as *mut u16).offset(at);
                let round = if ty == ScalarType::BF16 {
                    f32_to_bf16_one
                } else {
                    f32_to_f16_one
                };
                for (c, &x) in sums.iter().enumerate() {
                    *dst.offset(c as isize * cs) = round(x);
                }
            }
        }
    }
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
