//! Cumulative `reduce-window`s longer than 16 elements in XLA:CPU's blocked order
//! ([`hlo::ir::blocked_scan`]): XLA rewrites them into a scan of blocks of 16 plus the
//! exclusive scan of the block totals (itself blocked again while longer than 16), so a
//! float cumsum rounds as that tree does, not as one left-to-right chain. This module
//! computes the same tree directly on each scanned line, so that the evaluator, XLA and
//! the compiled code (which runs `hlo-transforms`' rewrite of the module) agree bit for bit.
//!
//! The steps mirror the rewrite's HLO: pad the line with the init value to a multiple of
//! 16, fold every window of each block of 16 in window order, take each block's last
//! (reversed: first) window, scan those exclusively, and combine each element with its
//! block's exclusive value through the reducer (`reducer(inner, outer)`).

use super::reducer::combine;
use super::util::{copy_elem, make_array, next_index, push_elem, splat, strides, take};
use super::{CallComputation, KernelError};
use hlo::ir::blocked_scan::{CumulativeWindow, BASE_LENGTH};
use hlo::ir::reducer::Reducer;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::ElementType;
use hlo::{CompId, Literal, Shape};

const BASE: usize = BASE_LENGTH as usize;

/// `acc[ai] = reducer(acc[ai], src[si])`, natively for the reducers
/// [`hlo::ir::reducer::classify`] knows, else by calling the computation.
pub(crate) struct Combiner<'a> {
    /// The native reducer, when the computation is one.
    pub native: Option<Reducer>,
    /// The element type of the values.
    pub ty: ElementType,
    /// The reducer computation.
    pub comp: CompId,
    /// How to call it.
    pub calls: &'a mut dyn CallComputation,
}

impl Combiner<'_> {
    fn apply(
        &mut self,
        acc: &mut ArrayData,
        ai: usize,
        src: &ArrayData,
        si: usize,
    ) -> Result<(), KernelError> {
        if let Some(r) = self.native {
            return combine(r, self.ty, acc, ai, src, si);
        }
        let scalar = |d: &ArrayData, i: usize| {
            ArrayLiteral::new(Shape::scalar(self.ty), take(d, &[i]))
                .map(Literal::Array)
                .ok_or_else(|| KernelError::Invalid("reduce-window: bad scalar".into()))
        };
        let args = [scalar(acc, ai)?, scalar(src, si)?];
        match self.calls.call(self.comp, &args)? {
            Literal::Array(a) => copy_elem(acc, ai, a.data(), 0),
            _ => Err(KernelError::Invalid(
                "reduce-window: reducer returned a tuple for one input".into(),
            )),
        }
    }
}

/// The `reduce-window` of one input over `window` (blocked: longer than 16) of `input`
/// with scalar `init`, into an array of `out_shape`.
pub(crate) fn blocked_reduce_window(
    window: CumulativeWindow,
    input: &ArrayLiteral,
    init: &ArrayData,
    out_shape: &Shape,
    f: &mut Combiner<'_>,
) -> Result<Literal, KernelError> {
    let in_dims: Vec<usize> = input.shape().dims().iter().map(|&d| d as usize).collect();
    let out_dims: Vec<usize> = out_shape.dims().iter().map(|&d| d as usize).collect();
    let d = window.dim;
    let (n, out_n) = (in_dims[d], out_dims[d]);
    let (in_strides, out_strides) = (strides(&in_dims), strides(&out_dims));
    let mut out = splat(init, 0, out_dims.iter().product());
    // Every line: all indices of the other dimensions, the scanned one at 0.
    let mut lines = in_dims.clone();
    lines[d] = 1;
    let mut idx = vec![0usize; lines.len()];
    if lines.contains(&0) {
        return make_array(out_shape, out, "reduce-window");
    }
    loop {
        let base_in: usize = idx.iter().zip(&in_strides).map(|(i, s)| i * s).sum();
        let base_out: usize = idx.iter().zip(&out_strides).map(|(i, s)| i * s).sum();
        let positions: Vec<usize> = (0..n).map(|k| base_in + k * in_strides[d]).collect();
        let line = take(input.data(), &positions);
        let scanned = inclusive(&line, init, window.reverse, f)?;
        // An exclusive scan is the inclusive one shifted by the init value.
        let shift = usize::from(window.exclusive && !window.reverse);
        for k in 0..n {
            copy_elem(
                &mut out,
                base_out + (k + shift) * out_strides[d],
                &scanned,
                k,
            )?;
        }
        debug_assert_eq!(out_n, n + usize::from(window.exclusive));
        if !next_index(&mut idx, &lines) {
            break;
        }
    }
    make_array(out_shape, out, "reduce-window")
}

