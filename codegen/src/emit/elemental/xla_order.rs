//! XLA:CPU's order for sums and products of 16-bit floats.
//!
//! HLO rounds every step of a `bf16` or `f16` reduction, so the order of the steps decides
//! the bits of the result, and users compare with XLA. XLA:CPU rewrites every reduce some
//! of whose reduced dimensions exceed [`WINDOW`] (`TreeReductionRewriter`, until none
//! does) into a `reduce-window` with windows of `min(size, WINDOW)` along the reduced
//! dimensions (stride the same, "same" padding: a missing `p` split `p / 2` before and the
//! rest after), followed by the reduce of the windows' results; every window and the final
//! reduce start from the initial value and fold in row-major order (the reference
//! evaluator's `reduce` follows the same order; `tools/xla_reduce_order.py` checks it
//! against jax bit for bit).
//!
//! In terms of the reduction's range variables (the reduced dimensions in order, each from
//! 0): level `l`'s elements `e_l` are windows of level `l - 1`'s, `e_{l-1} = w_l * e_l +
//! k_l - low_l` for the offset `k_l` in the window, guarded to `[0, extent_{l-1})` where the
//! windows overhang; the last level's elements run over their whole extent.

use affine::{Expr, Interval, Var};
use hlo::ir::reducer::{classify, Reducer};
use hlo::{CompId, Module};

use super::Builder;
use crate::kir::{Guard, ScalarType};

/// The widest reduced dimension without a window level (XLA's `reduce_window_size`).
pub(crate) const WINDOW: i64 = 32;

/// The loop variables of a reduction in XLA's tree order.
pub(crate) struct TreeVars {
    /// The last level's range variables (one per reduced dimension, whole extents).
    pub outer: Vec<Var>,
    /// Per window level, innermost (the elements) first: the offsets in the window (one per
    /// reduced dimension) and the guard keeping that level's elements in range.
    pub levels: Vec<(Vec<Var>, Guard)>,
    /// Each reduced dimension's element index over the variables above.
    pub element: Vec<Expr>,
}

/// Whether a reduce of `ty` by `red` follows XLA's tree order: a sum or product of a float
/// narrower than 32 bits (each step rounded; a max or min is the same in any order, wider
/// types keep the emitters' own orders).
pub(crate) fn follows_tree(module: &Module, red: CompId, ty: ScalarType) -> bool {
    ty.is_float()
        && !ty.is_complex()
        && ty.byte_width() < 4
        && matches!(classify(module, red), Some(Reducer::Add | Reducer::Mul))
}

impl Builder<'_> {
    /// XLA's tree over the reduction range variables `ranges` (reduced dimensions in
    /// order); `None` when no dimension exceeds [`WINDOW`] (the plain row-major order is
    /// XLA's) or a range does not start at 0.
    pub(crate) fn tree_vars(&mut self, ranges: &[Var]) -> Option<TreeVars> {
        let mut extents = Vec::with_capacity(ranges.len());
        for r in ranges {
            let iv = self.ranges[r.index as usize];
            if iv.lo != 0 {
                return None;
            }
            extents.push(iv.hi + 1);
        }
        if extents.iter().all(|&n| n <= WINDOW) {
            return None;
        }
        // (window, padding before, extent windowed) per dimension, per level.
        let mut shape = Vec::new();
        while extents.iter().any(|&n| n > WINDOW) {
            let level: Vec<(i64, i64, i64)> = extents
                .iter()
                .map(|&n| {
                    let w = n.min(WINDOW);
                    let out = (n + w - 1) / w;
                    (w, (out * w - n) / 2, n)
                })
                .collect();
            extents = level.iter().map(|&(w, _, n)| (n + w - 1) / w).collect();
            shape.push(level);
        }
        let outer: Vec<Var> = extents
            .iter()
            .map(|&n| self.new_range(Interval::new(0, n - 1)))
            .collect();
        // From the last level in: each level's element index from the one above.
        let mut above: Vec<Expr> = outer.iter().map(|&v| Expr::var(v)).collect();
        let mut levels = Vec::with_capacity(shape.len());
        for level in shape.iter().rev() {
            let mut offsets = Vec::with_capacity(level.len());
            let mut guard = Guard::default();
            let mut here = Vec::with_capacity(level.len());
            for (&(w, low, n), up) in level.iter().zip(&above) {
                let k = self.new_range(Interval::new(0, w - 1));
                offsets.push(k);
                let e = self.simplify(*up * Expr::constant(w) + Expr::var(k) - Expr::constant(low));
                if low > 0 || (n + w - 1) / w * w != n {
                    guard.conds.push((e, 0, n - 1));
                }
                here.push(e);
            }
            levels.push((offsets, guard));
            above = here;
        }
        levels.reverse();
        Some(TreeVars {
            outer,
            levels,
            element: above,
        })
    }
}
