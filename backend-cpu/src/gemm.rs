//! GEMMs through faer, the thin kernel ([`thin_gemm`]) for products with few columns,
//! the small-side kernel ([`gemv`]) for a few rows against a weight stored `[n, k]`, or
//! the small-row kernel ([`gemm_small`]) for up to 32 rows against a row-major weight:
//! batches of strided operands as the thunk builder described them, split among the
//! threads by batch elements, rows, columns or the contraction where the work pays for
//! the threads.
#![allow(unsafe_code)]

use std::ffi::c_void;

use codegen::kir::ScalarType;
use plan::GemmShape;
use rayon::prelude::*;

use crate::error::BackendError;
use crate::gemm_half::{self, Widened};
use crate::gemm_lhs_pack;
use crate::gemm_small;
use crate::gemv;
use crate::thin_gemm::{self, Part};

/// Which GEMMs this process runs on AMX tiles: `bf16` products (else widened to `f32`
/// copies and run as `f32` GEMMs) and `s8` products (else on the portable kernel). The
/// cost model prices each path at its own rate (`device::Library`'s `half_on_tiles` and
/// `s8_on_tiles`): the same description serves machines with and without the tiles.
pub fn gemm_tiles() -> GemmTiles {
    #[cfg(target_arch = "x86_64")]
    {
        let half = crate::gemm_path::path();
        GemmTiles {
            half: half == crate::gemm_path::Path::Amx,
            half_registers: half == crate::gemm_path::Path::Avx512Bf16,
            s8: crate::gemm_path::s8_on_tiles(),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        GemmTiles {
            half: false,
            half_registers: false,
            s8: false,
        }
    }
}

/// [`gemm_tiles`]' answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmTiles {
    /// `bf16 x bf16` products run on the tiles.
    pub half: bool,
    /// `bf16 x bf16` products run on AVX512-BF16 register tiles (no AMX, `vdpbf16ps`):
    /// at about the tiles' rate on this CPU class, not widened to the `f32` GEMM.
    pub half_registers: bool,
    /// `s8 x s8 -> s32` products run on the tiles.
    pub s8: bool,
}

/// Runs GEMM `shape` (with `k > 0`) on operands `lhs` and `rhs` into `out`; one with
/// `bf16`/`f16` operands or result on [`crate::gemm_half`], one of `s8` operands on
/// [`crate::gemm_s8`].
///
/// The pointers are the allocations of the thunk's buffers, which the thunk builder
/// checked against the shape's strides; `out` is writable and aliases neither operand.
pub(crate) fn gemm(
    shape: &GemmShape,
    (lhs, rhs, out): (*mut c_void, *mut c_void, *mut c_void),
    threads: usize,
) -> Result<(), BackendError> {
    if shape.ty == ScalarType::S32 {
        // SAFETY: the caller's contract; `plan` makes `s32` GEMMs of `s8` operands only.
        unsafe { crate::gemm_s8::gemm(shape, (lhs.cast(), rhs.cast(), out.cast()), threads) };
        return Ok(());
    }
    if !shape.uniform() {
        // SAFETY: the caller's contract.
        let widened =
            unsafe { Widened::new(shape, (lhs.cast(), rhs.cast(), out.cast()), threads)? };
        let Some(w) = widened else { return Ok(()) };
        let f32_shape = GemmShape {
            lhs_ty: ScalarType::F32,
            rhs_ty: ScalarType::F32,
            out_ty: ScalarType::F32,
            ..shape.clone()
        };
        let (a, b, c) = w.ptrs();
        // The `f32` copies keep the operands' strides and batch offsets, the result
        // scratch the result's.
        gemm_batches::<f32>(&f32_shape, a, b, c, threads);
        // SAFETY: the caller's contract for the result.
        unsafe { w.finish(threads) };
        return Ok(());
    }
    if gemm_lhs_pack::wanted(shape) {
        match shape.ty {
            ScalarType::F32 => {
                // The half GEMMs' lhs scratch of this thread, kept between calls.
                let mut a = gemm_half::take_scratch(0, gemm_lhs_pack::len(shape));
                gemm_packed_lhs::<f32>(
                    shape,
                    (lhs.cast(), rhs.cast(), out.cast()),
                    threads,
                    &mut a,
                );
                gemm_half::put_scratch(0, a);
                return Ok(());
            }
            ScalarType::F64 => {
                let mut a = vec![0f64; gemm_lhs_pack::len(shape)];
                gemm_packed_lhs::<f64>(
                    shape,
                    (lhs.cast(), rhs.cast(), out.cast()),
                    threads,
                    &mut a,
                );
                return Ok(());
            }
            _ => {}
        }
    }
    match shape.ty {
        ScalarType::F32 => gemm_batches::<f32>(shape, lhs.cast(), rhs.cast(), out.cast(), threads),
        ScalarType::F64 => gemm_batches::<f64>(shape, lhs.cast(), rhs.cast(), out.cast(), threads),
        t => return Err(BackendError::Internal(format!("gemm of {t}"))),
    }
    Ok(())
}

