//! GEMMs through faer: batches of row- or column-major operands as the thunk builder
//! described them, parallel where the work pays for the threads.
#![allow(unsafe_code)]

use std::ffi::c_void;

use codegen::kir::ScalarType;
use plan::GemmShape;
use rayon::prelude::*;

use crate::error::BackendError;

/// Runs GEMM `shape` (with `k > 0`) on operands `lhs` and `rhs` into `out`.
///
/// The pointers are the allocations of the thunk's buffers, which the thunk builder
/// checked against the shape's strides; `out` is writable and aliases neither operand.
pub(crate) fn gemm(
    shape: &GemmShape,
    (lhs, rhs, out): (*mut c_void, *mut c_void, *mut c_void),
    threads: usize,
) -> Result<(), BackendError> {
    match shape.ty {
        ScalarType::F32 => gemm_batches::<f32>(shape, lhs.cast(), rhs.cast(), out.cast(), threads),
        ScalarType::F64 => gemm_batches::<f64>(shape, lhs.cast(), rhs.cast(), out.cast(), threads),
        t => return Err(BackendError::Internal(format!("gemm of {t}"))),
    }
    Ok(())
}

/// Products below this many multiply-adds run single-threaded.
const PARALLEL_MIN_FLOPS: usize = 1 << 18;

/// Runs one GEMM per batch element through faer's matmul: on x86-64 it dispatches to AVX-512 (or AVX2) microkernels at
/// run time on stable Rust, where the `gemm` crate needs a nightly feature for AVX-512
/// (measured on a 2048^3 f32 product: about twice as fast here).
fn gemm_batches<T: faer::traits::ComplexField + Copy + num_one::One>(
    s: &GemmShape,
    lhs: *const T,
    rhs: *const T,
    out: *mut T,
    threads: usize,
) {
    if s.m == 0 || s.n == 0 {
        return;
    }
    let count: usize = s.batch.iter().map(|b| b.0).product();
    let big = s.m * s.n * s.k >= PARALLEL_MIN_FLOPS;
    // Enough batch elements: one sequential product per thread at a time (no
    // synchronization inside a product); else each product uses every thread.
    if threads > 1 && count >= threads && big {
        let ptrs = (lhs as usize, rhs as usize, out as usize);
        (0..count).into_par_iter().for_each(|i| {
            let (l, r, o) = (ptrs.0 as *const T, ptrs.1 as *const T, ptrs.2 as *mut T);
            // SAFETY: as in `gemm_one`; batch elements write disjoint parts of `out`.
            unsafe { gemm_one(s, i, (l, r, o), (0, s.m), (0, s.n), faer::Par::Seq) };
        });
        return;
    }
    // A tall product (many rows, few columns) splits by rows, a wide one by columns: one
    // sequential product per part, in parallel (each packs only its own operand part; no
    // synchronization inside a product).
    let tall = s.m >= TALL_ROWS_PER_THREAD * threads && s.m >= 4 * s.n;
    let wide = s.n >= WIDE_COLS_PER_THREAD * threads;
    if threads > 1 && big && (tall || wide) {
        let ptrs = (lhs as usize, rhs as usize, out as usize);
        let parts = if tall { threads * 2 } else { threads };
        let split = |len: usize, j: usize| (len * j / parts, len * (j + 1) / parts);
        for i in 0..count {
            (0..parts).into_par_iter().for_each(|j| {
                let (rows, cols) = if tall {
                    (split(s.m, j), (0, s.n))
                } else {
                    ((0, s.m), split(s.n, j))
                };
                let (l, r, o) = (ptrs.0 as *const T, ptrs.1 as *const T, ptrs.2 as *mut T);
                // SAFETY: as in `gemm_one`; the parts' row or column ranges are disjoint.
                unsafe { gemm_one(s, i, (l, r, o), rows, cols, faer::Par::Seq) };
            });
        }
        return;
    }
    let par = if threads > 1 && big {
        faer::Par::rayon(threads)
    } else {
        faer::Par::Seq
    };
    for i in 0..count {
        // SAFETY: as in `gemm_one`.
        unsafe { gemm_one(s, i, (lhs, rhs, out), (0, s.m), (0, s.n), par) };
    }
}

/// Columns per thread from which a product is split by columns.
const WIDE_COLS_PER_THREAD: usize = 128;

/// Rows per thread from which a tall product is split by rows.
const TALL_ROWS_PER_THREAD: usize = 1024;

/// Rows `[m0, m1)` and columns `[n0, n1)` of the product of batch element `i` (batch offsets in
/// mixed radix over the batch dims).
///
/// # Safety
/// The pointers hold the dot's operands and result with the layouts `s`'s strides were
/// computed from (checked by the thunk builder), so every element the views cover, at
/// batch element `i`'s offsets, lies inside its allocation; the result does not alias
/// the operands (a fresh temporary) and nothing else touches batch element `i`'s result
/// during the call.
pub(crate) unsafe fn gemm_one<T: faer::traits::ComplexField + Copy + num_one::One>(
    s: &GemmShape,
    i: usize,
    (lhs, rhs, out): (*const T, *const T, *mut T),
    (m0, m1): (usize, usize),
    (n0, n1): (usize, usize),
    par: faer::Par,
) {
    let (mut rest, mut lo, mut ro, mut oo) = (i, 0isize, 0isize, 0isize);
    for &(n, ls, rs, os) in s.batch.iter().rev() {
        let j = (rest % n) as isize;
        rest /= n;
        lo += j * ls;
        ro += j * rs;
        oo += j * os;
    }
    // SAFETY: the caller's contract: the views lie inside their allocations and the
    // result is written by this call alone.
    let (a, b, c) = unsafe {
        (
            faer::MatRef::from_raw_parts(
                lhs.offset(lo + m0 as isize * s.lhs.0),
                m1 - m0,
                s.k,
                s.lhs.0,
                s.lhs.1,
            ),
            faer::MatRef::from_raw_parts(
                rhs.offset(ro + n0 as isize * s.rhs.1),
                s.k,
                n1 - n0,
                s.rhs.0,
                s.rhs.1,
            ),
            faer::MatMut::from_raw_parts_mut(
                out.offset(oo + m0 as isize * s.out.0 + n0 as isize * s.out.1),
                m1 - m0,
                n1 - n0,
                s.out.0,
                s.out.1,
            ),
        )
    };
    faer::linalg::matmul::matmul(c, faer::Accum::Replace, a, b, T::one(), par);
}

/// The multiplicative identity of the GEMM element types.
mod num_one {
    /// `1` of a type.
    pub trait One {
        /// The value one.
        fn one() -> Self;
    }
    impl One for f32 {
        fn one() -> f32 {
            1.0
        }
    }
    impl One for f64 {
        fn one() -> f64 {
            1.0
        }
    }
}
