//! The patches as one `gather` of the input at positions computed from iotas, zeroed by
//! a mask where the window reads padding (or a hole between `lhs_dilate`d elements).
//!
//! The patches' dimensions (the plan's labels, the stacked window or output positions
//! split into one dimension per spatial dimension) are indices of the gather but the
//! input features and the batch where not merged (below): its offset dimensions, slices
//! of every feature (and batch element). Along spatial dimension `j` a patch element with
//! output position `o` and window position `k` reads
//! the padded, base-dilated input at `u = o·stride + k·rhs_dilate - padding_low`: an
//! input element, `u / lhs_dilate`, when `0 <= u <= (in - 1)·lhs_dilate` and
//! `lhs_dilate` divides `u`, else zero. So the generated kernel is one loop nest with the
//! window position as a loop variable, its C the same size for a 7x7 or 3x3x3 window as
//! for a 1x1 one; the stack of one `pad(slice)` per window position it replaces compiled
//! to an `if` chain with one loop per position (55-79% of gcc's time on convolution
//! programs, benches/README.md).
//!
//! Why a mask and not a gather from a padded copy: the fusion pass fuses the `pad` into
//! the gather, which then branches per element on the clamped runtime index (0.087 ms
//! against 0.070 for the mask and its select on a `[2,32,32,16]` 3x3 patch matrix); the
//! select is branch-free, and every read stays inside the input (the gather clamps its
//! start indices). The leading dimensions are merged and cut again into about [`BLOCKS`]
//! blocks: a gather's kernel is not tiled (its runtime indices), so its blocks are the
//! indices of its most major dimension (a batch of one would run on one thread, a batch of
//! 8 as 8 streamed GEMMs of 3136 rows).

use super::geometry::{Label, Plan, Role};
use super::rewrite::Rewriter;
use crate::algsimp::scalar::{scalar_literal, Scalar};
use hlo::attrs::{AttrName, AttrValue, ComparisonDirection};
use hlo::ir::edit;
use hlo::ir::{InstrId, Instruction};
use hlo::shape::{ElementType, Shape};
use hlo::Opcode;

/// The parallel blocks wanted of a patches kernel (as `fusion::tile_cost`'s
/// `CPU_TARGET_PROGRAMS`; a streamed GEMM multiplies each block's rows at once, so much
/// smaller blocks make small GEMMs).
const BLOCKS: i64 = 64;

/// One dimension of the patches with its stacked dimensions split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Axis {
    Batch,
    Feature,
    /// Output positions along spatial dimension `j`.
    Out(usize),
    /// Window positions along spatial dimension `j`.
    Win(usize),
}

/// Where spatial dimension `j` reads the base-dilated, padded input: `offset` plus the
/// sum of `coef` times the index axis at each position of `terms`.
struct Read {
    terms: Vec<(usize, i64)>,
    offset: i64,
}

