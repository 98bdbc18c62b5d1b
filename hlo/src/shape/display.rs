//! Text form of shapes and layouts, exactly as XLA prints them.

use std::fmt::{self, Write};

use super::{Layout, Shape, TILE_COMBINE_DIMENSION, UNBOUNDED_SIZE};

/// Tuple elements get an `/*index=N*/` comment every this many elements, as in XLA.
pub(crate) const ANNOTATION_INTERVAL: usize = 5;

impl Shape {
    /// Appends the shape to `out`, with array layouts when `with_layout` is true.
    pub fn write_to(&self, out: &mut String, with_layout: bool) {
        match self {
            Shape::Tuple(elements) => {
                out.push('(');
                for (i, e) in elements.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                        if i % ANNOTATION_INTERVAL == 0 {
                            let _ = write!(out, "/*index={i}*/");
                        }
                    }
                    e.write_to(out, with_layout);
                }
                out.push(')');
            }
            Shape::Array(a) => {
                out.push_str(a.element_type().as_str());
                out.push('[');
                for (i, &d) in a.dims().iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if d == UNBOUNDED_SIZE {
                        out.push('?');
                        continue;
                    }
                    if a.is_dynamic_dim(i) {
                        out.push_str("<=");
                    }
                    let _ = write!(out, "{d}");
                }
                out.push(']');
                if with_layout {
                    if let Some(l) = a.layout() {
                        // Like XLA, a scalar's empty layout `{}` is not printed.
                        let before = out.len();
                        l.write_to(out);
                        if a.dims().is_empty() && &out[before..] == "{}" {
                            out.truncate(before);
                        }
                    }
                }
            }
        }
    }

    /// The shape's text without layouts (XLA's `ShapeUtil::HumanString`).
    pub fn to_string_without_layout(&self) -> String {
        let mut s = String::new();
        self.write_to(&mut s, false);
        s
    }
}

impl fmt::Display for Shape {
    /// Prints with layouts (XLA's `ShapeUtil::HumanStringWithLayout`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_to(&mut s, true);
        f.write_str(&s)
    }
}

fn write_ints(out: &mut String, v: &[i64]) {
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{x}");
    }
}

impl Layout {
    /// Appends the layout (`{1,0:T(8,128)E(4)}`) to `out`.
    pub fn write_to(&self, out: &mut String) {
        out.push('{');
        write_ints(out, &self.minor_to_major);
        let Some(x) = self.suffixes() else {
            out.push('}');
            return;
        };
        out.push(':');
        if !x.dim_level_types.is_empty() {
            out.push_str("D(");
            out.push_str(&x.dim_level_types.join(","));
            out.push(')');
        }
        if !x.tiles.is_empty() {
            out.push('T');
            for t in &x.tiles {
                out.push('(');
                for (i, &d) in t.dims.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    if d == TILE_COMBINE_DIMENSION {
                        out.push('*');
                    } else {
                        let _ = write!(out, "{d}");
                    }
                }
                out.push(')');
            }
        }
        if x.tail_padding_alignment != 1 {
            let _ = write!(out, "L({})", x.tail_padding_alignment);
        }
        if let Some(t) = x.index_type {
            let _ = write!(out, "#({t})");
        }
        if let Some(t) = x.pointer_type {
            let _ = write!(out, "*({t})");
        }
        if x.element_size_bits != 0 {
            let _ = write!(out, "E({})", x.element_size_bits);
        }
        if x.memory_space != 0 {
            let _ = write!(out, "S({})", x.memory_space);
        }
        if !x.split_configs.is_empty() {
            out.push_str("SC");
            for c in &x.split_configs {
                let _ = write!(out, "({}:", c.dimension);
                write_ints(out, &c.split_indices);
                out.push(')');
            }
        }
        if let Some(p) = &x.physical_shape {
            out.push_str("P(");
            p.write_to(out, true);
            out.push(')');
        }
        if x.dynamic_shape_metadata_prefix_bytes != 0 {
            let _ = write!(out, "M({})", x.dynamic_shape_metadata_prefix_bytes);
        }
        out.push('}');
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_to(&mut s);
        f.write_str(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ElementType, LayoutSuffixes, Tile};
    use super::*;

    #[test]
    fn prints_like_xla() {
        let l = Layout::with_suffixes(
            vec![1, 0],
            LayoutSuffixes {
                tiles: vec![
                    Tile { dims: vec![8, 128] },
                    Tile {
                        dims: vec![2, TILE_COMBINE_DIMENSION],
                    },
                ],
                element_size_bits: 4,
                memory_space: 1,
                ..LayoutSuffixes::default()
            },
        );
        let s = Shape::array_with(
            ElementType::F32,
            vec![16, UNBOUNDED_SIZE],
            vec![true, true],
            Some(l),
        );
        assert_eq!(s.to_string(), "f32[<=16,?]{1,0:T(8,128)(2,*)E(4)S(1)}");
        let t = Shape::tuple((0..7).map(|_| Shape::scalar(ElementType::S32)).collect());
        assert_eq!(
            t.to_string(),
            "(s32[], s32[], s32[], s32[], s32[], /*index=5*/s32[], s32[])"
        );
        assert_eq!(Shape::tuple(vec![]).to_string(), "()");
        assert_eq!(Shape::token().to_string(), "token[]");
    }
}
