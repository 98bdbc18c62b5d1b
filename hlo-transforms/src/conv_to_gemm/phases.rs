//! Sub-pixel decomposition of input-dilated (`lhs_dilate`) convolutions: transposed
//! convolutions and the input gradients of strided ones, without the zeros.
//!
//! Along a spatial dimension with base dilation `s`, stride 1 and no window dilation,
//! output `o = s·q + r` reads the dilated input at `o + k - pad_low`, which holds an
//! input element only for the taps `k ≡ pad_low - r (mod s)`: `k = k0 + s·m`. So the
//! outputs of phase `r` are an ordinary convolution of the *undilated* input with the
//! taps `k0, k0 + s, …` of the kernel (a strided slice of it), with its own padding
//! (negative padding becomes a slice of the input). Each of the `∏ s_j` phases is such a
//! convolution (computed for `⌈O_j / s_j⌉` positions, so that all have one shape), the
//! phases are interleaved by reshaping each to `[…, Q_j, 1, …]`, concatenating along
//! the inserted dimensions and reshaping to `[…, Q_j·s_j, …]`, and the result is sliced
//! to the output size. The phase convolutions are then rewritten like any other: the
//! same multiply-adds as the useful part of the dilated convolution, none on zeros.
//! Exact up to summation order: the taps a phase leaves out (holes and padding) still add
//! their `0 · w` (NaN for an infinite weight) through the phase's kernel (`holes.rs`);
//! a phase that no tap reaches is those products alone, broadcast.

use std::collections::HashMap;

use super::geometry::{Geometry, Role};
use super::rewrite::{Rewriter, Span};
use hlo::attrs::{AttrName, AttrValue, Window, WindowDim};
use hlo::ir::{CompId, InstrId};
use hlo::Opcode;

/// One phase along one spatial dimension.
#[derive(Clone, Debug)]
struct Phase {
    /// The input elements the phase reads, `None` when it reads none (a zero phase).
    input: Option<Span>,
    /// The kernel taps: (first, count, step).
    taps: Span,
    /// The phase convolution's window along this dimension.
    window: WindowDim,
}

impl Geometry {
    /// Whether the sub-pixel decomposition applies: some spatial dimension is base
    /// dilated, and every such dimension has stride 1 and no window dilation.
    pub(super) fn is_input_dilated(&self) -> bool {
        self.window.iter().any(|w| w.base_dilation > 1)
            && self
                .window
                .iter()
                .all(|w| w.base_dilation == 1 || (w.stride == 1 && w.window_dilation == 1))
    }

    /// The phases of spatial dimension `j` (one, the dimension unchanged, when it is not
    /// base dilated) and the output length every phase computes.
    fn phases(&self, j: usize) -> (Vec<Phase>, i64) {
        let w = &self.window[j];
        let (size, out) = (self.spatial[j], self.out_spatial[j]);
        let s = w.base_dilation;
        if s == 1 {
            let phase = Phase {
                input: Some((0, size, 1)),
                taps: (0, w.size, 1),
                window: w.clone(),
            };
            return (vec![phase], out);
        }
        let q = (out + s - 1) / s;
        let phases = (0..s)
            .map(|r| {
                let k0 = (w.padding_low - r).rem_euclid(s);
                let taps = if k0 < w.size {
                    (w.size - k0 + s - 1) / s
                } else {
                    0
                };
                // Phase output q reads input q + m + c for tap m.
                let c = (r + k0 - w.padding_low).div_euclid(s);
                let low = -c;
                let high = q + taps - 1 - size - low;
                let (start, end) = (low.min(0).abs(), size - high.min(0).abs());
                let window = WindowDim {
                    size: taps.max(1),
                    stride: 1,
                    padding_low: low.max(0),
                    padding_high: high.max(0),
                    base_dilation: 1,
                    window_dilation: 1,
                    reversal: false,
                };
                Phase {
                    input: (taps > 0 && start < end).then_some((start, end - start, 1)),
                    taps: (k0, taps, s),
                    window,
                }
            })
            .collect();
        (phases, q)
    }
}