/// GEMM `s` with its column-major lhs copied row-major into `a` first
/// ([`gemm_lhs_pack`]): a single product split by rows copies, in each part, the rows that
/// part multiplies (one hand-off to the pool, and the copy still in the core's cache when
/// faer reads it); any other, the whole copy and then the product.
///
/// The pointers are as [`gemm`]'s contract describes, `a` holds [`gemm_lhs_pack::len`]
/// elements.
fn gemm_packed_lhs<T: Element + gemm_lhs_pack::Transposed>(
    s: &GemmShape,
    (lhs, rhs, out): (*const T, *const T, *mut T),
    threads: usize,
    a: &mut [T],
) {
    let count: usize = s.batch.iter().map(|b| b.0).product();
    let ps = gemm_lhs_pack::packed_shape(s);
    if let (1, Split::Rows(parts)) = (count, split(s.m, s.n, s.k, threads)) {
        let (n, k) = (s.n, s.k);
        // Each part's rows and its own piece of `a`.
        let mut pieces = Vec::with_capacity(parts);
        let mut rest = &mut a[..s.m * k];
        for j in 0..parts {
            let (r0, r1) = (s.m * j / parts, s.m * (j + 1) / parts);
            let (piece, tail) = rest.split_at_mut((r1 - r0) * k);
            pieces.push((r0, r1, piece));
            rest = tail;
        }
        let ptrs = (lhs as usize, rhs as usize, out as usize);
        pieces.into_par_iter().for_each(|(r0, r1, piece)| {
            let (lhs, rhs, out) = (ptrs.0 as *const T, ptrs.1 as *const T, ptrs.2 as *mut T);
            // SAFETY: rows `r0..r1` of the only batch element's lhs (the caller's contract).
            unsafe { gemm_lhs_pack::copy_rows(s, lhs, 0, (r0, r1), piece) };
            let part = Part {
                rows: (0, r1 - r0),
                cols: (0, n),
                ks: (0, k),
            };
            // SAFETY: the part's rows of the copy (row-major, `ps`'s strides) and of the
            // result (its batch offsets are 0: one batch element), which no other part
            // writes.
            unsafe {
                let out = out.offset(r0 as isize * s.out.0);
                part_product(&ps, 0, (piece.as_ptr(), rhs, out), part, None);
            }
        });
        return;
    }
    // SAFETY: the caller's contract for the lhs.
    let ps = unsafe { gemm_lhs_pack::packed(s, lhs, a, threads) };
    gemm_batches::<T>(&ps, a.as_ptr(), rhs, out, threads);
}

/// Products (all batch elements together) below this many multiply-adds run on the
/// calling thread alone: one thread does `2^20` in 15-25 us on the 2-core machine, about
/// what handing half of it to the pool costs (the calling thread is not one of the pool's:
/// it sleeps until the pool's threads wake, run the parts and wake it; more when another
/// process holds a core). A recurrent step's `[16,192] x [192,192]` (590K) took ~50 us in
/// two parts, 16-21 on one thread.
const PARALLEL_MIN_FLOPS: usize = 1 << 20;

