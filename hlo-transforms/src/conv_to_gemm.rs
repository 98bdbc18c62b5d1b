//! Convolution as im2col and one GEMM: a `convolution` becomes a patches array built from
//! `slice`, `pad`, `reshape` and one `concatenate`, one `dot` in GEMM form with the kernel
//! (transposed into the patches' order), and `bitcast`s and a `transpose` to the
//! convolution's result.
//!
//! With `n` spatial dimensions, batch `B`, input features `C`, window sizes `K_j`
//! (`W` window positions), output sizes `O_j` (`P` output positions) and output features
//! `F`, the patches are cut into parts, either
//! - by window position (when `W <= P`): one part per window position `k`, holding
//!   along each spatial dimension the `O_j` elements at `o * stride + k * rhs_dilate`
//!   of the padded input; or
//! - by output position (when `P < W`, as in weight gradients, whose window is a whole
//!   activation): one part per output position `p`, holding the `K_j` elements at
//!   `p * stride + k * rhs_dilate`.
//!
//! Each part is a strided `slice` of the input's own elements, `pad`ded with zeros where
//! the window reaches into the convolution's padding (and between the elements, interior
//! padding, where `lhs_dilate` spreads them); no padded copy of the whole input is made
//! (the CPU emitters cannot yet fuse a slice reading a pad's high edge from a computed
//! value).
//!
//! The parts are stacked, in row-major position order, along a new dimension: by
//! window, right before the features (so `[B, O..., W, C]` for NHWC, `[B, W, C, O...]` for
//! NCHW); by output, right after the batch when it comes first, right before it when it
//! comes last. The patches are then `[outer, contracted, inner]` up to a `bitcast`: the
//! contracted dimensions (window positions and features) in one block, the free ones
//! (batch and output positions) around it. The dot is
//! - `[outer, k] x [k, F]` when nothing follows the block (NHWC);
//! - `[F, k] x [k, inner]` when nothing precedes it (a weight gradient whose batch is
//!   last);
//! - `[G, F, k] x [G, k, inner]` batched over `outer` otherwise, the kernel broadcast `G`
//!   times (NCHW: `G = B`; only when the broadcast kernel is no larger than the patches);
//!
//! and its result, bitcast back to the free dimensions, is transposed to the
//! convolution's `dim_labels` (no transpose for NHWC and NCHW). The input is never
//! transposed by default: the CPU emitters cannot yet generate a transpose read under the
//! patches' concatenate. [`ConvToGemm::transpose_input`] allows it for inputs whose layout
//! fits no form above (the batch between spatial dimensions); other convolutions are left
//! alone. A 1x1 window with stride 1 and no padding needs no slice: just the dot.
//!
//! Exact up to summation order: the same products are summed. Only convolutions with
//! `feature_group_count` and `batch_group_count` 1, no window reversal, static non-empty
//! shapes and operands and result all `f32` or all `f64` (the GEMM types) are rewritten,
//! and only when [`ConvToGemm`]'s limits say it pays: enough multiply-adds (small
//! convolutions run faster as the direct loop nest than as several kernels and a library
//! call), a patches array of bounded size and a bounded number of slices. Convolutions
//! inside fusion bodies are left alone.

use std::collections::{HashMap, HashSet};

