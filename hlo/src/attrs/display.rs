//! Text of typed attribute values, as XLA prints them.

use std::fmt::{self, Write};

use super::types::{
    ConvDimensionNumbers, MeshDeviceIds, OutputOperandAlias, PaddingConfig, ReplicaGroups,
    SliceDim, Window,
};

/// Appends `{a,b,c}`.
pub(crate) fn write_int_list(out: &mut String, v: &[i64]) {
    out.push('{');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{x}");
    }
    out.push('}');
}

/// Appends `{{a,b},{c}}`.
pub(crate) fn write_int_list_list(out: &mut String, v: &[Vec<i64>]) {
    out.push('{');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_int_list(out, x);
    }
    out.push('}');
}

fn join_x<T>(out: &mut String, v: &[T], f: impl Fn(&mut String, &T)) {
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push('x');
        }
        f(out, x);
    }
}

impl Window {
    /// Appends the window's inner text (`size=3x3 stride=2x2 pad=0_1x0_1`), without braces.
    pub fn write_to(&self, out: &mut String) {
        let d = &self.dims;
        if d.is_empty() {
            return;
        }
        out.push_str("size=");
        join_x(out, d, |o, w| {
            let _ = write!(o, "{}", w.size);
        });
        if d.iter().any(|w| w.stride != 1) {
            out.push_str(" stride=");
            join_x(out, d, |o, w| {
                let _ = write!(o, "{}", w.stride);
            });
        }
        if d.iter().any(|w| w.padding_low != 0 || w.padding_high != 0) {
            out.push_str(" pad=");
            join_x(out, d, |o, w| {
                let _ = write!(o, "{}_{}", w.padding_low, w.padding_high);
            });
        }
        if d.iter().any(|w| w.base_dilation != 1) {
            out.push_str(" lhs_dilate=");
            join_x(out, d, |o, w| {
                let _ = write!(o, "{}", w.base_dilation);
            });
        }
        if d.iter().any(|w| w.window_dilation != 1) {
            out.push_str(" rhs_dilate=");
            join_x(out, d, |o, w| {
                let _ = write!(o, "{}", w.window_dilation);
            });
        }
        if d.iter().any(|w| w.reversal) {
            out.push_str(" rhs_reversal=");
            join_x(out, d, |o, w| o.push(if w.reversal { '1' } else { '0' }));
        }
    }
}

impl fmt::Display for Window {
    /// `{size=... stride=...}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::from("{");
        self.write_to(&mut s);
        s.push('}');
        f.write_str(&s)
    }
}

/// Appends `{[0:2], [1:5]}`; when any stride is not 1 every range shows its stride
/// (`{[0:2:1], [1:5:2]}`), as XLA prints them.
pub(crate) fn write_slice(out: &mut String, dims: &[SliceDim]) {
    let strides = dims.iter().any(|d| d.stride != 1);
    out.push('{');
    for (i, d) in dims.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "[{}:{}", d.start, d.limit);
        if strides {
            let _ = write!(out, ":{}", d.stride);
        }
        out.push(']');
    }
    out.push('}');
}

impl PaddingConfig {
    /// Appends `0_0x1_2` (with `_interior` on every dimension when any is non-zero).
    pub fn write_to(&self, out: &mut String) {
        let interior = self.dims.iter().any(|d| d.interior != 0);
        join_x(out, &self.dims, |o, d| {
            let _ = write!(o, "{}_{}", d.low, d.high);
            if interior {
                let _ = write!(o, "_{}", d.interior);
            }
        });
    }
}

impl fmt::Display for PaddingConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_to(&mut s);
        f.write_str(&s)
    }
}

fn labels(rank: usize, fixed: [(i64, char); 2], spatial: &[i64]) -> String {
    let mut v = vec!['?'; rank];
    for (dim, c) in fixed {
        if let Some(slot) = usize::try_from(dim).ok().and_then(|d| v.get_mut(d)) {
            *slot = c;
        }
    }
    for (i, &dim) in spatial.iter().enumerate() {
        if let Some(slot) = usize::try_from(dim).ok().and_then(|d| v.get_mut(d)) {
            *slot = char::from_digit(i as u32 % 10, 10).unwrap_or('?');
        }
    }
    v.into_iter().collect()
}

impl fmt::Display for ConvDimensionNumbers {
    /// `b01f_01io->b01f`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lhs = labels(
            self.input_rank,
            [
                (self.input_batch_dimension, 'b'),
                (self.input_feature_dimension, 'f'),
            ],
            &self.input_spatial_dimensions,
        );
        let rhs = labels(
            self.kernel_rank,
            [
                (self.kernel_input_feature_dimension, 'i'),
                (self.kernel_output_feature_dimension, 'o'),
            ],
            &self.kernel_spatial_dimensions,
        );
        let out = labels(
            self.output_rank,
            [
                (self.output_batch_dimension, 'b'),
                (self.output_feature_dimension, 'f'),
            ],
            &self.output_spatial_dimensions,
        );
        write!(f, "{lhs}_{rhs}->{out}")
    }
}

impl fmt::Display for ReplicaGroups {
    /// `{{0,1},{2,3}}` or `[2,2]<=[4]` / `[2,2]<=[2,2]T(1,0)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        match self {
            ReplicaGroups::List(g) => write_int_list_list(&mut s, g),
            ReplicaGroups::Iota {
                num_groups,
                group_size,
                reshape_dims,
                transpose,
            } => {
                let _ = write!(s, "[{num_groups},{group_size}]<=[");
                for (i, d) in reshape_dims.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    let _ = write!(s, "{d}");
                }
                s.push(']');
                if let Some(t) = transpose {
                    s.push_str("T(");
                    for (i, d) in t.iter().enumerate() {
                        if i > 0 {
                            s.push(',');
                        }
                        let _ = write!(s, "{d}");
                    }
                    s.push(')');
                }
            }
            ReplicaGroups::Mesh {
                axes,
                device_ids,
                group_axes,
            } => {
                s.push_str("mesh[");
                for (i, (name, size)) in axes.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    let _ = write!(s, "'{name}'={size}");
                }
                s.push(']');
                match device_ids {
                    None => {}
                    Some(MeshDeviceIds::List(ids)) => {
                        s.push_str(", device_ids=(");
                        push_joined(&mut s, ids);
                        s.push(')');
                    }
                    Some(MeshDeviceIds::Iota {
                        reshape_dims,
                        transpose,
                    }) => {
                        s.push_str(", device_ids=([");
                        push_joined(&mut s, reshape_dims);
                        s.push(']');
                        if let Some(t) = transpose {
                            s.push_str("T(");
                            push_joined(&mut s, t);
                            s.push(')');
                        }
                        s.push(')');
                    }
                }
                s.push_str(" {");
                for (i, name) in group_axes.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    let _ = write!(s, "'{name}'");
                }
                s.push('}');
            }
        }
        f.write_str(&s)
    }
}

/// Appends `{{0}: (1, {}), {1}: (0, {0})}`.
pub(crate) fn write_aliasing(out: &mut String, v: &[OutputOperandAlias]) {
    out.push('{');
    for (i, a) in v.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_int_list(out, &a.output_index);
        let _ = write!(out, ": ({}, ", a.operand);
        write_int_list(out, &a.operand_index);
        out.push(')');
    }
    out.push('}');
}

/// Appends `a,b,c`.
fn push_joined(s: &mut String, v: &[i64]) {
    for (i, d) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{d}");
    }
}