/// The inclusive scan of `line` in XLA's blocked order (forward: element `i` folds
/// `line[..=i]`; `reverse`: `line[i..]`).
fn inclusive(
    line: &ArrayData,
    init: &ArrayData,
    reverse: bool,
    f: &mut Combiner<'_>,
) -> Result<ArrayData, KernelError> {
    let n = line.len();
    if n <= BASE {
        return inclusive_windows(line, init, reverse, f);
    }
    let padded_len = n.div_ceil(BASE) * BASE;
    let mut padded = line.clone();
    for _ in n..padded_len {
        push_elem(&mut padded, init, 0)?;
    }
    let blocks = padded_len / BASE;
    // Each block of 16 scanned on its own, window by window.
    let mut result = take(&padded, &[]);
    for b in 0..blocks {
        let block = take(&padded, &(b * BASE..(b + 1) * BASE).collect::<Vec<_>>());
        let scanned = inclusive_windows(&block, init, reverse, f)?;
        for k in 0..BASE {
            push_elem(&mut result, &scanned, k)?;
        }
    }
    // Each block's total, scanned exclusively across the blocks.
    let last = if reverse { 0 } else { BASE - 1 };
    let totals = take(
        &result,
        &(0..blocks).map(|b| b * BASE + last).collect::<Vec<_>>(),
    );
    let outer = exclusive(&totals, init, reverse, f)?;
    for i in 0..padded_len {
        f.apply(&mut result, i, &outer, i / BASE)?;
    }
    Ok(take(&result, &(0..n).collect::<Vec<_>>()))
}

/// The exclusive scan of `line` as the rewrite computes it: a window as long as the line
/// padded by its length, kept to the line's length (forward: element `i` folds
/// `line[..i]`; `reverse`: `line[i + 1..]`), blocked again when longer than 16.
fn exclusive(
    line: &ArrayData,
    init: &ArrayData,
    reverse: bool,
    f: &mut Combiner<'_>,
) -> Result<ArrayData, KernelError> {
    let n = line.len();
    if n <= BASE {
        let taps = |i: usize| if reverse { i + 1..n } else { 0..i };
        return window_folds(line, init, taps, f);
    }
    let mut out = splat(init, 0, n);
    let scanned = inclusive(line, init, reverse, f)?;
    for i in 0..n {
        let from = if reverse { i + 1 } else { i.wrapping_sub(1) };
        if from < n {
            copy_elem(&mut out, i, &scanned, from)?;
        }
    }
    Ok(out)
}

/// The inclusive windows of a short line (`reverse`: from each element to the end).
fn inclusive_windows(
    line: &ArrayData,
    init: &ArrayData,
    reverse: bool,
    f: &mut Combiner<'_>,
) -> Result<ArrayData, KernelError> {
    let n = line.len();
    window_folds(line, init, |i| if reverse { i..n } else { 0..i + 1 }, f)
}

/// Output `i` folds `line[taps(i)]` on its own from the init value, in window order (as
/// `reduce-window` computes windows no rewrite touches).
fn window_folds(
    line: &ArrayData,
    init: &ArrayData,
    taps: impl Fn(usize) -> std::ops::Range<usize>,
    f: &mut Combiner<'_>,
) -> Result<ArrayData, KernelError> {
    let n = line.len();
    let mut out = splat(init, 0, n);
    for i in 0..n {
        for t in taps(i) {
            f.apply(&mut out, i, line, t)?;
        }
    }
    Ok(out)
}