use crate::algsimp::scalar::{scalar_literal, Scalar};
use hlo::attrs::{AttrName, AttrValue, PaddingConfig, PaddingDim, SliceDim, WindowDim};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{CompId, Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::{ElementType, Shape};
use hlo::Opcode;

/// The pass (`conv-to-gemm`), with its profitability limits.
#[derive(Clone, Debug)]
pub struct ConvToGemm {
    /// Convolutions with fewer multiply-adds than this (output elements × window positions
    /// × input features) stay direct. Measured on the CPU backend (2-core AVX-512 host,
    /// f32, 3x3 windows): the direct loop nest wins only below about 600 multiply-adds
    /// (81: 0.2 vs 0.3 us; 576: a tie at 0.5 us; 768: 0.5 vs 0.35 us; 2304: 1.4 vs
    /// 0.7 us), and loses 10x to 100x from about 10^5 on.
    pub min_macs: i64,
    /// Most bytes the patches array may take.
    pub max_patch_bytes: i64,
    /// Most slices (parts) the patches may take.
    pub max_slices: i64,
    /// Whether the input may be transposed to `[B, S..., C]` first, for inputs whose
    /// layout fits no transpose-free form (off by default: see the module docs).
    pub transpose_input: bool,
}

impl Default for ConvToGemm {
    fn default() -> ConvToGemm {
        ConvToGemm {
            min_macs: 512,
            max_patch_bytes: 1 << 30,
            max_slices: 128,
            transpose_input: false,
        }
    }
}

impl ConvToGemm {
    /// A pass that rewrites every eligible convolution, whatever its size (for tests).
    pub fn always() -> ConvToGemm {
        ConvToGemm {
            min_macs: 0,
            max_patch_bytes: i64::MAX,
            max_slices: i64::MAX,
            transpose_input: true,
        }
    }
}

impl Pass for ConvToGemm {
    fn name(&self) -> &str {
        "conv-to-gemm"
    }

    fn description(&self) -> &str {
        "rewrites f32/f64 convolutions as im2col patches (slices, zero pads, one concatenate) and one GEMM-form dot"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let fusion_bodies: HashSet<CompId> = module
            .computations
            .iter()
            .flat_map(|c| c.instructions())
            .filter(|(_, i)| i.opcode == Opcode::Fusion)
            .flat_map(|(_, i)| i.called_computations())
            .collect();
        let mut changed = false;
        for ci in 0..module.computations.len() {
            if fusion_bodies.contains(&CompId::from_index(ci)) {
                continue;
            }
            let comp = &mut module.computations[ci];
            let convs: Vec<InstrId> = comp
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Convolution && i.operands.len() == 2)
                .map(|(id, _)| id)
                .collect();
            let mut here = false;
            for c in convs {
                let Some(geo) = Geometry::of(comp, c) else {
                    continue;
                };
                let Some(plan) = self.plan(&geo) else {
                    continue;
                };
                let new = Rewriter {
                    comp,
                    names: &mut names,
                    conv: c,
                    geo: &geo,
                }
                .rewrite(&plan);
                edit::replace_uses(comp, c, new);
                edit::remove_instructions(comp, &std::iter::once(c).collect());
                here = true;
            }
            if here {
                edit::repair_order(comp);
                changed = true;
            }
        }
        Ok(changed)
    }
}

/// What a dimension of the input or the output of a convolution is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Batch,
    Feature,
    Spatial(usize),
}

/// Everything the rewrite needs to know about one eligible convolution.
#[derive(Clone, Debug)]
struct Geometry {
    ty: ElementType,
    /// The role of every input dimension.
    input: Vec<Role>,
    /// The role of every output dimension.
    output: Vec<Role>,
    /// Kernel spatial dimensions, input and output feature dimensions.
    kernel_spatial: Vec<usize>,
    kernel_in: usize,
    kernel_out: usize,
    batch: i64,
    in_features: i64,
    out_features: i64,
    /// Input spatial sizes.
    spatial: Vec<i64>,
    /// Output spatial sizes.
    out_spatial: Vec<i64>,
    window: Vec<WindowDim>,
}

fn index(v: i64) -> Option<usize> {
    usize::try_from(v).ok()
}

fn product(v: impl IntoIterator<Item = i64>) -> Option<i64> {
    v.into_iter().try_fold(1i64, |a, x| a.checked_mul(x))
}

/// The roles of `rank` dimensions, `None` unless every dimension has exactly one.
fn roles(rank: usize, batch: i64, feature: i64, spatial: &[i64]) -> Option<Vec<Role>> {
    let mut r: Vec<Option<Role>> = vec![None; rank];
    let mut set = |d: i64, role| -> Option<()> {
        let slot = r.get_mut(index(d)?)?;
        slot.is_none().then(|| *slot = Some(role))
    };
    set(batch, Role::Batch)?;
    set(feature, Role::Feature)?;
    for (j, &d) in spatial.iter().enumerate() {
        set(d, Role::Spatial(j))?;
    }
    r.into_iter().collect()
}