impl Rewriter<'_> {
    /// The patches (the plan's labels, stacked dimensions split row-major into their
    /// spatial dimensions and leading dimensions merged: the same elements in the same
    /// row-major order) of `x`, the input; `x` itself when they are the input unchanged.
    pub(super) fn patches(&mut self, plan: &Plan, x: InstrId) -> InstrId {
        let geo = self.geo;
        let n = geo.rank();
        let axes: Vec<Axis> = plan
            .labels
            .iter()
            .flat_map(|&l| match l {
                Label::Batch => vec![Axis::Batch],
                Label::Feature => vec![Axis::Feature],
                Label::Out(j) => vec![Axis::Out(j)],
                Label::Win(j) => vec![Axis::Win(j)],
                Label::Outs => (0..n).map(Axis::Out).collect(),
                Label::Wins => (0..n).map(Axis::Win).collect(),
            })
            .collect();
        let size = |a: Axis| match a {
            Axis::Batch => geo.batch,
            Axis::Feature => geo.in_features,
            Axis::Out(j) => geo.out_spatial[j],
            Axis::Win(j) => geo.window[j].size,
        };
        // Merged leading axes: those before the first that reads an input dimension an
        // axis before it reads too (never the last axis), flattened and cut again into
        // [blocks, rest] with the number of blocks the divisor of their product nearest
        // `BLOCKS` (a gather's kernel is parallel over its most major dimension only).
        // The batch and the features, where not merged, are read as slices (the
        // gather's offset dimensions, in the input's order as in the labels). The rule
        // sees only which input dimension each axis reads, so the patches a weight
        // gradient cuts by output position and those of its forward convolution cut by
        // window position, the same elements of the same input, are the same
        // instructions (CSE keeps one; `plan::memory::remat` may build them again for the
        // second GEMM).
        let reads_dim = |a: Axis| match a {
            Axis::Batch => None,
            Axis::Feature => Some(usize::MAX),
            Axis::Out(j) | Axis::Win(j) => Some(j),
        };
        let mut merged = 0;
        let mut rows = 1i64;
        while merged + 1 < axes.len()
            && !axes[..merged]
                .iter()
                .any(|&a| reads_dim(a) == reads_dim(axes[merged]))
        {
            rows *= size(axes[merged]);
            merged += 1;
        }
        let blocks = blocks_of(rows);
        let offset = |p: usize, a: Axis| p >= merged && matches!(a, Axis::Batch | Axis::Feature);
        // The index axes: every other axis, in order.
        let index: Vec<Axis> = axes
            .iter()
            .enumerate()
            .filter(|&(p, &a)| !offset(p, a))
            .map(|(_, &a)| a)
            .collect();
        let reads: Vec<Read> = (0..n)
            .map(|j| {
                let w = &geo.window[j];
                let mut terms = Vec::new();
                for (p, &a) in index.iter().enumerate() {
                    if a == Axis::Out(j) && size(a) > 1 {
                        terms.push((p, w.stride));
                    } else if a == Axis::Win(j) && size(a) > 1 {
                        terms.push((p, w.window_dilation));
                    }
                }
                Read {
                    terms,
                    offset: -w.padding_low,
                }
            })
            .collect();
        if self.is_input(plan, &axes, &reads) {
            return x;
        }
        // The index array's dimensions (without the index vector) and where each index
        // axis lies in them.
        let mut idx_dims: Vec<i64> = Vec::new();
        if merged > 0 {
            idx_dims.push(blocks);
            if blocks < rows {
                idx_dims.push(rows / blocks);
            }
        }
        idx_dims.extend(index[merged..].iter().map(|&a| size(a)));
        let fits = |v: i64| v.unsigned_abs() < (1u64 << 31);
        let bounds_fit = fits(rows)
            && idx_dims.iter().all(|&d| fits(d))
            && reads.iter().zip(&geo.window).all(|(r, w)| {
                let hi: i64 = r
                    .terms
                    .iter()
                    .map(|&(p, c)| c.saturating_mul(size(index[p]) - 1))
                    .fold(r.offset, i64::saturating_add);
                fits(r.offset) && fits(hi) && fits(w.base_dilation)
            });
        let ity = if bounds_fit {
            ElementType::S32
        } else {
            ElementType::S64
        };
        let mut ix = Indexer {
            ity,
            dims: idx_dims.clone(),
            merged_sizes: index[..merged].iter().map(|&a| size(a)).collect(),
            rest: if blocks < rows { rows / blocks } else { 1 },
            flat: None,
            iotas: Vec::new(),
            splats: Vec::new(),
        };
        // The index vector, in the input's dimension order: the batch or the features
        // where an index axis, every spatial dimension; and the mask.
        let mut components = Vec::new();
        let mut start_map = Vec::new();
        let mut mask: Option<InstrId> = None;
        for (d, &role) in plan.input.iter().enumerate() {
            let j = match role {
                Role::Spatial(j) => j,
                plain => {
                    let a = if plain == Role::Batch {
                        Axis::Batch
                    } else {
                        Axis::Feature
                    };
                    if let Some(p) = index.iter().position(|&x| x == a) {
                        components.push(ix.axis(self, p));
                        start_map.push(d);
                    }
                    continue;
                }
            };
            let r = &reads[j];
            let ld = geo.window[j].base_dilation;
            let last = (geo.spatial[j] - 1) * ld;
            let mut u: Option<InstrId> = None;
            let mut hi = r.offset;
            for &(p, c) in &r.terms {
                let a = ix.axis(self, p);
                let t = ix.times(self, a, c);
                u = Some(match u {
                    None => t,
                    Some(s) => ix.binary(self, Opcode::Add, s, t),
                });
                hi += c * (size(index[p]) - 1);
            }
            let u = match u {
                None => ix.splat(self, r.offset),
                Some(s) if r.offset != 0 => {
                    let o = ix.splat(self, r.offset);
                    ix.binary(self, Opcode::Add, s, o)
                }
                Some(s) => s,
            };
            let mut conds = Vec::new();
            if r.offset < 0 {
                let z = ix.splat(self, 0);
                conds.push(ix.compare(self, u, z, ComparisonDirection::Ge));
            }
            if hi > last {
                let l = ix.splat(self, last);
                conds.push(ix.compare(self, u, l, ComparisonDirection::Le));
            }
            let element = if ld > 1 {
                let d = ix.splat(self, ld);
                if r.offset % ld != 0 || r.terms.iter().any(|&(_, c)| c % ld != 0) {
                    let rem = ix.binary(self, Opcode::Remainder, u, d);
                    let z = ix.splat(self, 0);
                    conds.push(ix.compare(self, rem, z, ComparisonDirection::Eq));
                }
                ix.binary(self, Opcode::Divide, u, d)
            } else {
                u
            };
            for c in conds {
                mask = Some(match mask {
                    None => c,
                    Some(m) => ix.and(self, m, c),
                });
            }
            components.push(element);
            start_map.push(d);
        }
        // Where the indexed dimensions lead the input (NHWC, and its weight gradient's
        // `f01b`), the input is read as `[indexed..., offset...]` with the indexed ones
        // flattened and one linear index: no index vector to concatenate, so the kernel
        // reads every index value under one indexing (the CPU emitter will not fuse a
        // value that the concatenate's components read under different ones, and the
        // index array would be a kernel of its own).
        let leading = start_map.iter().enumerate().all(|(i, &d)| i == d);
        let in_dims = self.dims(x);
        let flat_len: i64 = in_dims[..start_map.len()].iter().product();
        let (operand, indices, start_map) = if leading && fits(flat_len.saturating_mul(4)) {
            let mut lin: Option<InstrId> = None;
            for (i, c) in components.into_iter().enumerate() {
                let stride: i64 = in_dims[i + 1..start_map.len()].iter().product();
                let t = ix.times(self, c, stride);
                lin = Some(match lin {
                    None => t,
                    Some(l) => ix.binary(self, Opcode::Add, l, t),
                });
            }
            let lin = lin.expect("a patch reads a spatial dimension");
            let mut flat_dims = vec![flat_len];
            flat_dims.extend_from_slice(&in_dims[start_map.len()..]);
            let flat = self.merge(x, self.shape(flat_dims));
            (flat, lin, vec![0])
        } else {
            // [idx_dims..., components].
            let k = components.len() as i64;
            let mut col_dims = idx_dims.clone();
            col_dims.push(1);
            let columns: Vec<InstrId> = components
                .into_iter()
                .map(|c| self.add(Opcode::Reshape, ix.shape(col_dims.clone()), vec![c], vec![]))
                .collect();
            let mut vec_dims = idx_dims.clone();
            vec_dims.push(k);
            let indices = self.add(
                Opcode::Concatenate,
                ix.shape(vec_dims),
                columns,
                vec![(
                    AttrName::Dimensions,
                    AttrValue::IntList(vec![idx_dims.len() as i64]),
                )],
            );
            (x, indices, start_map)
        };
        // The gather's result: the merged axes, then the others (the offset ones in
        // their places).
        let mut out_dims: Vec<i64> = Vec::new();
        let mut offset_dims: Vec<usize> = Vec::new();
        if merged > 0 {
            out_dims.push(blocks);
            if blocks < rows {
                out_dims.push(rows / blocks);
            }
        }
        for (p, &a) in axes.iter().enumerate().skip(merged) {
            if offset(p, a) {
                offset_dims.push(out_dims.len());
            }
            out_dims.push(size(a));
        }
        let mut collapsed = start_map.clone();
        collapsed.sort_unstable();
        // Whole along the offset (unindexed) dimensions, one element along the others.
        let slice_sizes: Vec<i64> = self
            .dims(operand)
            .iter()
            .enumerate()
            .map(|(d, &n)| if start_map.contains(&d) { 1 } else { n })
            .collect();
        let ints = |v: Vec<usize>| AttrValue::IntList(v.into_iter().map(|d| d as i64).collect());
        let gathered = self.add(
            Opcode::Gather,
            self.shape(out_dims.clone()),
            vec![operand, indices],
            vec![
                (AttrName::OffsetDims, ints(offset_dims.clone())),
                (AttrName::CollapsedSliceDims, ints(collapsed)),
                (AttrName::StartIndexMap, ints(start_map)),
                (
                    AttrName::IndexVectorDim,
                    AttrValue::Int(idx_dims.len() as i64),
                ),
                (AttrName::SliceSizes, AttrValue::IntList(slice_sizes)),
            ],
        );
        let Some(mask) = mask else {
            return gathered;
        };
        let spread: Vec<i64> = (0..out_dims.len())
            .filter(|d| !offset_dims.contains(d))
            .map(|d| d as i64)
            .collect();
        let pred = Shape::array(ElementType::Pred, out_dims.clone());
        let mask = self.add(
            Opcode::Broadcast,
            pred,
            vec![mask],
            vec![(AttrName::Dimensions, AttrValue::IntList(spread))],
        );
        let zero = self.zero();
        let zeros = self.add(
            Opcode::Broadcast,
            self.shape(out_dims.clone()),
            vec![zero],
            vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
        );
        self.add(
            Opcode::Select,
            self.shape(out_dims),
            vec![mask, gathered, zeros],
            Vec::new(),
        )
    }

    /// Whether the patches are `x` itself: the axes in the input's order, each spatial
    /// one reading every input element in order (a 1x1 window, stride 1, no padding).
    fn is_input(&self, plan: &Plan, axes: &[Axis], reads: &[Read]) -> bool {
        let geo = self.geo;
        axes.len() == plan.input.len()
            && axes.iter().zip(&plan.input).all(|(&a, &r)| match (a, r) {
                (Axis::Batch, Role::Batch) | (Axis::Feature, Role::Feature) => true,
                (Axis::Out(j) | Axis::Win(j), Role::Spatial(i)) if i == j => {
                    let extent = match a {
                        Axis::Out(_) => geo.out_spatial[j],
                        _ => geo.window[j].size,
                    };
                    let r = &reads[j];
                    let ld = geo.window[j].base_dilation;
                    extent == geo.spatial[j]
                        && r.offset == 0
                        && r.terms.iter().all(|&(_, c)| c == ld)
                        && (extent == 1 || ld == 1)
                }
                _ => false,
            })
    }
}

