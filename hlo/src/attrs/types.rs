//! Typed attribute values: windows, slices, paddings, dimension numbers, replica groups,
//! comparison and fusion kinds.

use std::fmt;
use std::str::FromStr;

/// One dimension of a convolution / reduce-window window.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WindowDim {
    /// Window size.
    pub size: i64,
    /// Stride (default 1).
    pub stride: i64,
    /// Low edge padding (may be negative).
    pub padding_low: i64,
    /// High edge padding (may be negative).
    pub padding_high: i64,
    /// Base (input, `lhs_dilate`) dilation (default 1).
    pub base_dilation: i64,
    /// Window (`rhs_dilate`) dilation (default 1).
    pub window_dilation: i64,
    /// Window reversal (`rhs_reversal`).
    pub reversal: bool,
}

impl WindowDim {
    /// A dimension of the given size with every other field at its default.
    pub fn of_size(size: i64) -> WindowDim {
        WindowDim {
            size,
            stride: 1,
            padding_low: 0,
            padding_high: 0,
            base_dilation: 1,
            window_dilation: 1,
            reversal: false,
        }
    }
}

/// A window: `{size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Window {
    /// One entry per spatial dimension.
    pub dims: Vec<WindowDim>,
}

/// One dimension of a `slice={[start:limit:stride], ...}` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SliceDim {
    /// First index (inclusive).
    pub start: i64,
    /// End index (exclusive).
    pub limit: i64,
    /// Step (default 1).
    pub stride: i64,
}

/// One dimension of a pad's `padding=lo_hi_interior` attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PaddingDim {
    /// Low edge padding (negative removes elements).
    pub low: i64,
    /// High edge padding (negative removes elements).
    pub high: i64,
    /// Interior padding between elements.
    pub interior: i64,
}

/// The `padding=` attribute of `pad`: one [`PaddingDim`] per dimension, `x`-separated.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct PaddingConfig {
    /// Per-dimension padding.
    pub dims: Vec<PaddingDim>,
}

/// Convolution dimension numbers (`dim_labels=b01f_01io->b01f`).
///
/// The label strings' lengths are kept so that `?` (unlabelled) positions print back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConvDimensionNumbers {
    /// Input (lhs) batch dimension (`b`).
    pub input_batch_dimension: i64,
    /// Input feature dimension (`f`).
    pub input_feature_dimension: i64,
    /// Input spatial dimensions, spatial index order (`0`, `1`, ...).
    pub input_spatial_dimensions: Vec<i64>,
    /// Kernel input feature dimension (`i`).
    pub kernel_input_feature_dimension: i64,
    /// Kernel output feature dimension (`o`).
    pub kernel_output_feature_dimension: i64,
    /// Kernel spatial dimensions.
    pub kernel_spatial_dimensions: Vec<i64>,
    /// Output batch dimension (`b`).
    pub output_batch_dimension: i64,
    /// Output feature dimension (`f`).
    pub output_feature_dimension: i64,
    /// Output spatial dimensions.
    pub output_spatial_dimensions: Vec<i64>,
    /// Length of the input label string.
    pub input_rank: usize,
    /// Length of the kernel label string.
    pub kernel_rank: usize,
    /// Length of the output label string.
    pub output_rank: usize,
}

/// Dot dimension numbers, assembled from the `lhs_contracting_dims=`, `rhs_contracting_dims=`,
/// `lhs_batch_dims=`, `rhs_batch_dims=` attributes (absent lists are empty).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct DotDimensionNumbers {
    /// Contracting dimensions of the lhs.
    pub lhs_contracting_dims: Vec<i64>,
    /// Contracting dimensions of the rhs.
    pub rhs_contracting_dims: Vec<i64>,
    /// Batch dimensions of the lhs.
    pub lhs_batch_dims: Vec<i64>,
    /// Batch dimensions of the rhs.
    pub rhs_batch_dims: Vec<i64>,
}