impl Geometry {
    fn of(comp: &Computation, id: InstrId) -> Option<Geometry> {
        let conv = comp.instr(id);
        if conv.feature_group_count() != 1 || conv.batch_group_count() != 1 {
            return None;
        }
        let (lhs, rhs) = (
            &comp.instr(conv.operands[0]).shape,
            &comp.instr(conv.operands[1]).shape,
        );
        let ty = conv.shape.element_type()?;
        if !matches!(ty, ElementType::F32 | ElementType::F64)
            || lhs.element_type() != Some(ty)
            || rhs.element_type() != Some(ty)
            || !conv.shape.is_array()
            || conv.shape.is_dynamic()
            || lhs.is_dynamic()
            || rhs.is_dynamic()
        {
            return None;
        }
        let dn = conv.conv_dimension_numbers()?;
        let n = dn.input_spatial_dimensions.len();
        let window = match conv.window() {
            Some(w) => w.dims.clone(),
            None if n == 0 => Vec::new(),
            None => return None,
        };
        let (ld, rd, od) = (lhs.dims(), rhs.dims(), conv.shape.dims());
        if window.len() != n
            || ld.len() != n + 2
            || rd.len() != n + 2
            || od.len() != n + 2
            || ld.iter().chain(rd).chain(od).any(|&d| d < 1)
            || window.iter().any(|w| {
                w.reversal
                    || w.size < 1
                    || w.stride < 1
                    || w.base_dilation < 1
                    || w.window_dilation < 1
            })
        {
            return None;
        }
        let input = roles(
            n + 2,
            dn.input_batch_dimension,
            dn.input_feature_dimension,
            &dn.input_spatial_dimensions,
        )?;
        let output = roles(
            n + 2,
            dn.output_batch_dimension,
            dn.output_feature_dimension,
            &dn.output_spatial_dimensions,
        )?;
        // The kernel's input features play the batch's part, its output features the
        // features'.
        let kernel = roles(
            n + 2,
            dn.kernel_input_feature_dimension,
            dn.kernel_output_feature_dimension,
            &dn.kernel_spatial_dimensions,
        )?;
        let find = |r: &[Role], role: Role| r.iter().position(|&x| x == role);
        let kernel_spatial = (0..n)
            .map(|j| find(&kernel, Role::Spatial(j)))
            .collect::<Option<Vec<_>>>()?;
        let size = |r: &[Role], dims: &[i64], role| Some(dims[find(r, role)?]);
        let geo = Geometry {
            ty,
            batch: size(&input, ld, Role::Batch)?,
            in_features: size(&input, ld, Role::Feature)?,
            out_features: size(&kernel, rd, Role::Feature)?,
            spatial: (0..n)
                .map(|j| size(&input, ld, Role::Spatial(j)))
                .collect::<Option<_>>()?,
            out_spatial: (0..n)
                .map(|j| size(&output, od, Role::Spatial(j)))
                .collect::<Option<_>>()?,
            kernel_in: find(&kernel, Role::Batch)?,
            kernel_out: find(&kernel, Role::Feature)?,
            kernel_spatial,
            input,
            output,
            window,
        };
        // What the verifier checks, checked again: a malformed convolution is left to the
        // verifier's message, never rewritten into something else.
        let consistent = rd[geo.kernel_in] == geo.in_features
            && size(&geo.output, od, Role::Batch)? == geo.batch
            && size(&geo.output, od, Role::Feature)? == geo.out_features
            && (0..n).all(|j| {
                rd[geo.kernel_spatial[j]] == geo.window[j].size
                    && geo.out_len(j) == Some(geo.out_spatial[j])
            });
        consistent.then_some(geo)
    }

    fn rank(&self) -> usize {
        self.spatial.len()
    }

    /// The padded (and base-dilated) input length of spatial dimension `j`.
    fn padded_len(&self, j: usize) -> Option<i64> {
        let w = &self.window[j];
        ((self.spatial[j] - 1).checked_mul(w.base_dilation)? + 1)
            .checked_add(w.padding_low)?
            .checked_add(w.padding_high)
    }

    /// The output length of spatial dimension `j` the window gives (`None` on overflow
    /// or an empty output).
    fn out_len(&self, j: usize) -> Option<i64> {
        let w = &self.window[j];
        let len = self.padded_len(j)?;
        let ext = (w.size - 1)
            .checked_mul(w.window_dilation)?
            .checked_add(1)?;
        (len >= ext).then(|| (len - ext) / w.stride + 1)
    }

    /// Window positions (the product of the window sizes).
    fn window_positions(&self) -> i64 {
        self.window.iter().map(|w| w.size).product()
    }