/// The divisor of `rows` nearest [`BLOCKS`] on a log scale (the smaller on a tie).
fn blocks_of(rows: i64) -> i64 {
    let distance = |x: i64| (x as f64 / BLOCKS as f64).ln().abs();
    let mut best = 1;
    let mut d = 1;
    while d * d <= rows {
        if rows % d == 0 {
            for c in [d, rows / d] {
                if distance(c) < distance(best) || (distance(c) == distance(best) && c < best) {
                    best = c;
                }
            }
        }
        d += 1;
    }
    best
}

/// Builds the integer index arrays, all of the index array's dimensions.
struct Indexer {
    ity: ElementType,
    dims: Vec<i64>,
    /// Sizes of the index axes merged (flattened) into the index array's first
    /// dimension, or its first two when `rest > 1` (`[blocks, rest]`).
    merged_sizes: Vec<i64>,
    rest: i64,
    /// The flattened position of the merged axes, made on first use.
    flat: Option<InstrId>,
    /// One iota per index array dimension, made on first use.
    iotas: Vec<(usize, InstrId)>,
    /// One broadcast constant per value, made on first use.
    splats: Vec<(i64, InstrId)>,
}

impl Indexer {
    fn shape(&self, dims: Vec<i64>) -> Shape {
        Shape::array(self.ity, dims)
    }