/// Gather dimension numbers, assembled from the gather's attributes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct GatherDimensionNumbers {
    /// `offset_dims`.
    pub offset_dims: Vec<i64>,
    /// `collapsed_slice_dims`.
    pub collapsed_slice_dims: Vec<i64>,
    /// `start_index_map`.
    pub start_index_map: Vec<i64>,
    /// `index_vector_dim`.
    pub index_vector_dim: i64,
    /// `operand_batching_dims`.
    pub operand_batching_dims: Vec<i64>,
    /// `start_indices_batching_dims`.
    pub start_indices_batching_dims: Vec<i64>,
}

impl GatherDimensionNumbers {
    /// Whether a gather with these numbers and indices of rank `indices_rank` is in XLA's
    /// canonical form (`GatherSimplifier::IsSimplifiedGather`, which XLA's emitters need
    /// inside fusions): indices of rank 2 with the index vector last, start indices mapped
    /// in order, no collapsed or batching dimensions, offset dimensions `1..=n`.
    pub fn is_xla_canonical(&self, indices_rank: usize) -> bool {
        indices_rank == 2
            && self.index_vector_dim == 1
            && self
                .start_index_map
                .iter()
                .enumerate()
                .all(|(k, &d)| d == k as i64)
            && self.collapsed_slice_dims.is_empty()
            && self.operand_batching_dims.is_empty()
            && self.offset_dims.first() == Some(&1)
            && self.offset_dims.last() == Some(&(self.offset_dims.len() as i64))
    }
}

/// Scatter dimension numbers, assembled from the scatter's attributes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ScatterDimensionNumbers {
    /// `update_window_dims`.
    pub update_window_dims: Vec<i64>,
    /// `inserted_window_dims`.
    pub inserted_window_dims: Vec<i64>,
    /// `scatter_dims_to_operand_dims`.
    pub scatter_dims_to_operand_dims: Vec<i64>,
    /// `index_vector_dim`.
    pub index_vector_dim: i64,
    /// `input_batching_dims`.
    pub input_batching_dims: Vec<i64>,
    /// `scatter_indices_batching_dims`.
    pub scatter_indices_batching_dims: Vec<i64>,
}

/// Replica groups of a collective: an explicit list (`{{0,1},{2,3}}`) or the iota form
/// (`[2,2]<=[4]`, `[2,2]<=[2,2]T(1,0)`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReplicaGroups {
    /// Explicit groups of replica (or device) ids.
    List(Vec<Vec<i64>>),
    /// `[num_groups,group_size]<=[reshape_dims]T(transpose)`: the ids `0..n` reshaped,
    /// transposed and split into groups.
    Iota {
        /// Number of groups.
        num_groups: i64,
        /// Ids per group.
        group_size: i64,
        /// Dimensions the iota is reshaped to.
        reshape_dims: Vec<i64>,
        /// Permutation applied after the reshape, if written.
        transpose: Option<Vec<i64>>,
    },
    /// `mesh['a'=2,'b'=4] {'b'}`: the devices `0..n` laid out row-major over named mesh
    /// axes; each group holds the devices that differ only along the listed axes.
    /// `mesh[..], device_ids=(..) {..}` places other devices at the mesh positions.
    Mesh {
        /// The mesh axes, major to minor, with their sizes.
        axes: Vec<(String, i64)>,
        /// The device at each row-major mesh position, when not `0..n` in order.
        device_ids: Option<MeshDeviceIds>,
        /// The axes a group spans, in the order its members are listed.
        group_axes: Vec<String>,
    },
}

/// A mesh's `device_ids=(..)`: the device at each row-major mesh position, written
/// as XLA's printer writes a tile assignment's array (a non-iota mesh keeps the ids
/// because its groups are device ids, not mesh positions).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MeshDeviceIds {
    /// `([4,2]T(1,0))`: `0..n` reshaped to `reshape_dims`, transposed by `transpose`
    /// and read row-major.
    Iota {
        /// Dimensions the iota is reshaped to.
        reshape_dims: Vec<i64>,
        /// Permutation applied after the reshape, if written.
        transpose: Option<Vec<i64>>,
    },
    /// `(0,2,1,3)`: the ids themselves.
    List(Vec<i64>),
}

