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
//!
//! Products of two `bf16` operands run instead on the AMX tiles where the CPU has them
//! ([`crate::gemm_amx`]), else on AVX512-BF16 register tiles where it has those
//! ([`crate::gemm_bf16`]; both chosen at run time, `HLOC_GEMM_HALF=convert` forces this
//! path): [`Widened::new`] hands them over and reports nothing left to do. `f16` operands stay
//! on this path (no AMX-FP16 on the CPUs we run on; F16C widens them).
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
pub(crate) fn take_scratch(slot: usize, len: usize) -> Vec<f32> {
    let mut v = SCRATCH.with(|s| s[slot].take());
    if v.len() < len {
        v = vec![0.0; len];
    }
    v
}

/// Gives buffer `v` back to slot `slot` for the next call on this thread.
pub(crate) fn put_scratch(slot: usize, v: Vec<f32>) {
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
    /// `f32`, `bf16` or `f16`); `None` when nothing is left to do: the result has no
    /// element, or the product ran on the AMX tiles ([`crate::gemm_amx::gemm`]).
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
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract, which is `gemm_amx::gemm`'s.
        if unsafe { crate::gemm_amx::gemm(s, (lhs, rhs, out), threads) } {
            return Ok(None);
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract, which is `gemm_bf16::gemm`'s.
        if unsafe { crate::gemm_bf16::gemm(s, (lhs, rhs, out), threads) } {
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

pub(crate) mod convert;
