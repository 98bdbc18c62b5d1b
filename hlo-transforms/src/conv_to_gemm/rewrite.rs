//! Building the rewrite: the instruction helpers the routes share, the patches
//! (`gather.rs`), the kernel in the patches' order, the dot and the transpose back to the
//! convolution's result.

use super::geometry::{Geometry, Label, Plan, Role};
use crate::algsimp::scalar::{scalar_literal, Scalar};
use hlo::attrs::{AttrName, AttrValue, SliceDim};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction};
use hlo::shape::Shape;
use hlo::Opcode;

/// (start, length, stride) of a slice along one dimension.
pub(super) type Span = (i64, i64, i64);

pub(super) struct Rewriter<'a> {
    pub(super) comp: &'a mut Computation,
    pub(super) names: &'a mut NameGen,
    pub(super) conv: InstrId,
    pub(super) geo: &'a Geometry,
}

impl Rewriter<'_> {
    /// Adds an instruction named after the convolution, with its metadata.
    pub(super) fn add(
        &mut self,
        op: Opcode,
        shape: Shape,
        operands: Vec<InstrId>,
        attrs: Vec<(AttrName, AttrValue)>,
    ) -> InstrId {
        let conv = self.comp.instr(self.conv);
        let name = self.names.fresh(&conv.name);
        let meta = conv.attr(&AttrName::Metadata).cloned();
        let mut i = Instruction::new(name, op, shape, operands);
        for (n, v) in attrs {
            i.set_attr(n, v);
        }
        if let Some(m) = meta {
            i.set_attr(AttrName::Metadata, m);
        }
        edit::add(self.comp, i)
    }

    pub(super) fn dims(&self, x: InstrId) -> Vec<i64> {
        self.comp.instr(x).shape.dims().to_vec()
    }

    /// An array shape of the convolution's element type.
    pub(super) fn shape(&self, dims: Vec<i64>) -> Shape {
        Shape::array(self.geo.ty, dims)
    }

    /// `x` transposed so that result dimension `i` is operand dimension `perm[i]` (`x`
    /// itself for the identity).
    pub(super) fn transpose(&mut self, x: InstrId, perm: &[usize]) -> InstrId {
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return x;
        }
        let d = self.dims(x);
        let shape = self.shape(perm.iter().map(|&p| d[p]).collect());
        let perm = perm.iter().map(|&p| p as i64).collect();
        self.add(
            Opcode::Transpose,
            shape,
            vec![x],
            vec![(AttrName::Dimensions, AttrValue::IntList(perm))],
        )
    }

    /// `x` reshaped to `dims` (`x` itself when it has them).
    pub(super) fn reshape(&mut self, x: InstrId, dims: Vec<i64>) -> InstrId {
        if self.dims(x) == dims {
            return x;
        }
        let shape = self.shape(dims);
        self.add(Opcode::Reshape, shape, vec![x], Vec::new())
    }

    /// `x` as `shape` (the same elements in row-major order): a `bitcast` when both are
    /// row-major (no copy on the CPU), else a `reshape`; `x` itself when it has `shape`.
    pub(super) fn merge(&mut self, x: InstrId, shape: Shape) -> InstrId {
        let from = &self.comp.instr(x).shape;
        if **from == shape {
            return x;
        }
        let row_major = |s: &Shape| s.layout().is_none_or(|l| l.is_row_major() && l.is_plain());
        let op = if row_major(from) && row_major(&shape) {
            Opcode::Bitcast
        } else {
            Opcode::Reshape
        };
        self.add(op, shape, vec![x], Vec::new())
    }

    /// `x` sliced along every dimension: `cut(d)` gives (start, length, stride) of
    /// dimension `d`, `None` keeping it whole; `x` itself when nothing is cut.
    pub(super) fn slice(&mut self, x: InstrId, cut: impl Fn(usize) -> Option<Span>) -> InstrId {
        let mut dims = self.dims(x);
        let mut slice = Vec::with_capacity(dims.len());
        for (d, size) in dims.iter_mut().enumerate() {
            let (start, len, stride) = cut(d).unwrap_or((0, *size, 1));
            slice.push(SliceDim {
                start,
                limit: start + (len - 1) * stride + 1,
                stride,
            });
            *size = len;
        }
        if dims == self.dims(x) {
            return x;
        }
        let shape = self.shape(dims);
        self.add(
            Opcode::Slice,
            shape,
            vec![x],
            vec![(AttrName::Slice, AttrValue::Slice(slice))],
        )
    }

    pub(super) fn concatenate(&mut self, parts: Vec<InstrId>, dim: usize) -> InstrId {
        if parts.len() == 1 {
            return parts[0];
        }
        let mut dims = self.dims(parts[0]);
        dims[dim] = parts.iter().map(|&p| self.dims(p)[dim]).sum();
        let shape = self.shape(dims);
        self.add(
            Opcode::Concatenate,
            shape,
            parts,
            vec![(AttrName::Dimensions, AttrValue::IntList(vec![dim as i64]))],
        )
    }

    /// A scalar zero.
    pub(super) fn zero(&mut self) -> InstrId {
        let ty = self.geo.ty;
        let zero = scalar_literal(ty, Scalar::Float(0.0)).expect("zero is a float literal");
        let name = self.names.fresh(&self.comp.instr(self.conv).name);
        edit::add(
            self.comp,
            Instruction::constant(name, Shape::scalar(ty), zero),
        )
    }

    /// The convolution's kernel and result shape, and the patches of its input
    /// (transposed first where the plan says): how the plain and the grouped rewrite
    /// both begin.
    pub(super) fn open(&mut self, plan: &Plan) -> (InstrId, Shape, InstrId) {
        let (lhs, rhs, conv_shape) = {
            let c = self.comp.instr(self.conv);
            (c.operands[0], c.operands[1], (*c.shape).clone())
        };
        let x = match &plan.transpose {
            Some(perm) => self.transpose(lhs, perm),
            None => lhs,
        };
        (rhs, conv_shape, self.patches(plan, x))
    }

    /// Builds the patches, the dot and the result; returns the replacement.
    pub(super) fn rewrite(&mut self, plan: &Plan) -> InstrId {
        let geo = self.geo;
        let (rhs, conv_shape, patches) = self.open(plan);
        // The kernel as [contracted, F] or [F, contracted], contracted in the patches'
        // order (spatial dimensions the patches lack are of size 1: first).
        let block: Vec<usize> = plan.labels[plan.outer..plan.outer + plan.contracted]
            .iter()
            .flat_map(|&l| match l {
                Label::Feature => vec![geo.kernel_in],
                Label::Win(j) => vec![geo.kernel_spatial[j]],
                _ => geo.kernel_spatial.clone(),
            })
            .collect();
        let contracted: Vec<usize> = geo
            .kernel_spatial
            .iter()
            .filter(|d| !block.contains(d))
            .chain(&block)
            .copied()
            .collect();
        let size = |ls: &[Label]| ls.iter().map(|&l| plan.size(geo, l)).product::<i64>();
        let outer = size(&plan.labels[..plan.outer]);
        let k = size(&plan.labels[plan.outer..plan.outer + plan.contracted]);
        let inner = size(&plan.labels[plan.outer + plan.contracted..]);
        let has_inner = plan.outer + plan.contracted < plan.labels.len();
        let f = geo.out_features;
        let dot_attrs = |batch: bool, lc: i64, rc: i64| {
            let mut a = Vec::new();
            if batch {
                a.push((AttrName::LhsBatchDims, AttrValue::IntList(vec![0])));
            }
            a.push((AttrName::LhsContractingDims, AttrValue::IntList(vec![lc])));
            if batch {
                a.push((AttrName::RhsBatchDims, AttrValue::IntList(vec![0])));
            }
            a.push((AttrName::RhsContractingDims, AttrValue::IntList(vec![rc])));
            a
        };
        let dot = if !has_inner {
            // [outer, k] x [k, F].
            let perm: Vec<usize> = contracted
                .iter()
                .chain([&geo.kernel_out])
                .copied()
                .collect();
            let kt = self.transpose(rhs, &perm);
            let kernel = self.merge(kt, self.shape(vec![k, f]));
            let p = self.merge(patches, self.shape(vec![outer, k]));
            let shape = self.shape(vec![outer, f]);
            self.add(Opcode::Dot, shape, vec![p, kernel], dot_attrs(false, 1, 0))
        } else {
            let perm: Vec<usize> = [geo.kernel_out]
                .iter()
                .chain(&contracted)
                .copied()
                .collect();
            let kt = self.transpose(rhs, &perm);
            let kernel = self.merge(kt, self.shape(vec![f, k]));
            if plan.outer == 0 {
                // [F, k] x [k, inner].
                let p = self.merge(patches, self.shape(vec![k, inner]));
                let shape = self.shape(vec![f, inner]);
                self.add(Opcode::Dot, shape, vec![kernel, p], dot_attrs(false, 1, 0))
            } else {
                // [G, F, k] x [G, k, inner], the kernel broadcast.
                let shape = self.shape(vec![outer, f, k]);
                let kernel = self.add(
                    Opcode::Broadcast,
                    shape,
                    vec![kernel],
                    vec![(AttrName::Dimensions, AttrValue::IntList(vec![1, 2]))],
                );
                let p = self.merge(patches, self.shape(vec![outer, k, inner]));
                let shape = self.shape(vec![outer, f, inner]);
                self.add(Opcode::Dot, shape, vec![kernel, p], dot_attrs(true, 2, 1))
            }
        };
        // The result's dimensions: the free ones before the block, the output features,
        // the free ones after it.
        let expand = |ls: &[Label]| -> Vec<Role> {
            ls.iter()
                .flat_map(|&l| match l {
                    Label::Batch => vec![Role::Batch],
                    Label::Out(j) => vec![Role::Spatial(j)],
                    _ => (0..geo.rank()).map(Role::Spatial).collect(),
                })
                .collect()
        };
        let mut result: Vec<Role> = expand(&plan.labels[..plan.outer])
            .into_iter()
            .chain([Role::Feature])
            .chain(expand(&plan.labels[plan.outer + plan.contracted..]))
            .collect();
        // Output spatial dimensions the patches lack are of size 1: first.
        for j in (0..geo.rank()).rev() {
            if !result.contains(&Role::Spatial(j)) {
                result.insert(0, Role::Spatial(j));
            }
        }
        let role_size = |r: &Role| match *r {
            Role::Batch => geo.batch,
            Role::Feature => f,
            Role::Spatial(j) => geo.out_spatial[j],
        };
        let perm: Vec<usize> = geo
            .output
            .iter()
            .map(|r| result.iter().position(|x| x == r).unwrap_or(0))
            .collect();
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return self.merge(dot, conv_shape);
        }
        let res = self.merge(dot, self.shape(result.iter().map(role_size).collect()));
        let perm = perm.iter().map(|&p| p as i64).collect();
        self.add(
            Opcode::Transpose,
            conv_shape,
            vec![res],
            vec![(AttrName::Dimensions, AttrValue::IntList(perm))],
        )
    }
}
