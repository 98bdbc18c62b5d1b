//! XLA:CPU's order for a sum or product of floats.
//!
//! HLO rounds every step of a float reduction to the element type, so the order of the
//! steps decides the result's bits (for `bf16`/`f16` two orders differ in most outputs,
//! near-zero sums even in sign; for `f32` an in-order sum of a million elements drifts
//! past the comparison's tolerance). Users compare against XLA, and XLA:CPU's compiler
//! rewrites every
//! reduce some of whose reduced dimensions exceed [`WINDOW`] elements
//! (`TreeReductionRewriter`, repeated until no reduced dimension exceeds it) into a
//! `reduce-window` whose window spans `min(size, WINDOW)` along each reduced dimension
//! (stride the same, padding "same": a missing `p` elements split `p / 2` before the
//! first and the rest after the last), followed by the reduce of that, its per-step rounding
//! kept. Each window folds the initial value then its elements in row-major order; the
//! last reduce folds the windows' results in row-major order. `tools/xla_reduce_order.py`
//! checks this against jax's XLA bit for bit on crafted inputs, and the evaluator's tests
//! against outputs XLA recorded.

/// The widest a reduced dimension may be without a window level (XLA's
/// `reduce_window_size`).
pub(crate) const WINDOW: usize = 32;

/// `f`-fold of `src` (row-major over `in_dims`) over the dimensions `reduced` in XLA:CPU's
/// order, starting each window and the final fold from `init`; row-major over the kept
/// dimensions.
pub(crate) fn tree_fold<T: Copy>(
    src: &[T],
    in_dims: &[usize],
    reduced: &[bool],
    init: T,
    mut f: impl FnMut(T, T) -> T,
) -> Vec<T> {
    let mut data = src.to_vec();
    let mut dims = in_dims.to_vec();
    while dims.iter().zip(reduced).any(|(&n, &r)| r && n > WINDOW) {
        let mut win = vec![1usize; dims.len()];
        let mut low = vec![0usize; dims.len()];
        let mut out_dims = dims.clone();
        for d in 0..dims.len() {
            if reduced[d] {
                // A zero-sized reduced dimension beside a long one keeps a window of 1 (no
                // elements, no windows): the outputs are the init values.
                win[d] = dims[d].clamp(1, WINDOW);
                out_dims[d] = dims[d].div_ceil(win[d]);
                low[d] = (out_dims[d] * win[d] - dims[d]) / 2;
            }
        }
        // Row-major order over the input visits each window's elements in the window's
        // own row-major order: one pass folds every window in XLA's order.
        let n_out: usize = out_dims.iter().product();
        let mut out = vec![init; n_out];
        let mut idx = vec![0usize; dims.len()];
        for &x in &data {
            let mut p = 0usize;
            for d in 0..dims.len() {
                p = p * out_dims[d] + (idx[d] + low[d]) / win[d];
            }
            out[p] = f(out[p], x);
            for d in (0..dims.len()).rev() {
                idx[d] += 1;
                if idx[d] < dims[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        data = out;
        dims = out_dims;
    }
    // The last reduce: every output folds its (at most WINDOW per dimension) elements in
    // row-major order.
    let n_out: usize = dims
        .iter()
        .zip(reduced)
        .filter(|(_, &r)| !r)
        .map(|(&n, _)| n)
        .product();
    let mut out = vec![init; n_out];
    let mut idx = vec![0usize; dims.len()];
    for &x in &data {
        let mut p = 0usize;
        for d in 0..dims.len() {
            if !reduced[d] {
                p = p * dims[d] + idx[d];
            }
        }
        out[p] = f(out[p], x);
        for d in (0..dims.len()).rev() {
            idx[d] += 1;
            if idx[d] < dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Integers under a non-commutative "fold" record each output's order of elements.
    fn orders(in_dims: &[usize], reduced: &[bool]) -> Vec<Vec<usize>> {
        let n: usize = in_dims.iter().product();
        let src: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
        let src_ids: Vec<usize> = (0..n).collect();
        // Fold lists by concatenation, through indices into an arena.
        let arena = std::cell::RefCell::new(src);
        let out = tree_fold(&src_ids, in_dims, reduced, usize::MAX, |a, b| {
            let mut arena = arena.borrow_mut();
            let mut v = if a == usize::MAX {
                vec![]
            } else {
                arena[a].clone()
            };
            v.extend(arena[b].clone());
            arena.push(v);
            arena.len() - 1
        });
        let arena = arena.into_inner();
        out.into_iter().map(|i| arena[i].clone()).collect()
    }

    #[test]
    fn short_dimensions_fold_in_order() {
        let o = orders(&[3, 32], &[false, true]);
        assert_eq!(o.len(), 3);
        assert_eq!(o[1], (32..64).collect::<Vec<_>>());
    }

    #[test]
    fn every_element_once_in_every_shape() {
        for (dims, red) in [
            (vec![33], vec![true]),
            (vec![100], vec![true]),
            (vec![2049], vec![true]),
            (vec![40, 3, 50], vec![true, false, true]),
            (vec![5, 70], vec![false, true]),
        ] {
            let o = orders(&dims, &red);
            let mut all: Vec<usize> = o.concat();
            all.sort();
            let n: usize = dims.iter().product();
            assert_eq!(all, (0..n).collect::<Vec<_>>(), "{dims:?}");
        }
    }

    /// A zero-sized reduced dimension beside one over WINDOW (found by the differential
    /// campaign: `f32[21,0,35]` reduced over {1,2} divided by a zero window): every output
    /// is the init value, and a zero-sized kept dimension gives no outputs.
    #[test]
    fn zero_sized_beside_long_reduced_dimensions_give_the_init() {
        let out = tree_fold(
            &[] as &[f32],
            &[21, 0, 35],
            &[false, true, true],
            2.5,
            |a, b| a * b,
        );
        assert_eq!(out, vec![2.5; 21]);
        let out = tree_fold(&[] as &[f32], &[0, 40], &[false, true], 1.0, |a, b| a + b);
        assert!(out.is_empty());
    }

    #[test]
    fn windows_split_the_padding_before_and_after() {
        // 100 = 4 windows of 32 less 28: 14 before, so windows of 18, 32, 32, 18 elements
        // (the order is that of the elements; the tree shows in the combine steps).
        let mut steps = Vec::new();
        let src: Vec<u32> = (0..100).collect();
        let _ = tree_fold(&src, &[100], &[true], 1000, |a, b| {
            steps.push((a, b));
            if a == 1000 {
                b
            } else {
                a.max(b)
            }
        });
        // Window starts: the init meets the window's first element.
        let starts: Vec<u32> = steps
            .iter()
            .filter(|(a, _)| *a == 1000)
            .map(|&(_, b)| b)
            .collect();
        // Four windows starting at 0, 18, 50, 82, then the final fold starting at the
        // first window's result (its max, 17).
        assert_eq!(starts, vec![0, 18, 50, 82, 17]);
    }
}
