//! Patchify: a convolution whose window tiles its (padded) input, stride equal to the
//! window size and no dilation (a ViT patch embedding), is a `reshape` of the input that
//! splits each spatial dimension into (output position, window position), one
//! `transpose` to `[B, O..., K..., C]` and one GEMM `[B·O, K·C] × [K·C, F]`: the patches
//! are the input's own elements, each read once, with no slices or concatenate.

use super::geometry::{Geometry, Role};
use super::rewrite::Rewriter;
use hlo::attrs::{AttrName, AttrValue, PaddingConfig, PaddingDim};
use hlo::ir::InstrId;
use hlo::Opcode;

impl Geometry {
    /// Whether the window tiles the input: along every spatial dimension the stride is
    /// the window size, nothing is dilated and the padding is not negative, and some
    /// window is larger than 1 (a 1x1 window needs no patches at all).
    pub(super) fn is_patchify(&self) -> bool {
        self.window.iter().all(|w| {
            w.stride == w.size
                && w.base_dilation == 1
                && w.window_dilation == 1
                && w.padding_low >= 0
                && w.padding_high >= 0
        }) && self.window.iter().any(|w| w.size > 1)
    }
}

impl Rewriter<'_> {
    /// The patchify rewrite of a convolution for which [`Geometry::is_patchify`] holds;
    /// returns the replacement.
    pub(super) fn patchify(&mut self) -> InstrId {
        let geo = self.geo;
        let n = geo.rank();
        let (lhs, rhs, conv_shape) = {
            let c = self.comp.instr(self.conv);
            (c.operands[0], c.operands[1], (*c.shape).clone())
        };
        let mut x = lhs;
        if geo
            .window
            .iter()
            .any(|w| w.padding_low > 0 || w.padding_high > 0)
        {
            let zero = self.zero();
            let cfg = PaddingConfig {
                dims: geo
                    .input
                    .iter()
                    .map(|r| {
                        let (low, high) = match *r {
                            Role::Spatial(j) => {
                                (geo.window[j].padding_low, geo.window[j].padding_high)
                            }
                            _ => (0, 0),
                        };
                        PaddingDim {
                            low,
                            high,
                            interior: 0,
                        }
                    })
                    .collect(),
            };
            let dims = self
                .dims(x)
                .iter()
                .zip(&cfg.dims)
                .map(|(&d, p)| d + p.low + p.high)
                .collect();
            let shape = self.shape(dims);
            x = self.add(
                Opcode::Pad,
                shape,
                vec![x, zero],
                vec![(AttrName::Padding, AttrValue::Padding(cfg))],
            );
        }
        // Only the tiled part of the padded input: O_j·K_j elements.
        let tiled = |j: usize| geo.out_spatial[j] * geo.window[j].size;
        let input = geo.input.clone();
        x = self.slice(x, |d| match input[d] {
            Role::Spatial(j) => Some((0, tiled(j), 1)),
            _ => None,
        });
        // Split every spatial dimension into (output position, window position).
        let mut split = Vec::new();
        // Where each of B, O_j, K_j and C lands in the split input.
        let (mut at_b, mut at_c) = (0, 0);
        let (mut at_o, mut at_k) = (vec![0; n], vec![0; n]);
        for (r, d) in geo.input.iter().zip(self.dims(x)) {
            match *r {
                Role::Batch => at_b = split.len(),
                Role::Feature => at_c = split.len(),
                Role::Spatial(j) => {
                    at_o[j] = split.len();
                    at_k[j] = split.len() + 1;
                    split.push(geo.out_spatial[j]);
                    split.push(geo.window[j].size);
                    continue;
                }
            }
            split.push(d);
        }
        let x = self.reshape(x, split);
        let perm: Vec<usize> = std::iter::once(at_b)
            .chain(at_o.iter().copied())
            .chain(at_k.iter().copied())
            .chain(std::iter::once(at_c))
            .collect();
        let x = self.transpose(x, &perm);
        let m = geo.batch * geo.out_positions();
        let k = geo.window_positions() * geo.in_features;
        let f = geo.out_features;
        let p = self.merge(x, self.shape(vec![m, k]));
        let kperm: Vec<usize> = geo
            .kernel_spatial
            .iter()
            .chain([&geo.kernel_in, &geo.kernel_out])
            .copied()
            .collect();
        let kt = self.transpose(rhs, &kperm);
        let kernel = self.merge(kt, self.shape(vec![k, f]));
        let shape = self.shape(vec![m, f]);
        let dot = self.add(
            Opcode::Dot,
            shape,
            vec![p, kernel],
            vec![
                (AttrName::LhsContractingDims, AttrValue::IntList(vec![1])),
                (AttrName::RhsContractingDims, AttrValue::IntList(vec![0])),
            ],
        );
        // [B, O..., F], transposed to the convolution's output.
        let result: Vec<Role> = std::iter::once(Role::Batch)
            .chain((0..n).map(Role::Spatial))
            .chain(std::iter::once(Role::Feature))
            .collect();
        let perm: Vec<usize> = geo
            .output
            .iter()
            .map(|r| result.iter().position(|x| x == r).unwrap_or(0))
            .collect();
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return self.merge(dot, conv_shape);
        }
        let dims = std::iter::once(geo.batch)
            .chain(geo.out_spatial.iter().copied())
            .chain(std::iter::once(f))
            .collect();
        let res = self.merge(dot, self.shape(dims));
        let perm = perm.iter().map(|&p| p as i64).collect();
        self.add(
            Opcode::Transpose,
            conv_shape,
            vec![res],
            vec![(AttrName::Dimensions, AttrValue::IntList(perm))],
        )
    }
}