    /// Output positions (the product of the output spatial sizes).
    fn out_positions(&self) -> i64 {
        self.out_spatial.iter().product()
    }

    /// Multiply-adds of the convolution.
    fn macs(&self) -> Option<i64> {
        product(
            [self.batch, self.out_features, self.in_features]
                .into_iter()
                .chain(self.out_spatial.iter().copied())
                .chain(self.window.iter().map(|w| w.size)),
        )
    }

    /// Elements of the patches array.
    fn patch_elements(&self) -> Option<i64> {
        product(
            [self.batch, self.in_features]
                .into_iter()
                .chain(self.out_spatial.iter().copied())
                .chain(self.window.iter().map(|w| w.size)),
        )
    }
}

/// A dimension of the patches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Label {
    /// Free: the batch.
    Batch,
    /// Free: the output positions along spatial dimension `j` (cut by window).
    Out(usize),
    /// Free: all output positions, row-major (the stacked dimension, cut by output).
    Outs,
    /// Contracted: the input features.
    Feature,
    /// Contracted: the window positions along spatial dimension `j` (cut by output).
    Win(usize),
    /// Contracted: all window positions, row-major (the stacked dimension, cut by window).
    Wins,
}

impl Label {
    fn contracted(self) -> bool {
        matches!(self, Label::Feature | Label::Win(_) | Label::Wins)
    }
}

/// How one convolution is rewritten.
#[derive(Clone, Debug)]
struct Plan {
    /// Cut by output position (else by window position).
    by_output: bool,
    /// The input's dimensions are first permuted by this (`None`: not transposed).
    transpose: Option<Vec<usize>>,
    /// The roles of the (transposed) input's dimensions.
    input: Vec<Role>,
    /// How many parts the patches are stacked from.
    parts: i64,
    /// Where the parts are stacked (when there are several).
    stack_at: usize,
    /// The patches' dimensions.
    labels: Vec<Label>,
    /// How many free dimensions precede the contracted block.
    outer: usize,
    /// How many contracted dimensions there are.
    contracted: usize,
}

impl Plan {
    fn new(geo: &Geometry, by_output: bool, transpose: bool) -> Option<Plan> {
        let (transpose, input) = if transpose {
            // [B, S..., C].
            let n = geo.rank();
            let order: Vec<Role> = std::iter::once(Role::Batch)
                .chain((0..n).map(Role::Spatial))
                .chain(std::iter::once(Role::Feature))
                .collect();
            let perm = order
                .iter()
                .map(|r| geo.input.iter().position(|x| x == r))
                .collect::<Option<Vec<_>>>()?;
            (Some(perm), order)
        } else {
            (None, geo.input.clone())
        };
        let mut labels: Vec<Label> = input
            .iter()
            .map(|r| match *r {
                Role::Batch => Label::Batch,
                Role::Feature => Label::Feature,
                Role::Spatial(j) if by_output => Label::Win(j),
                Role::Spatial(j) => Label::Out(j),
            })
            .collect();
        let parts = if by_output {
            geo.out_positions()
        } else {
            geo.window_positions()
        };
        let at = |l: Label| labels.iter().position(|&x| x == l);
        let stack_at = if by_output {
            match at(Label::Batch)? {
                0 => 1,
                b if b + 1 == labels.len() => b,
                _ => return None,
            }
        } else {
            at(Label::Feature)?
        };
        if parts > 1 {
            let l = if by_output { Label::Outs } else { Label::Wins };
            labels.insert(stack_at, l);
        }
        let outer = labels.iter().position(|l| l.contracted())?;
        let contracted = labels[outer..]
            .iter()
            .take_while(|l| l.contracted())
            .count();
        if labels[outer + contracted..].iter().any(|l| l.contracted()) {
            return None;
        }
        let plan = Plan {
            by_output,
            transpose,
            input,
            parts,
            stack_at,
            labels,
            outer,
            contracted,
        };
        // A batched dot broadcasts the kernel over the outer dimensions: not beyond the
        // size of the patches.
        if plan.outer > 0 && plan.outer + plan.contracted < plan.labels.len() {
            let g = product(plan.labels[..plan.outer].iter().map(|&l| plan.size(geo, l)))?;
            let k = geo.window_positions().checked_mul(geo.in_features)?;
            let broadcast = product([g, k, geo.out_features])?;
            if broadcast > geo.patch_elements()? {
                return None;
            }
        }
        Some(plan)
    }

