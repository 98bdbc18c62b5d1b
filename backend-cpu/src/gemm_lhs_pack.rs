//! A column-major lhs (`lhs` strides `(1, ld)`: a transposed lhs, `tn`, or a weight
//! gradient whose contracting dimensions come first, `contracting_dims={0,1}`) copied
//! row-major before a large product with a row-major result. faer computes such a product
//! as `out^T = rhs^T lhs^T`, where `lhs^T` is then a row-major right operand that it reads
//! through a strided packing: `f32[1024,1024]` `tn` measured 82 ms against 30 for `nn`
//! (2.05x XLA:CPU), `f32[16,128,512]` over two contracting dimensions 2.11x. The copy is
//! one cache-blocked transpose of `m x k` elements (a few percent of the product's time
//! from `m, n, k >= 64`), split among the threads by rows: `tn` 62.7 -> 39.1 ms, best of
//! 3 in one run. Only where the contraction is no longer than the result's longer side:
//! faer runs long contractions faster from the column-major lhs (the two-contracting
//! `[512, 2048] x [2048, 512]` took 9.4 ms as it stands, 16.1 with its lhs copied).
#![allow(unsafe_code)]

use plan::GemmShape;
use rayon::prelude::*;

/// The smallest `m`, `n` and `k` from which the lhs is copied (below, the small-side and
/// thin kernels or faer's own small path take the product).
const MIN_EXTENT: usize = 64;

/// Rows and columns of one transposed block.
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
        && s.k <= s.m.max(s.n)
}

/// Elements of the row-major copy of `s`'s lhs (every batch element).
pub(crate) fn len(s: &GemmShape) -> usize {
    s.batch.iter().map(|b| b.0).product::<usize>() * s.m * s.k
}

/// The lhs of every batch element of `s` copied row-major into `dst` (batch element `i`
/// at `i * m * k`; [`len`] elements), and the shape reading it there.
///
/// # Safety
/// `lhs` holds `s`'s lhs with the strides and batch offsets of `s`.
pub(crate) unsafe fn packed<T: Copy + Send + Sync>(
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
        let lo = s.batch_offsets(i).0;
        let src = src as *const T;
        for c0 in (0..k).step_by(BLOCK) {
            for c in c0..(c0 + BLOCK).min(k) {
                for (r, row) in rows.chunks_exact_mut(k).enumerate() {
                    // SAFETY: element `(r0 + r, c)` of batch element `i`'s lhs (the
                    // caller's contract).
                    row[c] = unsafe {
                        *src.offset(lo + (r0 + r) as isize * s.lhs.0 + c as isize * s.lhs.1)
                    };
                }
            }
        }
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
    let shape = GemmShape {
        lhs: (k as isize, 1),
        ..s.clone()
    };
    restride(shape, m * k)
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
}