    fn full(&self) -> Shape {
        self.shape(self.dims.clone())
    }

    fn iota(&mut self, rw: &mut Rewriter<'_>, d: usize) -> InstrId {
        if let Some(&(_, i)) = self.iotas.iter().find(|(e, _)| *e == d) {
            return i;
        }
        let i = rw.add(
            Opcode::Iota,
            self.full(),
            vec![],
            vec![(AttrName::IotaDimension, AttrValue::Int(d as i64))],
        );
        self.iotas.push((d, i));
        i
    }

    /// The value of index axis `p` (an index of the plan's patches without the features)
    /// at every index array position.
    fn axis(&mut self, rw: &mut Rewriter<'_>, p: usize) -> InstrId {
        let m = self.merged_sizes.len();
        let lead = if self.rest > 1 { 2 } else { 1 };
        if p >= m {
            let d = if m > 0 { p - m + lead } else { p };
            return self.iota(rw, d);
        }
        // The flattened position of the merged axes: `block · rest + r`.
        let i = match self.flat {
            Some(f) => f,
            None => {
                let b = self.iota(rw, 0);
                let f = if self.rest > 1 {
                    let b = self.times(rw, b, self.rest);
                    let r = self.iota(rw, 1);
                    self.binary(rw, Opcode::Add, b, r)
                } else {
                    b
                };
                self.flat = Some(f);
                f
            }
        };
        let inner: i64 = self.merged_sizes[p + 1..].iter().product();
        let q = if inner > 1 {
            let c = self.splat(rw, inner);
            self.binary(rw, Opcode::Divide, i, c)
        } else {
            i
        };
        if p == 0 {
            return q;
        }
        let c = self.splat(rw, self.merged_sizes[p]);
        self.binary(rw, Opcode::Remainder, q, c)
    }