impl Rewriter<'_> {
    /// The sub-pixel decomposition of a convolution for which
    /// [`Geometry::is_input_dilated`] holds: returns the replacement and the phase
    /// convolutions it made (to be rewritten in turn); `add` is a scalar `add` of the
    /// convolution's element type (the left-out sums' reducer).
    pub(super) fn sub_pixel(&mut self, add: CompId) -> (InstrId, Vec<InstrId>) {
        let geo = self.geo;
        let n = geo.rank();
        let (lhs, rhs, conv) = {
            let c = self.comp.instr(self.conv);
            (c.operands[0], c.operands[1], c.clone())
        };
        let per_dim: Vec<(Vec<Phase>, i64)> = (0..n).map(|j| geo.phases(j)).collect();
        let counts: Vec<usize> = per_dim.iter().map(|(p, _)| p.len()).collect();
        let total: usize = counts.iter().product();
        // The phase outputs' dims: the convolution's, with Q_j along spatial dimension j.
        let phase_dims: Vec<i64> = geo
            .output
            .iter()
            .zip(conv.shape.dims())
            .map(|(r, &d)| match *r {
                Role::Spatial(j) => per_dim[j].1,
                _ => d,
            })
            .collect();
        let mut inputs: HashMap<Vec<Option<Span>>, InstrId> = HashMap::new();
        let mut convs = Vec::new();
        let mut outs = Vec::with_capacity(total);
        let mut zero = None;
        // The taps each phase leaves out still add `0 · w` (holes.rs).
        let mut sums = self.hole_sums(rhs, add);
        for flat in 0..total {
            let mut pick = vec![0usize; n];
            let mut rest = flat;
            for j in (0..n).rev() {
                pick[j] = rest % counts[j];
                rest /= counts[j];
            }
            let phase: Vec<Phase> = (0..n).map(|j| per_dim[j].0[pick[j]].clone()).collect();
            let y = if phase.iter().all(|p| p.input.is_some()) {
                let key: Vec<Option<Span>> = geo
                    .input
                    .iter()
                    .map(|r| match *r {
                        Role::Spatial(j) => phase[j].input,
                        _ => None,
                    })
                    .collect();
                let x = match inputs.get(&key) {
                    Some(&x) => x,
                    None => {
                        let x = self.slice(lhs, |d| key[d]);
                        inputs.insert(key, x);
                        x
                    }
                };
                let kernel_spatial = geo.kernel_spatial.clone();
                let k = self.slice(rhs, |d| {
                    let j = kernel_spatial.iter().position(|&s| s == d)?;
                    Some(phase[j].taps)
                });
                let k = match self.left_out(&mut sums, &pick, true) {
                    Some(c) => self.add_to_weights(k, c),
                    None => k,
                };
                let mut attrs: Vec<(AttrName, AttrValue)> = conv
                    .attrs
                    .iter()
                    .filter(|a| a.name != AttrName::Metadata)
                    .map(|a| (a.name.clone(), a.value.clone()))
                    .collect();
                let window = Window {
                    dims: phase.iter().map(|p| p.window.clone()).collect(),
                };
                for a in &mut attrs {
                    if a.0 == AttrName::Window {
                        a.1 = AttrValue::Window(window.clone());
                    }
                }
                let shape = self.shape(phase_dims.clone());
                let c = self.add(Opcode::Convolution, shape, vec![x, k], attrs);
                convs.push(c);
                c
            } else if let Some(c) = self.left_out(&mut sums, &pick, false) {
                // No tap reads the input: every tap adds `0 · w`.
                self.left_out_only(c, phase_dims.clone())
            } else {
                let z = *zero.get_or_insert_with(|| self.zero());
                let shape = self.shape(phase_dims.clone());
                self.add(
                    Opcode::Broadcast,
                    shape,
                    vec![z],
                    vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
                )
            };
            outs.push(y);
        }
        // Interleave: [.., Q_j, 1, ..] per phase, concatenated along the 1s (the last
        // dilated dimension first, as the phases are in row-major order).
        let mut expanded = Vec::new();
        let mut at = vec![0usize; n];
        for (r, &d) in geo.output.iter().zip(&phase_dims) {
            expanded.push(d);
            if let Role::Spatial(j) = *r {
                if counts[j] > 1 {
                    at[j] = expanded.len();
                    expanded.push(1);
                }
            }
        }
        let mut outs: Vec<InstrId> = outs
            .into_iter()
            .map(|y| self.reshape(y, expanded.clone()))
            .collect();
        for j in (0..n).rev() {
            if counts[j] == 1 {
                continue;
            }
            outs = outs
                .chunks(counts[j])
                .map(|group| self.concatenate(group.to_vec(), at[j]))
                .collect();
        }
        let joined = outs[0];
        let merged: Vec<i64> = geo
            .output
            .iter()
            .zip(&phase_dims)
            .map(|(r, &d)| match *r {
                Role::Spatial(j) => d * counts[j] as i64,
                _ => d,
            })
            .collect();
        let y = self.reshape(joined, merged);
        let output = geo.output.clone();
        let y = self.slice(y, |d| match output[d] {
            Role::Spatial(j) => Some((0, geo.out_spatial[j], 1)),
            _ => None,
        });
        // The interleaving's last instruction (made here, never a phase convolution: there
        // are two phases or more) takes the convolution's shape where only the layout
        // differs, both row-major: a bitcast to it would stand between the interleave and
        // the convolution's consumers (a bias and activation, their own kernel of a second
        // pass over the output).
        let row_major =
            |s: &hlo::shape::Shape| s.layout().is_none_or(|l| l.is_row_major() && l.is_plain());
        let made_here = !convs.contains(&y) && y != lhs;
        let y = if made_here
            && self.dims(y) == conv.shape.dims()
            && row_major(&self.comp.instr(y).shape)
            && row_major(&conv.shape)
        {
            self.comp.instr_mut(y).shape = conv.shape.clone();
            y
        } else {
            self.merge(y, (*conv.shape).clone())
        };
        (y, convs)
    }
}