impl MeshDeviceIds {
    /// The device ids in mesh-position order, or `None` when the iota is malformed
    /// or holds more than `max_ids` ids.
    pub fn expand(&self, max_ids: i64) -> Option<Vec<i64>> {
        match self {
            MeshDeviceIds::List(v) => Some(v.clone()),
            MeshDeviceIds::Iota {
                reshape_dims,
                transpose,
            } => {
                let n = reshape_dims
                    .iter()
                    .try_fold(1i64, |acc, &d| (d > 0).then(|| acc.checked_mul(d))?)?;
                let groups = ReplicaGroups::Iota {
                    num_groups: 1,
                    group_size: n,
                    reshape_dims: reshape_dims.clone(),
                    transpose: transpose.clone(),
                }
                .groups(max_ids)?;
                groups.into_iter().next()
            }
        }
    }
}

impl ReplicaGroups {
    /// Members per group, when the groups say it (`None` for `{}`: every replica).
    pub fn group_size(&self) -> Option<i64> {
        match self {
            ReplicaGroups::List(g) => g.first().map(|g| g.len() as i64),
            ReplicaGroups::Iota { group_size, .. } => Some(*group_size),
            ReplicaGroups::Mesh {
                axes, group_axes, ..
            } => group_axes.iter().try_fold(1i64, |acc, a| {
                let size = axes.iter().find(|(n, _)| n == a)?.1;
                acc.checked_mul(size)
            }),
        }
    }

    /// The explicit groups; the iota form is expanded when it has at most `max_ids` ids.
    pub fn groups(&self, max_ids: i64) -> Option<Vec<Vec<i64>>> {
        match self {
            ReplicaGroups::List(g) => Some(g.clone()),
            ReplicaGroups::Iota {
                num_groups,
                group_size,
                reshape_dims,
                transpose,
            } => {
                let n = num_groups.checked_mul(*group_size)?;
                let total = reshape_dims
                    .iter()
                    .try_fold(1i64, |acc, &d| acc.checked_mul(d))?;
                if n != total
                    || n > max_ids
                    || *group_size <= 0
                    || reshape_dims.iter().any(|&d| d <= 0)
                {
                    return None;
                }
                let rank = reshape_dims.len();
                let perm: Vec<usize> = match transpose {
                    Some(p) => p
                        .iter()
                        .map(|&x| usize::try_from(x).ok())
                        .collect::<Option<_>>()?,
                    None => (0..rank).collect(),
                };
                if perm.len() != rank {
                    return None;
                }
                let mut seen = vec![false; rank];
                for &p in &perm {
                    *seen.get_mut(p)? = true;
                }
                if seen.contains(&false) {
                    return None;
                }
                // Strides of the reshaped iota, row-major.
                let mut strides = vec![1i64; rank];
                for k in (0..rank.saturating_sub(1)).rev() {
                    strides[k] = strides[k + 1] * reshape_dims[k + 1];
                }
                let tdims: Vec<i64> = perm.iter().map(|&p| reshape_dims[p]).collect();
                let mut idx = vec![0i64; rank];
                let mut ids = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    ids.push(idx.iter().zip(&perm).map(|(&i, &p)| i * strides[p]).sum());
                    for k in (0..rank).rev() {
                        idx[k] += 1;
                        if idx[k] < tdims[k] {
                            break;
                        }
                        idx[k] = 0;
                    }
                }
                Some(
                    ids.chunks(*group_size as usize)
                        .map(<[i64]>::to_vec)
                        .collect(),
                )
            }
            ReplicaGroups::Mesh {
                axes,
                device_ids,
                group_axes,
            } => {
                let positions = mesh_groups(axes, group_axes, max_ids)?;
                let Some(ids) = device_ids else {
                    return Some(positions);
                };
                // Groups of mesh positions become groups of the devices placed there;
                // the ids must be a permutation of `0..n` for the n positions.
                let ids = ids.expand(max_ids)?;
                let n = positions.iter().map(Vec::len).sum::<usize>();
                let mut seen = vec![false; n];
                if ids.len() != n {
                    return None;
                }
                for &d in &ids {
                    let slot = seen.get_mut(usize::try_from(d).ok()?)?;
                    if std::mem::replace(slot, true) {
                        return None;
                    }
                }
                Some(
                    positions
                        .iter()
                        .map(|g| g.iter().map(|&p| ids[p as usize]).collect())
                        .collect(),
                )
            }
        }
    }
}

