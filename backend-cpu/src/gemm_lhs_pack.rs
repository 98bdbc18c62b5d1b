//! A column-major lhs (`lhs` strides `(1, ld)`: a transposed lhs, `tn`, or a weight
//! gradient whose contracting dimensions come first, `contracting_dims={0,1}`) copied
//! row-major before a large product with a row-major result. faer computes such a product
//! as `out^T = rhs^T lhs^T`, where `lhs^T` is then a row-major right operand that it reads
//! through a strided packing: `f32[1024,1024]` `tn` measured 82 ms against 30 for `nn`
//! (2.05x XLA:CPU), `f32[16,128,512]` over two contracting dimensions 2.11x. The copy is
//! a transpose of `m x k` elements in 8 x 8 register tiles ([`Transposed`]), split among
//! the threads by rows, each thread copying the rows it then multiplies
//! ([`crate::gemm`]), so the copy is hot in its core's cache when faer reads it.
//!
//! One thread (`taskset -c 1`, load 5, min of 15 runs, same run): `tn` 1024^3 17.8 ms
//! with the earlier scalar copy of the whole lhs, 16.5-16.7 with this one (`nn` 13.7-14.3);
//! the scalar copy alone took 3.1 ms, the tiles 0.7-1.0. The earlier copy was kept to
//! contractions no longer than the result's longer side (the two-contracting
//! `[512, 2048] x [2048, 512]` ran 9.4 ms from the column-major lhs, 16.1 with that copy);
//! with the tiles it runs 8.4-8.8 ms copied against 9.1-9.7 not (one thread), so
//! contractions up to 4 times the longer side are copied ([`MAX_K_PER_EXTENT`]).
#![allow(unsafe_code)]

use plan::GemmShape;
use rayon::prelude::*;

/// The smallest `m`, `n` and `k` from which the lhs is copied (below, the small-side and
/// thin kernels or faer's own small path take the product).
const MIN_EXTENT: usize = 64;

/// The longest contraction copied, per element of the result's longer side: measured
/// faster copied up to 4 (the two-contracting `[512, 2048] x [2048, 512]`); longer ones
/// with a small result (a weight gradient over many tokens into `64 x 64`) were not
/// measured, and there the copy (`m k` elements) nears the product's own time.
const MAX_K_PER_EXTENT: usize = 4;

/// Rows (result rows, the copy's) of one chunk of the whole-lhs copy.
const BLOCK: usize = 32;

/// Elements from which the copy is split among the threads.
const PARALLEL_MIN_ELEMENTS: usize = 1 << 16;

/// Whether GEMM `s` runs faster with its lhs copied row-major: see the module
/// documentation.
pub(crate) fn wanted(s: &GemmShape) -> bool {
    s.lhs.0 == 1
        && s.lhs.1 != 1
        && s.out.1 == 1
        && s.m >= MIN_EXTENT
        && s.n >= MIN_EXTENT
        && s.k >= MIN_EXTENT
        && s.k <= MAX_K_PER_EXTENT * s.m.max(s.n)
}

/// Elements of the row-major copy of `s`'s lhs (every batch element).
pub(crate) fn len(s: &GemmShape) -> usize {
    s.batch.iter().map(|b| b.0).product::<usize>() * s.m * s.k
}

/// The element types whose column-major lhs is copied: a scalar copy, or a vector one
/// where the type has it.
pub(crate) trait Transposed: Copy + Send + Sync {
    /// Copies the `rows x k` matrix at `src` (element `(r, c)` at `src[r + c * ld]`)
    /// row-major into `dst` (`rows * k` elements).
    ///
    /// # Safety
    /// `src` holds every element `(r, c)` for `r < rows`, `c < k`.
    unsafe fn transpose(src: *const Self, ld: isize, rows: usize, k: usize, dst: &mut [Self]) {
        // SAFETY: the caller's contract.
        unsafe { transpose_scalar(src, ld, rows, k, dst) }
    }
}

impl Transposed for f64 {}

impl Transposed for f32 {
    unsafe fn transpose(src: *const f32, ld: isize, rows: usize, k: usize, dst: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the caller's contract; the CPU has AVX.
            unsafe { transpose_avx(src, ld, rows, k, dst) };
            return;
        }
        // SAFETY: the caller's contract.
        unsafe { transpose_scalar(src, ld, rows, k, dst) }
    }
}

/// [`Transposed::transpose`] one element at a time, in `BLOCK`-wide column blocks.
///
/// # Safety
/// As [`Transposed::transpose`]'s.
unsafe fn transpose_scalar<T: Copy>(
    src: *const T,
    ld: isize,
    rows: usize,
    k: usize,
    dst: &mut [T],
) {
    let dst = &mut dst[..rows * k];
    for c0 in (0..k).step_by(BLOCK) {
        for c in c0..(c0 + BLOCK).min(k) {
            for (r, row) in dst.chunks_exact_mut(k).enumerate() {
                // SAFETY: element `(r, c)` (the caller's contract).
                row[c] = unsafe { *src.offset(r as isize + c as isize * ld) };
            }
        }
    }
}

