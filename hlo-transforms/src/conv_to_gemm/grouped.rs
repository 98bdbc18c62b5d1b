//! Grouped convolutions (`feature_group_count` or `batch_group_count` above 1) as one
//! batched GEMM over the groups.
//!
//! The patches are the ungrouped convolution's (every input feature and batch element
//! once, cut as the plan says); the grouped dimension, features or batch, splits into
//! `[G, rest]` (group-major, as the groups are laid out), and so do the kernel's output
//! features. The group is then the batch dimension of one dot: `[G, M, K] x [G, K, Og]`,
//! the patches and the kernel transposed into that canonical form (the dot decomposer
//! runs before this pass), and the result transposed back with the group in front of
//! the output features. The same products are summed as by the convolution.

use super::geometry::{Label, Plan, Role};
use super::rewrite::Rewriter;
use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::InstrId;
use hlo::Opcode;

/// What one dimension of the split patches or of the dot's result is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dim {
    /// The group.
    Group,
    /// A free dimension of the convolution's output (the batch within its group).
    Free(Role),
    /// Contracted with kernel dimension `d` (of the original kernel).
    Contract(usize),
    /// The output features within the group.
    OutFeature,
}

impl Rewriter<'_> {
    /// Builds the patches, the batched dot over the groups and the result; returns the
    /// replacement.
    pub(super) fn rewrite_grouped(&mut self, plan: &Plan) -> InstrId {
        let geo = self.geo;
        let g = geo.groups;
        let (rhs, conv_shape, patches) = self.open(plan);
        // The patches with the group split off and the stacked dimensions split into
        // their spatial ones (row-major, as they were stacked).
        let mut tags: Vec<(Dim, i64)> = Vec::new();
        for &l in &plan.labels {
            match l {
                Label::Batch if geo.batch_groups => {
                    tags.push((Dim::Group, g));
                    tags.push((Dim::Free(Role::Batch), geo.batch / g));
                }
                Label::Batch => tags.push((Dim::Free(Role::Batch), geo.batch)),
                Label::Feature if geo.batch_groups => {
                    tags.push((Dim::Contract(geo.kernel_in), geo.in_features));
                }
                Label::Feature => {
                    tags.push((Dim::Group, g));
                    tags.push((Dim::Contract(geo.kernel_in), geo.in_features / g));
                }
                Label::Out(j) => tags.push((Dim::Free(Role::Spatial(j)), geo.out_spatial[j])),
                Label::Outs => {
                    for j in 0..geo.rank() {
                        tags.push((Dim::Free(Role::Spatial(j)), geo.out_spatial[j]));
                    }
                }
                Label::Win(j) => {
                    tags.push((Dim::Contract(geo.kernel_spatial[j]), geo.window[j].size))
                }
                Label::Wins => {
                    for j in 0..geo.rank() {
                        tags.push((Dim::Contract(geo.kernel_spatial[j]), geo.window[j].size));
                    }
                }
            }
        }
        let split = self.merge(patches, self.shape(tags.iter().map(|&(_, s)| s).collect()));
        // Canonical lhs: [G, free..., contracted...].
        let order: Vec<usize> = (0..tags.len())
            .filter(|&i| tags[i].0 == Dim::Group)
            .chain((0..tags.len()).filter(|&i| matches!(tags[i].0, Dim::Free(_))))
            .chain((0..tags.len()).filter(|&i| matches!(tags[i].0, Dim::Contract(_))))
            .collect();
        let lhs_t = self.transpose(split, &order);
        let free: Vec<(Dim, i64)> = order
            .iter()
            .map(|&i| tags[i])
            .filter(|t| matches!(t.0, Dim::Free(_)))
            .collect();
        let contracted: Vec<usize> = order
            .iter()
            .filter_map(|&i| match tags[i].0 {
                Dim::Contract(d) => Some(d),
                _ => None,
            })
            .collect();
        let m: i64 = free.iter().map(|&(_, s)| s).product();
        let k: i64 = contracted.iter().map(|&d| self.dims(rhs)[d]).product();
        let og = geo.out_features / g;
        let lhs3 = self.merge(lhs_t, self.shape(vec![g, m, k]));
        // Canonical rhs: [G, contracted (in the lhs' order)..., Og]. Kernel spatial
        // dimensions the patches lack are of size 1: they go first, outside the group.
        let kd = self.dims(rhs);
        let mut kdims: Vec<i64> = Vec::new();
        let mut kpos = vec![0usize; kd.len()];
        for (d, &s) in kd.iter().enumerate() {
            if d == geo.kernel_out {
                kpos[d] = kdims.len();
                kdims.push(g);
                kdims.push(og);
            } else {
                kpos[d] = kdims.len();
                kdims.push(s);
            }
        }
        let ksplit = self.merge(rhs, self.shape(kdims));
        let missing: Vec<usize> = geo
            .kernel_spatial
            .iter()
            .filter(|d| !contracted.contains(d))
            .map(|&d| kpos[d])
            .collect();
        let korder: Vec<usize> = missing
            .iter()
            .copied()
            .chain([kpos[geo.kernel_out]])
            .chain(contracted.iter().map(|&d| kpos[d]))
            .chain([kpos[geo.kernel_out] + 1])
            .collect();
        let kt = self.transpose(ksplit, &korder);
        let rhs3 = self.merge(kt, self.shape(vec![g, k, og]));
        let ints = |v: Vec<i64>| AttrValue::IntList(v);
        let dot = self.add(
            Opcode::Dot,
            self.shape(vec![g, m, og]),
            vec![lhs3, rhs3],
            vec![
                (AttrName::LhsBatchDims, ints(vec![0])),
                (AttrName::LhsContractingDims, ints(vec![2])),
                (AttrName::RhsBatchDims, ints(vec![0])),
                (AttrName::RhsContractingDims, ints(vec![1])),
            ],
        );
        // [G, free..., Og], then the output's order (the group right before the
        // features within it), then the output's shape (adding the size-1 spatial
        // dimensions the patches lack).
        let result: Vec<(Dim, i64)> = std::iter::once((Dim::Group, g))
            .chain(free.iter().copied())
            .chain([(Dim::OutFeature, og)])
            .collect();
        let res = self.merge(dot, self.shape(result.iter().map(|&(_, s)| s).collect()));
        let target: Vec<Dim> = geo
            .output
            .iter()
            .flat_map(|&r| match r {
                Role::Feature => vec![Dim::Group, Dim::OutFeature],
                r => vec![Dim::Free(r)],
            })
            .filter(|t| result.iter().any(|x| x.0 == *t))
            .collect();
        let perm: Vec<usize> = target
            .iter()
            .map(|t| result.iter().position(|x| x.0 == *t).unwrap_or(0))
            .collect();
        let out = self.transpose(res, &perm);
        self.merge(out, conv_shape)
    }
}