/// The element types of the GEMM path: faer's and the thin kernel's.
pub(crate) trait Element:
    faer::traits::ComplexField + thin_gemm::Elem + num_one::One
{
    /// Runs an `m x n x k` product with a small side on [`gemv`] or [`gemm_small`]
    /// (`f32`: the weight read in place); `false`, nothing written, where it runs on
    /// neither.
    ///
    /// # Safety
    /// [`gemv::product`]'s contract.
    unsafe fn small_side(_p: &thin_gemm::Operands<Self>, _m: usize, _n: usize, _k: usize) -> bool {
        false
    }
}
impl Element for f32 {
    unsafe fn small_side(p: &thin_gemm::Operands<f32>, m: usize, n: usize, k: usize) -> bool {
        // SAFETY: the caller's contract (the two kernels' are the same).
        unsafe { gemv::product(p, m, n, k) || gemm_small::product(p, m, n, k) }
    }
}
impl Element for f64 {}

/// How a product is shared among the threads: each part is one sequential product, with
/// no synchronization inside it (faer's own parallel products wait at barriers between
/// their steps; on a machine shared with other processes a descheduled thread stalls
/// every barrier: a `[32, 32768] x [32768, 27]` weight gradient measured 1.4 ms alone and
/// 35-68 ms inside a training step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Split {
    /// One thread.
    None,
    /// Result rows in this many parts.
    Rows(usize),
    /// Result columns in this many parts.
    Cols(usize),
    /// The contraction in this many parts, each summed into its own result, then added.
    Contraction(usize),
}

/// Rows per thread from which a product splits by rows.
const ROWS_PER_THREAD: usize = 64;

/// Columns per thread from which a product splits by columns.
const COLS_PER_THREAD: usize = 32;

/// Contracted indices per thread from which a product with a small result splits its
/// contraction.
const CONTRACTION_PER_THREAD: usize = 256;

/// The largest result (elements) a split contraction sums from per-thread copies.
const CONTRACTION_SPLIT_MAX_RESULT: usize = 1 << 18;

/// Rows per thread from which a tall product splits into two parts per thread.
const TALL_ROWS_PER_THREAD: usize = 1024;

/// The split of an `m x n x k` product among `threads` (`Split::None` for one thread or a
/// small product).
fn split(m: usize, n: usize, k: usize, threads: usize) -> Split {
    if threads <= 1 || m.saturating_mul(n).saturating_mul(k) < PARALLEL_MIN_FLOPS {
        return Split::None;
    }
    if m >= ROWS_PER_THREAD * threads && m >= n {
        let parts = if m >= TALL_ROWS_PER_THREAD * threads {
            2 * threads
        } else {
            threads
        };
        return Split::Rows(parts);
    }
    if n >= COLS_PER_THREAD * threads {
        return Split::Cols(threads);
    }
    if m >= ROWS_PER_THREAD * threads {
        return Split::Rows(threads);
    }
    if k >= CONTRACTION_PER_THREAD * threads && m * n <= CONTRACTION_SPLIT_MAX_RESULT {
        return Split::Contraction(threads);
    }
    Split::None
}

/// Columns up to which a product of at least [`THIN_MIN_ROWS`] rows runs on the thin kernel.
const THIN_MAX_COLS: usize = 8;

/// Rows from which a product of few columns runs on the thin kernel.
const THIN_MIN_ROWS: usize = 64;

/// Whether the thin kernel runs an `m x n` product: one of 2-8 columns and at least
/// 64 rows (its narrow tile, the lhs read once). Measured against faer on one thread (CPU
/// time, the 2-core machine under load): `[4096,288] x [288,8]` 0.40 against 0.9 ms,
/// `x [288,3]` 0.31-0.45 against 0.54-0.63, `[100,64] x [64,5]` 2.2 against 2.8 us; at 16
/// and 32 columns the two trade places from run to run. faer keeps the rest, which it runs
/// faster on one thread: `[16,192] x [192,192]` 16 against 21 us, `[192,16] x [16,192]` (a
/// weight gradient, lhs transposed) 17 against 35, `[32,256] x [256,10]` 3.3 against 5.3,
/// `[2,512] x [512,512]` 45 against 95; matrix-vector products (its vector path reads the
/// matrix once); and the column parts of large products with few rows (a GRU step's
/// `[32,512] x [512,1536]` in two parts: 120 GFLOP/s on faer against 75 on this kernel,
/// `[32,128] x [128,1536]` 71 against 46, `--profile` on a quiet machine; gru_scan 0.89x
/// and 0.90x of the kernel's time in two runs with the binaries swapped).
fn thin(m: usize, n: usize) -> bool {
    (2..=THIN_MAX_COLS).contains(&n) && m >= THIN_MIN_ROWS
}