/// [`Transposed::transpose`] of `f32` in 8 x 8 tiles: eight 8-element loads along the
/// source's contiguous rows, the classic unpack/shuffle/permute transpose, eight stores
/// along the copy's rows; the edges (rows or columns past a multiple of 8) one element
/// at a time.
///
/// # Safety
/// As [`Transposed::transpose`]'s; the CPU has AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn transpose_avx(src: *const f32, ld: isize, rows: usize, k: usize, dst: &mut [f32]) {
    use std::arch::x86_64::*;
    let dst = &mut dst[..rows * k];
    let (r8, k8) = (rows / 8 * 8, k / 8 * 8);
    let d = dst.as_mut_ptr();
    // Sixteen source rows (copy columns) at a time, swept along their whole length: the
    // loads stream along 16 contiguous rows (the prefetcher follows them within a page),
    // and each copy row gets 64 bytes, a whole cache line, per sweep.
    for cb in (0..k8).step_by(16) {
        for r0 in (0..r8).step_by(8) {
            for c0 in (cb..(cb + 16).min(k8)).step_by(8) {
                // SAFETY: elements `(r0..r0 + 8, c0 + j)`, inside the source (`r0 + 8 <= rows`,
                // `c0 + 8 <= k`), and the copy's rows `r0..r0 + 8` at columns `c0..c0 + 8`,
                // inside `dst`.
                unsafe {
                    let at = |j: isize| src.offset(r0 as isize + (c0 as isize + j) * ld);
                    let x: [__m256; 8] = std::array::from_fn(|j| _mm256_loadu_ps(at(j as isize)));
                    let t0 = _mm256_unpacklo_ps(x[0], x[1]);
                    let t1 = _mm256_unpackhi_ps(x[0], x[1]);
                    let t2 = _mm256_unpacklo_ps(x[2], x[3]);
                    let t3 = _mm256_unpackhi_ps(x[2], x[3]);
                    let t4 = _mm256_unpacklo_ps(x[4], x[5]);
                    let t5 = _mm256_unpackhi_ps(x[4], x[5]);
                    let t6 = _mm256_unpacklo_ps(x[6], x[7]);
                    let t7 = _mm256_unpackhi_ps(x[6], x[7]);
                    let u0 = _mm256_shuffle_ps::<0x44>(t0, t2);
                    let u1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
                    let u2 = _mm256_shuffle_ps::<0x44>(t1, t3);
                    let u3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
                    let u4 = _mm256_shuffle_ps::<0x44>(t4, t6);
                    let u5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
                    let u6 = _mm256_shuffle_ps::<0x44>(t5, t7);
                    let u7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
                    let y = [
                        _mm256_permute2f128_ps::<0x20>(u0, u4),
                        _mm256_permute2f128_ps::<0x20>(u1, u5),
                        _mm256_permute2f128_ps::<0x20>(u2, u6),
                        _mm256_permute2f128_ps::<0x20>(u3, u7),
                        _mm256_permute2f128_ps::<0x31>(u0, u4),
                        _mm256_permute2f128_ps::<0x31>(u1, u5),
                        _mm256_permute2f128_ps::<0x31>(u2, u6),
                        _mm256_permute2f128_ps::<0x31>(u3, u7),
                    ];
                    for (i, v) in y.into_iter().enumerate() {
                        _mm256_storeu_ps(d.add((r0 + i) * k + c0), v);
                    }
                }
            }
        }
    }
    // The edges: columns from `k8` of the tiled rows, then every column of the rest.
    for r in 0..rows {
        let from = if r < r8 { k8 } else { 0 };
        for c in from..k {
            // SAFETY: element `(r, c)`, inside the source (the caller's contract).
            dst[r * k + c] = unsafe { *src.offset(r as isize + c as isize * ld) };
        }
    }
}

/// The shape reading the row-major copy of `s`'s lhs ([`packed`]'s layout).
pub(crate) fn packed_shape(s: &GemmShape) -> GemmShape {
    let shape = GemmShape {
        lhs: (s.k as isize, 1),
        ..s.clone()
    };
    restride(shape, s.m * s.k)
}

/// Rows `rows` of batch element `i`'s lhs copied row-major into `dst` (`k` elements a
/// row, the first row at `dst[0]`).
///
/// # Safety
/// `lhs` holds `s`'s lhs with the strides and batch offsets of `s`, whose `s.lhs.0` is 1.
pub(crate) unsafe fn copy_rows<T: Transposed>(
    s: &GemmShape,
    lhs: *const T,
    i: usize,
    (r0, r1): (usize, usize),
    dst: &mut [T],
) {
    debug_assert_eq!(s.lhs.0, 1);
    let lo = s.batch_offsets(i).0 + r0 as isize;
    // SAFETY: the caller's contract: rows `r0..r1` of batch element `i`, every column.
    unsafe { T::transpose(lhs.offset(lo), s.lhs.1, r1 - r0, s.k, dst) }
}