    fn size(&self, geo: &Geometry, l: Label) -> i64 {
        match l {
            Label::Batch => geo.batch,
            Label::Feature => geo.in_features,
            Label::Out(j) => geo.out_spatial[j],
            Label::Win(j) => geo.window[j].size,
            Label::Outs => geo.out_positions(),
            Label::Wins => geo.window_positions(),
        }
    }
}

impl ConvToGemm {
    /// The plan for `geo`, if it pays: the cut taking fewer slices, else the other one,
    /// else (when allowed) the preferred one after transposing the input.
    fn plan(&self, geo: &Geometry) -> Option<Plan> {
        let (macs, elements) = (geo.macs()?, geo.patch_elements()?);
        let bytes = elements.checked_mul(i64::from(geo.ty.bit_width()? / 8))?;
        if macs < self.min_macs || bytes > self.max_patch_bytes {
            return None;
        }
        let preferred = geo.out_positions() < geo.window_positions();
        let mut tries = vec![(preferred, false), (!preferred, false)];
        if self.transpose_input {
            tries.push((preferred, true));
        }
        tries
            .into_iter()
            .filter_map(|(by_output, transpose)| Plan::new(geo, by_output, transpose))
            .find(|p| p.parts <= self.max_slices)
    }
}

/// (start, length, stride) of a slice along one dimension.
type Span = (i64, i64, i64);

/// How one part reads one input dimension: a strided slice of the input's elements,
/// then zeros around and between them.
#[derive(Clone, Copy, Debug)]
struct Cut {
    /// The slice; `None` keeps the dimension whole.
    slice: Option<Span>,
    pad: PaddingDim,
}

impl Cut {
    fn whole() -> Cut {
        Cut {
            slice: None,
            pad: PaddingDim {
                low: 0,
                high: 0,
                interior: 0,
            },
        }
    }