/// Runs the products of every batch element, split among the threads by [`split`].
fn gemm_batches<T: Element>(
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
    let whole = Part {
        rows: (0, s.m),
        cols: (0, s.n),
        ks: (0, s.k),
    };
    let ptrs = (lhs as usize, rhs as usize, out as usize);
    let ptrs_of = |p: (usize, usize, usize)| (p.0 as *const T, p.1 as *const T, p.2 as *mut T);
    let work = count.saturating_mul(s.m * s.n * s.k);
    // Enough batch elements: runs of consecutive ones, one sequential product at a time.
    if threads > 1 && count >= threads && work >= PARALLEL_MIN_FLOPS {
        let parts = count.min(BATCH_PARTS_PER_THREAD * threads);
        (0..parts).into_par_iter().for_each(|j| {
            for i in count * j / parts..count * (j + 1) / parts {
                // SAFETY: as in `part_product`; batch elements write disjoint parts of
                // `out`.
                unsafe { part_product(s, i, ptrs_of(ptrs), whole, None) };
            }
        });
        return;
    }
    let how = split(s.m, s.n, s.k, threads);
    let range = |len: usize, parts: usize, j: usize| (len * j / parts, len * (j + 1) / parts);
    for i in 0..count {
        match how {
            Split::None => {
                // SAFETY: as in `part_product`.
                unsafe { part_product(s, i, ptrs_of(ptrs), whole, None) };
            }
            Split::Rows(parts) | Split::Cols(parts) => {
                (0..parts).into_par_iter().for_each(|j| {
                    let part = if let Split::Rows(_) = how {
                        Part {
                            rows: range(s.m, parts, j),
                            ..whole
                        }
                    } else {
                        Part {
                            cols: range(s.n, parts, j),
                            ..whole
                        }
                    };
                    // SAFETY: as in `part_product`; the parts' rows or columns are
                    // disjoint.
                    unsafe { part_product(s, i, ptrs_of(ptrs), part, None) };
                });
            }
            Split::Contraction(parts) => {
                let mut partial = vec![T::default(); (parts - 1) * s.m * s.n];
                let scratch = partial.as_mut_ptr() as usize;
                let (m, n) = (s.m, s.n);
                (0..parts).into_par_iter().for_each(|j| {
                    let part = Part {
                        ks: range(s.k, parts, j),
                        ..whole
                    };
                    // Part 0 sums into the result, the others into their scratch copy
                    // (row-major `m x n`).
                    let into = (j > 0).then(|| {
                        // SAFETY: `partial` holds `parts - 1` copies of `m * n` elements.
                        unsafe { (scratch as *mut T).add((j - 1) * m * n) }
                    });
                    // SAFETY: as in `part_product`; each part writes its own result copy.
                    unsafe { part_product(s, i, ptrs_of(ptrs), part, into) };
                });
                // SAFETY: batch element `i`'s result, as in `part_product`.
                unsafe { add_partials(s, i, out, &partial) };
            }
        }
    }
}

/// Parts per thread of a batch split among the threads (runs of consecutive batch
/// elements): a thread that starts late or is descheduled holds back one run of them.
const BATCH_PARTS_PER_THREAD: usize = 4;

/// Adds the row-major `m x n` copies in `partial` to batch element `i`'s result.
///
/// # Safety
/// As [`part_product`]'s for the whole of batch element `i`'s result.
unsafe fn add_partials<T: Element>(s: &GemmShape, i: usize, out: *mut T, partial: &[T]) {
    let (_, _, oo) = s.batch_offsets(i);
    for copy in partial.chunks_exact(s.m * s.n) {
        for (r, row) in copy.chunks_exact(s.n).enumerate() {
            for (c, &x) in row.iter().enumerate() {
                // SAFETY: result element (r, c) of batch element `i`.
                unsafe {
                    let o = out.offset(oo + r as isize * s.out.0 + c as isize * s.out.1);
                    *o = *o + x;
                }
            }
        }
    }
}