    fn splat(&mut self, rw: &mut Rewriter<'_>, v: i64) -> InstrId {
        if let Some(&(_, i)) = self.splats.iter().find(|(e, _)| *e == v) {
            return i;
        }
        let lit = scalar_literal(self.ity, Scalar::Int(i128::from(v)))
            .expect("an integer literal of an integer type");
        let name = rw.names.fresh(&rw.comp.instr(rw.conv).name);
        let c = edit::add(
            rw.comp,
            Instruction::constant(name, Shape::scalar(self.ity), lit),
        );
        let b = rw.add(
            Opcode::Broadcast,
            self.full(),
            vec![c],
            vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
        );
        self.splats.push((v, b));
        b
    }

    fn binary(&mut self, rw: &mut Rewriter<'_>, op: Opcode, a: InstrId, b: InstrId) -> InstrId {
        rw.add(op, self.full(), vec![a, b], vec![])
    }

    /// `a · c` (`a` itself for `c = 1`).
    fn times(&mut self, rw: &mut Rewriter<'_>, a: InstrId, c: i64) -> InstrId {
        if c == 1 {
            return a;
        }
        let k = self.splat(rw, c);
        self.binary(rw, Opcode::Multiply, a, k)
    }

    fn compare(
        &mut self,
        rw: &mut Rewriter<'_>,
        a: InstrId,
        b: InstrId,
        dir: ComparisonDirection,
    ) -> InstrId {
        rw.add(
            Opcode::Compare,
            Shape::array(ElementType::Pred, self.dims.clone()),
            vec![a, b],
            vec![(AttrName::Direction, AttrValue::ComparisonDirection(dir))],
        )
    }

    fn and(&mut self, rw: &mut Rewriter<'_>, a: InstrId, b: InstrId) -> InstrId {
        rw.add(
            Opcode::And,
            Shape::array(ElementType::Pred, self.dims.clone()),
            vec![a, b],
            vec![],
        )
    }
}