macro_rules! text_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// The spelling in HLO text.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl FromStr for $name {
            type Err = ();
            fn from_str(s: &str) -> Result<Self, ()> {
                match s {
                    $($text => Ok($name::$variant),)*
                    _ => Err(()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

text_enum! {
    /// The `direction=` of a compare.
    ComparisonDirection {
        /// `==`.
        Eq => "EQ",
        /// `!=`.
        Ne => "NE",
        /// `>=`.
        Ge => "GE",
        /// `>`.
        Gt => "GT",
        /// `<=`.
        Le => "LE",
        /// `<`.
        Lt => "LT",
    }
}

text_enum! {
    /// The `type=` of a compare.
    ComparisonType {
        /// IEEE comparison.
        Float => "FLOAT",
        /// Total order on floats (`-NaN < -Inf < ... < Inf < NaN`).
        TotalOrder => "TOTALORDER",
        /// Signed integers.
        Signed => "SIGNED",
        /// Unsigned integers.
        Unsigned => "UNSIGNED",
    }
}

text_enum! {
    /// The `kind=` of a fusion.
    FusionKind {
        /// Elementwise/loop fusion.
        Loop => "kLoop",
        /// Fusion rooted at a reduction-like op.
        Input => "kInput",
        /// Fusion of an op with its output consumers.
        Output => "kOutput",
        /// Backend-specific fusion.
        Custom => "kCustom",
    }
}

/// One entry of `output_to_operand_aliasing={{out}: (operand, {index})}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OutputOperandAlias {
    /// Shape index in the output.
    pub output_index: Vec<i64>,
    /// Operand number.
    pub operand: i64,
    /// Shape index in the operand.
    pub operand_index: Vec<i64>,
}

/// A value written either as a quoted string or as a brace-delimited dictionary (JSON or
/// MLIR-style), as `backend_config=` and frontend attribute values are.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TextValue {
    /// A quoted string, unescaped.
    Quoted(String),
    /// A `{...}` dictionary, verbatim (braces included).
    Dict(String),
}

impl TextValue {
    /// The content: the unescaped string, or the dictionary text.
    pub fn as_str(&self) -> &str {
        match self {
            TextValue::Quoted(s) | TextValue::Dict(s) => s,
        }
    }
}

/// The groups of a mesh form: devices numbered row-major over `axes`; one group per
/// combination of the other axes, its members varying along `group_axes` (the first listed
/// axis the slowest). `None` when an axis is unknown or repeated, a size is not positive,
/// or there are more than `max_ids` devices.
fn mesh_groups(
    axes: &[(String, i64)],
    group_axes: &[String],
    max_ids: i64,
) -> Option<Vec<Vec<i64>>> {
    let total = axes.iter().try_fold(
        1i64,
        |acc, (_, d)| {
            if *d <= 0 {
                None
            } else {
                acc.checked_mul(*d)
            }
        },
    )?;
    if total > max_ids {
        return None;
    }
    let rank = axes.len();
    let mut strides = vec![1i64; rank];
    for k in (0..rank.saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * axes[k + 1].1;
    }
    let mut inner = Vec::with_capacity(group_axes.len());
    for a in group_axes {
        let k = axes.iter().position(|(n, _)| n == a)?;
        if inner.contains(&k) {
            return None;
        }
        inner.push(k);
    }
    let outer: Vec<usize> = (0..rank).filter(|k| !inner.contains(k)).collect();
    // Offsets of the members of one group, and the first device of each group.
    let offsets = row_major_offsets(&inner, axes, &strides);
    let bases = row_major_offsets(&outer, axes, &strides);
    Some(
        bases
            .iter()
            .map(|b| offsets.iter().map(|o| b + o).collect())
            .collect(),
    )
}

/// `sum(index[k] * strides[k])` over every index of the axes `order` (row-major in that
/// order).
fn row_major_offsets(order: &[usize], axes: &[(String, i64)], strides: &[i64]) -> Vec<i64> {
    let mut out = vec![0i64];
    for &k in order {
        let mut next = Vec::with_capacity(out.len() * axes[k].1 as usize);
        for &o in &out {
            for i in 0..axes[k].1 {
                next.push(o + i * strides[k]);
            }
        }
        out = next;
    }
    out
}