/// The lhs of every batch element of `s` copied row-major into `dst` (batch element `i`
/// at `i * m * k`; [`len`] elements), and the shape reading it there ([`packed_shape`]).
///
/// # Safety
/// `lhs` holds `s`'s lhs with the strides and batch offsets of `s`, whose `s.lhs.0` is 1.
pub(crate) unsafe fn packed<T: Transposed>(
    s: &GemmShape,
    lhs: *const T,
    dst: &mut [T],
    threads: usize,
) -> GemmShape {
    let count: usize = s.batch.iter().map(|b| b.0).product();
    let (m, k) = (s.m, s.k);
    let dst = &mut dst[..count * m * k];
    let src = lhs as usize;
    let blocks_per = m.div_ceil(BLOCK);
    let task = |(t, rows): (usize, &mut [T])| {
        let (i, rb) = (t / blocks_per, t % blocks_per);
        let r0 = rb * BLOCK;
        let r1 = r0 + rows.len() / k;
        // SAFETY: rows `r0..r1` of batch element `i` (the caller's contract).
        unsafe { copy_rows(s, src as *const T, i, (r0, r1), rows) };
    };
    // Chunks of `BLOCK` rows of one batch element (its last chunk may be shorter).
    let chunks: Vec<(usize, &mut [T])> = dst
        .chunks_mut(m * k)
        .flat_map(|e| e.chunks_mut(BLOCK * k))
        .enumerate()
        .collect();
    if threads > 1 && count * m * k >= PARALLEL_MIN_ELEMENTS {
        chunks.into_par_iter().for_each(task);
    } else {
        chunks.into_iter().for_each(task);
    }
    packed_shape(s)
}

/// `s` with the lhs batch strides of a row-major stack of `m x k` (`elements`) matrices:
/// the innermost batch dimension steps by `elements`, each outer one over the inner ones.
fn restride(mut s: GemmShape, elements: usize) -> GemmShape {
    let mut stride = elements as isize;
    for b in s.batch.iter_mut().rev() {
        b.1 = stride;
        stride *= b.0 as isize;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use codegen::kir::ScalarType;

    #[test]
    fn copies_every_batch_element_row_major() {
        let (m, k) = (70, 65);
        let s = GemmShape {
            ty: ScalarType::F32,
            lhs_ty: ScalarType::F32,
            rhs_ty: ScalarType::F32,
            out_ty: ScalarType::F32,
            m,
            n: 64,
            k,
            lhs: (1, m as isize),
            rhs: (64, 1),
            out: (64, 1),
            // Batch [2, 3] with the lhs's batch dims the outermost of its layout, swapped.
            batch: vec![(2, (m * k) as isize, 0, 0), (3, (2 * m * k) as isize, 0, 0)],
        };
        assert!(wanted(&s));
        let lhs: Vec<f32> = (0..6 * m * k).map(|x| x as f32).collect();
        for threads in [1, 2] {
            let mut p = vec![0.0; len(&s)];
            // SAFETY: `lhs` holds the six column-major batch elements.
            let t = unsafe { packed(&s, lhs.as_ptr(), &mut p, threads) };
            assert_eq!(t.lhs, (k as isize, 1));
            assert_eq!(t.batch[0].1, (3 * m * k) as isize);
            assert_eq!(t.batch[1].1, (m * k) as isize);
            for (b0, b1) in (0..2).flat_map(|a| (0..3).map(move |b| (a, b))) {
                let (so, po) = (b0 * m * k + b1 * 2 * m * k, b0 * 3 * m * k + b1 * m * k);
                for r in 0..m {
                    for c in 0..k {
                        assert_eq!(
                            p[po + r * k + c],
                            lhs[so + r + c * m],
                            "[{b0},{b1},{r},{c}]"
                        );
                    }
                }
            }
        }
    }

    /// The vector transpose against the scalar one on every edge case: extents around
    /// multiples of the 8 x 8 tile, a leading dimension past the rows, both types.
    #[test]
    fn the_tiled_transpose_equals_the_scalar_one() {
        for rows in [1, 7, 8, 9, 16, 31, 40] {
            for k in [1, 5, 8, 15, 24, 33] {
                let ld = rows as isize + 3;
                let src: Vec<f32> = (0..ld as usize * k).map(|x| x as f32).collect();
                let mut want = vec![-1.0f32; rows * k];
                let mut got = vec![-2.0f32; rows * k];
                // SAFETY: `src` holds `ld * k` elements, `(r, c)` at `r + c * ld`.
                unsafe {
                    transpose_scalar(src.as_ptr(), ld, rows, k, &mut want);
                    f32::transpose(src.as_ptr(), ld, rows, k, &mut got);
                }
                for r in 0..rows {
                    for c in 0..k {
                        assert_eq!(want[r * k + c], src[r + c * ld as usize], "{rows}x{k}");
                    }
                }
                assert_eq!(got, want, "{rows} x {k}");
                let src64: Vec<f64> = src.iter().map(|&x| f64::from(x)).collect();
                let mut got64 = vec![0f64; rows * k];
                // SAFETY: as above.
                unsafe { f64::transpose(src64.as_ptr(), ld, rows, k, &mut got64) };
                let want64: Vec<f64> = want.iter().map(|&x| f64::from(x)).collect();
                assert_eq!(got64, want64, "f64 {rows} x {k}");
            }
        }
    }
}