    /// The part along spatial dimension `j` whose element `o` (of `count`) reads the
    /// base-dilated, padded input at `first + o * step` (unpadded coordinates: `first`
    /// may be negative); `None` when every element reads padding.
    fn of(geo: &Geometry, j: usize, step: i64, first: i64, count: i64) -> Option<Cut> {
        let ld = geo.window[j].base_dilation;
        let last = (geo.spatial[j] - 1) * ld;
        let valid = |o: i64| {
            let u = first + o * step;
            (0..=last).contains(&u) && u % ld == 0
        };
        let o0 = (0..count).find(|&o| valid(o))?;
        // Valid positions recur every `q` (the divisibility by `ld`), within the range.
        let q = ld / gcd(step, ld);
        let mut c = 1;
        while o0 + c * q < count && valid(o0 + c * q) {
            c += 1;
        }
        let stride = q * step / ld;
        Some(Cut {
            slice: Some(((first + o0 * step) / ld, c, stride)),
            pad: PaddingDim {
                low: o0,
                high: count - (o0 + (c - 1) * q + 1),
                interior: q - 1,
            },
        })
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

struct Rewriter<'a> {
    comp: &'a mut Computation,
    names: &'a mut NameGen,
    conv: InstrId,
    geo: &'a Geometry,
}

impl Rewriter<'_> {
    /// Adds an instruction named after the convolution, with its metadata.
    fn add(
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

    fn dims(&self, x: InstrId) -> Vec<i64> {
        self.comp.instr(x).shape.dims().to_vec()
    }

    /// An array shape of the convolution's element type.
    fn shape(&self, dims: Vec<i64>) -> Shape {
        Shape::array(self.geo.ty, dims)
    }

    /// `x` transposed so that result dimension `i` is operand dimension `perm[i]` (`x`
    /// itself for the identity).
    fn transpose(&mut self, x: InstrId, perm: &[usize]) -> InstrId {
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
    fn reshape(&mut self, x: InstrId, dims: Vec<i64>) -> InstrId {
        if self.dims(x) == dims {
            return x;
        }
        let shape = self.shape(dims);
        self.add(Opcode::Reshape, shape, vec![x], Vec::new())
    }

    /// `x` as `shape` (the same elements in row-major order): a `bitcast` when both are
    /// row-major (no copy on the CPU), else a `reshape`; `x` itself when it has `shape`.
    fn merge(&mut self, x: InstrId, shape: Shape) -> InstrId {
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
    fn slice(&mut self, x: InstrId, cut: impl Fn(usize) -> Option<Span>) -> InstrId {
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

    fn concatenate(&mut self, parts: Vec<InstrId>, dim: usize) -> InstrId {
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
    fn zero(&mut self) -> InstrId {
        let ty = self.geo.ty;
        let zero = scalar_literal(ty, Scalar::Float(0.0)).expect("zero is a float literal");
        let name = self.names.fresh(&self.comp.instr(self.conv).name);
        edit::add(
            self.comp,
            Instruction::constant(name, Shape::scalar(ty), zero),
        )
    }

    /// The patches (dimensions `plan.labels`) of `x`, the input: every part is a strided
    /// slice of the input's valid elements, padded with zeros where the window reaches
    /// into the convolution's padding (or between the elements `lhs_dilate` spreads),
    /// so that no part reads a padded copy of the whole input.
    fn patches(&mut self, plan: &Plan, x: InstrId) -> InstrId {
        let geo = self.geo;
        let n = geo.rank();
        let extents: Vec<i64> = if plan.by_output {
            geo.out_spatial.clone()
        } else {
            geo.window.iter().map(|w| w.size).collect()
        };
        let zero = self.zero();
        let mut parts = Vec::new();
        let mut slices: HashMap<Vec<Option<Span>>, InstrId> = HashMap::new();
        for flat in 0..plan.parts {
            // Row-major positions.
            let mut pos = vec![0i64; n];
            let mut rest = flat;
            for j in (0..n).rev() {
                pos[j] = rest % extents[j];
                rest /= extents[j];
            }
            let cuts: Vec<Option<Cut>> = plan
                .input
                .iter()
                .map(|r| {
                    let &Role::Spatial(j) = r else {
                        return Some(Cut::whole());
                    };
                    let w = &geo.window[j];
                    if plan.by_output {
                        let first = pos[j] * w.stride - w.padding_low;
                        Cut::of(geo, j, w.window_dilation, first, w.size)
                    } else {
                        let first = pos[j] * w.window_dilation - w.padding_low;
                        Cut::of(geo, j, w.stride, first, geo.out_spatial[j])
                    }
                })
                .collect();
            let part = match cuts.into_iter().collect::<Option<Vec<Cut>>>() {
                Some(cuts) => {
                    // Parts differing only in their padding share one slice.
                    let key: Vec<_> = cuts.iter().map(|c| c.slice).collect();
                    let s = match slices.get(&key) {
                        Some(&s) => s,
                        None => {
                            let s = self.slice(x, |d| cuts[d].slice);
                            slices.insert(key, s);
                            s
                        }
                    };
                    self.pad_part(s, zero, &cuts)
                }
                None => {
                    // The window reads only padding here.
                    let dims = plan
                        .input
                        .iter()
                        .zip(self.dims(x))
                        .map(|(r, d)| match *r {
                            Role::Spatial(j) if plan.by_output => geo.window[j].size,
                            Role::Spatial(j) => geo.out_spatial[j],
                            _ => d,
                        })
                        .collect();
                    let shape = self.shape(dims);
                    self.add(
                        Opcode::Broadcast,
                        shape,
                        vec![zero],
                        vec![(AttrName::Dimensions, AttrValue::IntList(Vec::new()))],
                    )
                }
            };
            if plan.parts == 1 {
                return part;
            }
            let mut d = self.dims(part);
            d.insert(plan.stack_at, 1);
            parts.push(self.reshape(part, d));
        }
        self.concatenate(parts, plan.stack_at)
    }

    /// `x` padded by `cuts` (nothing when no cut pads).
    fn pad_part(&mut self, x: InstrId, zero: InstrId, cuts: &[Cut]) -> InstrId {
        if cuts.iter().all(|c| c.pad == Cut::whole().pad) {
            return x;
        }
        let dims = self
            .dims(x)
            .iter()
            .zip(cuts)
            .map(|(&d, c)| c.pad.low + c.pad.high + d + (d - 1) * c.pad.interior)
            .collect();
        let shape = self.shape(dims);
        let cfg = PaddingConfig {
            dims: cuts.iter().map(|c| c.pad).collect(),
        };
        self.add(
            Opcode::Pad,
            shape,
            vec![x, zero],
            vec![(AttrName::Padding, AttrValue::Padding(cfg))],
        )
    }

    /// Builds the patches, the dot and the result; returns the replacement.
    fn rewrite(&mut self, plan: &Plan) -> InstrId {
        let geo = self.geo;
        let (lhs, rhs, conv_shape) = {
            let c = self.comp.instr(self.conv);
            (c.operands[0], c.operands[1], (*c.shape).clone())
        };
        let x = match &plan.transpose {
            Some(perm) => self.transpose(lhs, perm),
            None => lhs,
        };
        let patches = self.patches(plan, x);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(text: &str) -> Geometry {
        let m = hlo::parse_module(text).unwrap();
        let e = m.entry();
        let id = e
            .instructions()
            .find(|(_, i)| i.opcode == Opcode::Convolution)
            .unwrap()
            .0;
        Geometry::of(e, id).unwrap()
    }

    #[test]
    fn weight_gradients_are_cut_by_output_position_without_transposes() {
        // JAX's NHWC weight gradient: the convolution's batch (the channels) comes last.
        let g = geometry(
            "HloModule m
ENTRY e {
  x = f32[2,6,6,4] parameter(0)
  dy = f32[2,6,6,4] parameter(1)
  ROOT c = f32[3,3,4,4] convolution(x, dy), window={size=6x6 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
}",
        );
        assert_eq!(g.macs(), Some(3 * 3 * 4 * 4 * 36 * 2));
        let plan = ConvToGemm::always().plan(&g).unwrap();
        assert!(plan.by_output && plan.transpose.is_none());
        assert_eq!(plan.parts, 9);
        use Label::*;
        assert_eq!(plan.labels, [Feature, Win(0), Win(1), Outs, Batch]);
        assert_eq!((plan.outer, plan.contracted), (0, 3));
    }

    #[test]
    fn nchw_is_a_batched_dot_and_nhwc_a_plain_one() {
        let nchw = geometry(
            "HloModule m
ENTRY e {
  x = f32[2,3,9,9] parameter(0)
  k = f32[4,3,3,3] parameter(1)
  ROOT c = f32[2,4,4,4] convolution(x, k), window={size=3x3 stride=2x2}, dim_labels=bf01_oi01->bf01
}",
        );
        let plan = ConvToGemm::always().plan(&nchw).unwrap();
        use Label::*;
        assert_eq!(plan.labels, [Batch, Wins, Feature, Out(0), Out(1)]);
        assert_eq!((plan.outer, plan.contracted), (1, 2));
        let nhwc = geometry(
            "HloModule m
ENTRY e {
  x = f32[2,9,9,3] parameter(0)
  k = f32[3,3,3,4] parameter(1)
  ROOT c = f32[2,4,4,4] convolution(x, k), window={size=3x3 stride=2x2}, dim_labels=b01f_01io->b01f
}",
        );
        let plan = ConvToGemm::always().plan(&nhwc).unwrap();
        assert_eq!(plan.labels, [Batch, Out(0), Out(1), Wins, Feature]);
        assert_eq!((plan.outer, plan.contracted), (3, 2));
    }

    #[test]
    fn limits_decide() {
        let tiny = geometry(
            "HloModule m
ENTRY e {
  x = f32[1,3,3,1] parameter(0)
  k = f32[3,3,1,1] parameter(1)
  ROOT c = f32[1,3,3,1] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}",
        );
        assert_eq!(tiny.macs(), Some(81));
        assert!(ConvToGemm::always().plan(&tiny).is_some());
        assert!(ConvToGemm::default().plan(&tiny).is_none());
        let g = geometry(
            "HloModule m
ENTRY e {
  x = f32[1,8,8,4] parameter(0)
  k = f32[3,3,4,4] parameter(1)
  ROOT c = f32[1,8,8,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}",
        );
        assert_eq!(g.macs(), Some(64 * 4 * 9 * 4));
        assert!(ConvToGemm::default().plan(&g).is_some());
        let few_slices = ConvToGemm {
            max_slices: 5,
            ..ConvToGemm::default()
        };
        assert!(few_slices.plan(&g).is_none());
        let small_patches = ConvToGemm {
            max_patch_bytes: 64 * 9 * 4 * 4 - 1,
            ..ConvToGemm::default()
        };
        assert!(small_patches.plan(&g).is_none());
    }
}