/// Rows `[m0, m1)` and columns `[n0, n1)` of the product of batch element `i`, on one
/// thread (`par` is [`faer::Par::Seq`]) or faer's threads.
///
/// # Safety
/// As [`part_product`]'s for those rows and columns.
pub(crate) unsafe fn gemm_one<T: Element>(
    s: &GemmShape,
    i: usize,
    ptrs: (*const T, *const T, *mut T),
    (m0, m1): (usize, usize),
    (n0, n1): (usize, usize),
    par: faer::Par,
) {
    let part = Part {
        rows: (m0, m1),
        cols: (n0, n1),
        ks: (0, s.k),
    };
    // SAFETY: the caller's contract.
    unsafe { product_with(s, i, ptrs, part, None, par) }
}

/// Part `part` of the product of batch element `i`, on this thread, written into the
/// result or (`into`) into a row-major `m x n` scratch copy of it.
///
/// # Safety
/// The pointers hold the dot's operands and result with the layouts `s`'s strides were
/// computed from (checked by the thunk builder), so every element the part covers, at
/// batch element `i`'s offsets, lies inside its allocation; the result (or `into`, of
/// `m * n` elements) does not alias the operands and nothing else touches the part's
/// result elements during the call.
unsafe fn part_product<T: Element>(
    s: &GemmShape,
    i: usize,
    ptrs: (*const T, *const T, *mut T),
    part: Part,
    into: Option<*mut T>,
) {
    // SAFETY: the caller's contract.
    unsafe { product_with(s, i, ptrs, part, into, faer::Par::Seq) }
}

/// [`part_product`] on faer's `par` threads where faer runs it.
///
/// # Safety
/// As [`part_product`]'s.
unsafe fn product_with<T: Element>(
    s: &GemmShape,
    i: usize,
    (lhs, rhs, out): (*const T, *const T, *mut T),
    part: Part,
    into: Option<*mut T>,
    par: faer::Par,
) {
    let (lo, ro, oo) = s.batch_offsets(i);
    let (out, os) = match into {
        Some(p) => (p, (s.n as isize, 1)),
        None => (
            // SAFETY: batch element `i`'s result lies inside the allocation.
            unsafe { out.offset(oo) },
            s.out,
        ),
    };
    let (m0, m1) = part.rows;
    let (n0, n1) = part.cols;
    let (k0, k1) = part.ks;
    // SAFETY: offsets of elements the part covers (the caller's contract).
    let (a, b, c) = unsafe {
        (
            lhs.offset(lo + m0 as isize * s.lhs.0 + k0 as isize * s.lhs.1),
            rhs.offset(ro + k0 as isize * s.rhs.0 + n0 as isize * s.rhs.1),
            out.offset(m0 as isize * os.0 + n0 as isize * os.1),
        )
    };
    let (m, n, k) = (m1 - m0, n1 - n0, k1 - k0);
    let ops = thin_gemm::Operands {
        lhs: a,
        ls: s.lhs,
        rhs: b,
        rs: s.rhs,
        out: c,
        os,
    };
    // SAFETY: the caller's contract, for the part's views.
    if !thin(m, n) && unsafe { T::small_side(&ops, m, n, k) } {
        return;
    }
    if thin(m, n) {
        let whole = Part {
            rows: (0, m),
            cols: (0, n),
            ks: (0, k),
        };
        // SAFETY: the caller's contract, for the part's views.
        unsafe { thin_gemm::product(&ops, whole) };
        return;
    }
    // SAFETY: the caller's contract: the views lie inside their allocations and the
    // result is written by this call alone.
    let (a, b, c) = unsafe {
        (
            faer::MatRef::from_raw_parts(a, m, k, s.lhs.0, s.lhs.1),
            faer::MatRef::from_raw_parts(b, k, n, s.rhs.0, s.rhs.1),
            faer::MatMut::from_raw_parts_mut(c, m, n, os.0, os.1),
        )
    };
    faer::linalg::matmul::matmul(c, faer::Accum::Replace, a, b, T::one(), par);
}

/// The multiplicative identity of the GEMM element types.
pub(crate) mod num_one {
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
