//! The shape of a convolution as the rewrite sees it: each dimension's role, the window
//! and output sizes, and the plan of parts (which cut, which dot form).

use hlo::attrs::WindowDim;
use hlo::ir::{Computation, InstrId};
use hlo::shape::ElementType;

/// What a dimension of the input or the output of a convolution is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Batch,
    Feature,
    Spatial(usize),
}

/// Everything the rewrite needs to know about one eligible convolution.
#[derive(Clone, Debug)]
pub(super) struct Geometry {
    pub(super) ty: ElementType,
    /// The role of every input dimension.
    pub(super) input: Vec<Role>,
    /// The role of every output dimension.
    pub(super) output: Vec<Role>,
    /// Kernel spatial dimensions, input and output feature dimensions.
    pub(super) kernel_spatial: Vec<usize>,
    pub(super) kernel_in: usize,
    pub(super) kernel_out: usize,
    pub(super) batch: i64,
    pub(super) in_features: i64,
    pub(super) out_features: i64,
    /// Input spatial sizes.
    pub(super) spatial: Vec<i64>,
    /// Output spatial sizes.
    pub(super) out_spatial: Vec<i64>,
    pub(super) window: Vec<WindowDim>,
    /// `feature_group_count` or `batch_group_count` (at most one of them above 1): the
    /// input's features (or batch) and the output features split into this many groups,
    /// group-major, each group a convolution of its own with its slice of the kernel.
    pub(super) groups: i64,
    /// Whether the groups split the batch (`batch_group_count`), else the features.
    pub(super) batch_groups: bool,
}

pub(super) fn index(v: i64) -> Option<usize> {
    usize::try_from(v).ok()
}

pub(super) fn product(v: impl IntoIterator<Item = i64>) -> Option<i64> {
    v.into_iter().try_fold(1i64, |a, x| a.checked_mul(x))
}

/// The roles of `rank` dimensions, `None` unless every dimension has exactly one.
pub(super) fn roles(rank: usize, batch: i64, feature: i64, spatial: &[i64]) -> Option<Vec<Role>> {
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
    pub(super) fn of(comp: &Computation, id: InstrId) -> Option<Geometry> {
        let conv = comp.instr(id);
        let (fg, bg) = (conv.feature_group_count(), conv.batch_group_count());
        if fg < 1 || bg < 1 || (fg > 1 && bg > 1) {
            return None;
        }
        let (lhs, rhs) = (
            &comp.instr(conv.operands[0]).shape,
            &comp.instr(conv.operands[1]).shape,
        );
        let ty = conv.shape.element_type()?;
        // Half types too: the patches are data movement, exact in any type, and the dot
        // of half operands computes in `f32` and rounds once (the GEMM path), as XLA:CPU
        // and the evaluator compute a half convolution.
        if !matches!(
            ty,
            ElementType::F32 | ElementType::F64 | ElementType::BF16 | ElementType::F16
        ) || lhs.element_type() != Some(ty)
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
            groups: fg.max(bg),
            batch_groups: bg > 1,
        };
        // What the verifier checks, checked again: a malformed convolution is left to the
        // verifier's message, never rewritten into something else.
        let consistent = rd[geo.kernel_in].checked_mul(fg)? == geo.in_features
            && size(&geo.output, od, Role::Batch)?.checked_mul(bg)? == geo.batch
            && geo.out_features % geo.groups == 0
            && size(&geo.output, od, Role::Feature)? == geo.out_features
            && (0..n).all(|j| {
                rd[geo.kernel_spatial[j]] == geo.window[j].size
                    && geo.out_len(j) == Some(geo.out_spatial[j])
            });
        consistent.then_some(geo)
    }

    pub(super) fn rank(&self) -> usize {
        self.spatial.len()
    }

    /// The padded (and base-dilated) input length of spatial dimension `j`.
    pub(super) fn padded_len(&self, j: usize) -> Option<i64> {
        let w = &self.window[j];
        ((self.spatial[j] - 1).checked_mul(w.base_dilation)? + 1)
            .checked_add(w.padding_low)?
            .checked_add(w.padding_high)
    }

    /// The output length of spatial dimension `j` the window gives (`None` on overflow
    /// or an empty output).
    pub(super) fn out_len(&self, j: usize) -> Option<i64> {
        let w = &self.window[j];
        let len = self.padded_len(j)?;
        let ext = (w.size - 1)
            .checked_mul(w.window_dilation)?
            .checked_add(1)?;
        (len >= ext).then(|| (len - ext) / w.stride + 1)
    }

    /// Window positions (the product of the window sizes).
    pub(super) fn window_positions(&self) -> i64 {
        self.window.iter().map(|w| w.size).product()
    }

    /// Output positions (the product of the output spatial sizes).
    pub(super) fn out_positions(&self) -> i64 {
        self.out_spatial.iter().product()
    }

    /// Multiply-adds of the convolution (each group pairs its own inputs and outputs).
    pub(super) fn macs(&self) -> Option<i64> {
        product(
            [self.batch, self.out_features, self.in_features]
                .into_iter()
                .chain(self.out_spatial.iter().copied())
                .chain(self.window.iter().map(|w| w.size)),
        )
        .map(|m| m / self.groups)
    }

    /// Whether the convolution has groups (of features or of the batch).
    pub(super) fn is_grouped(&self) -> bool {
        self.groups > 1
    }

    /// Elements of the patches array.
    pub(super) fn patch_elements(&self) -> Option<i64> {
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
pub(super) enum Label {
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
    pub(super) fn contracted(self) -> bool {
        matches!(self, Label::Feature | Label::Win(_) | Label::Wins)
    }
}

/// How one convolution is rewritten.
#[derive(Clone, Debug)]
pub(super) struct Plan {
    /// The input's dimensions are first permuted by this (`None`: not transposed).
    pub(super) transpose: Option<Vec<usize>>,
    /// The roles of the (transposed) input's dimensions.
    pub(super) input: Vec<Role>,
    /// How many parts the patches are stacked from.
    pub(super) parts: i64,
    /// The patches' dimensions.
    pub(super) labels: Vec<Label>,
    /// How many free dimensions precede the contracted block.
    pub(super) outer: usize,
    /// How many contracted dimensions there are.
    pub(super) contracted: usize,
}

impl Plan {
    pub(super) fn new(geo: &Geometry, by_output: bool, transpose: bool) -> Option<Plan> {
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
        // A grouped convolution's dot is built in canonical form by transposes
        // (`grouped.rs`): no block needed.
        if !geo.is_grouped() && labels[outer + contracted..].iter().any(|l| l.contracted()) {
            return None;
        }
        let plan = Plan {
            transpose,
            input,
            parts,
            labels,
            outer,
            contracted,
        };
        // A batched dot broadcasts the kernel over the outer dimensions: not beyond the
        // size of the patches.
        if !geo.is_grouped() && plan.outer > 0 && plan.outer + plan.contracted < plan.labels.len() {
            let g = product(plan.labels[..plan.outer].iter().map(|&l| plan.size(geo, l)))?;
            let k = geo.window_positions().checked_mul(geo.in_features)?;
            let broadcast = product([g, k, geo.out_features])?;
            if broadcast > geo.patch_elements()? {
                return None;
            }
        }
        Some(plan)
    }

    pub(super) fn size(&self, geo: &Geometry, l: Label) -> i64 {
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
