//! Shapes: arrays (element type, dimensions, optional layout) and tuples.

mod display;
mod element_type;
mod layout;
mod types;

pub use element_type::{ElementType, TypeClass, UnknownElementType};
pub use types::{
    ArrayShape, Layout, LayoutSuffixes, Shape, SplitConfig, Tile, TILE_COMBINE_DIMENSION,
};

/// The size XLA stores for an unbounded dynamic dimension (printed `?`).
pub const UNBOUNDED_SIZE: i64 = i64::MIN;

/// Errors of shape arithmetic.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// The element count (or byte size) does not fit in an `i64`.
    #[error("shape {0} has more elements or bytes than fit in a 64-bit integer")]
    Overflow(String),
    /// The shape has an unbounded (`?`) dimension, so it has no element count.
    #[error("shape {0} has an unbounded dimension")]
    Unbounded(String),
    /// The operation needs an array shape.
    #[error("shape {0} is not an array")]
    NotArray(String),
}

impl ArrayShape {
    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// Dimension sizes (bounds for dynamic dimensions; [`UNBOUNDED_SIZE`] for `?`).
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// Whether dimension `i` is dynamic (`<=N` or `?`).
    pub fn is_dynamic_dim(&self, i: usize) -> bool {
        self.dynamic.get(i).copied().unwrap_or(false)
    }

    /// The layout, if the text gave one.
    pub fn layout(&self) -> Option<&Layout> {
        self.layout.as_ref()
    }
}

impl Shape {
    /// An array shape without layout and with static dimensions.
    pub fn array(element_type: ElementType, dims: Vec<i64>) -> Shape {
        Shape::Array(ArrayShape {
            element_type,
            dims,
            dynamic: Vec::new(),
            layout: None,
        })
    }

    /// An array shape with the given dynamic flags (one per dimension) and layout.
    ///
    /// Dynamic flags are normalized: all-false is stored as "no dynamic dimension".
    pub fn array_with(
        element_type: ElementType,
        dims: Vec<i64>,
        dynamic: Vec<bool>,
        layout: Option<Layout>,
    ) -> Shape {
        let dynamic = if dynamic.iter().any(|&d| d) {
            dynamic
        } else {
            Vec::new()
        };
        Shape::Array(ArrayShape {
            element_type,
            dims,
            dynamic,
            layout,
        })
    }

    /// A rank-0 array shape.
    pub fn scalar(element_type: ElementType) -> Shape {
        Shape::array(element_type, Vec::new())
    }

    /// `token[]`.
    pub fn token() -> Shape {
        Shape::scalar(ElementType::Token)
    }

    /// A tuple shape.
    pub fn tuple(elements: Vec<Shape>) -> Shape {
        Shape::Tuple(elements)
    }

    /// True for array shapes (including `token[]`/`opaque[]`).
    pub fn is_array(&self) -> bool {
        matches!(self, Shape::Array(_))
    }

    /// True for tuple shapes.
    pub fn is_tuple(&self) -> bool {
        matches!(self, Shape::Tuple(_))
    }

    /// True for `token[]`.
    pub fn is_token(&self) -> bool {
        self.element_type() == Some(ElementType::Token)
    }

    /// True for rank-0 arrays of a data type (not token/opaque).
    pub fn is_scalar(&self) -> bool {
        match self {
            Shape::Array(a) => a.dims.is_empty() && a.element_type.is_array_type(),
            Shape::Tuple(_) => false,
        }
    }

    /// The array part, if this is an array shape.
    pub fn as_array(&self) -> Option<&ArrayShape> {
        match self {
            Shape::Array(a) => Some(a),
            Shape::Tuple(_) => None,
        }
    }

    /// The element type of an array shape; `None` for tuples.
    pub fn element_type(&self) -> Option<ElementType> {
        self.as_array().map(|a| a.element_type)
    }

    /// Dimension sizes of an array shape; empty for tuples and scalars.
    pub fn dims(&self) -> &[i64] {
        match self {
            Shape::Array(a) => &a.dims,
            Shape::Tuple(_) => &[],
        }
    }

    /// Number of dimensions (0 for scalars and tuples).
    pub fn rank(&self) -> usize {
        self.dims().len()
    }

    /// Whether dimension `i` of an array shape is dynamic.
    pub fn is_dynamic_dim(&self, i: usize) -> bool {
        self.as_array().is_some_and(|a| a.is_dynamic_dim(i))
    }

    /// True when any dimension (of this array, or of any tuple element) is dynamic.
    pub fn is_dynamic(&self) -> bool {
        match self {
            Shape::Array(a) => !a.dynamic.is_empty(),
            Shape::Tuple(t) => t.iter().any(Shape::is_dynamic),
        }
    }

    /// The layout of an array shape, if present.
    pub fn layout(&self) -> Option<&Layout> {
        self.as_array().and_then(|a| a.layout.as_ref())
    }

    /// Sets (or clears) the layout of an array shape; no effect on tuples.
    pub fn set_layout(&mut self, layout: Option<Layout>) {
        if let Shape::Array(a) = self {
            a.layout = layout;
        }
    }

    /// Tuple element shapes; empty for arrays.
    pub fn tuple_shapes(&self) -> &[Shape] {
        match self {
            Shape::Tuple(t) => t,
            Shape::Array(_) => &[],
        }
    }

    /// The shape at a tuple index path (`{}` is the shape itself).
    pub fn subshape(&self, index: &[i64]) -> Option<&Shape> {
        let mut s = self;
        for &i in index {
            s = s.tuple_shapes().get(usize::try_from(i).ok()?)?;
        }
        Some(s)
    }

    /// Number of elements of an array shape (bounds for bounded dynamic dimensions),
    /// with overflow reported.
    pub fn element_count(&self) -> Result<i64, ShapeError> {
        let a = self
            .as_array()
            .ok_or_else(|| ShapeError::NotArray(self.to_string()))?;
        let mut n: i64 = 1;
        for &d in &a.dims {
            if d == UNBOUNDED_SIZE {
                return Err(ShapeError::Unbounded(self.to_string()));
            }
            n = n
                .checked_mul(d)
                .ok_or_else(|| ShapeError::Overflow(self.to_string()))?;
        }
        Ok(n)
    }

    /// Bytes of an array shape stored unpacked (one byte per sub-byte element);
    /// tuples sum their elements' sizes. `token`/`opaque` count 0.
    pub fn byte_size(&self) -> Result<i64, ShapeError> {
        match self {
            Shape::Tuple(t) => t.iter().try_fold(0i64, |acc, s| {
                acc.checked_add(s.byte_size()?)
                    .ok_or_else(|| ShapeError::Overflow(self.to_string()))
            }),
            Shape::Array(a) => match a.element_type.byte_width() {
                None => Ok(0),
                Some(w) => self
                    .element_count()?
                    .checked_mul(i64::from(w))
                    .ok_or_else(|| ShapeError::Overflow(self.to_string())),
            },
        }
    }

    /// Shapes are compatible when they are equal ignoring layouts (XLA's
    /// `ShapeUtil::Compatible`).
    pub fn compatible(&self, other: &Shape) -> bool {
        match (self, other) {
            (Shape::Array(a), Shape::Array(b)) => {
                a.element_type == b.element_type && a.dims == b.dims && a.dynamic == b.dynamic
            }
            (Shape::Tuple(a), Shape::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.compatible(y))
            }
            _ => false,
        }
    }

    /// Number of array leaves (a tuple's leaves counted recursively; an array is one leaf).
    pub fn leaf_count(&self) -> usize {
        match self {
            Shape::Array(_) => 1,
            Shape::Tuple(t) => t.iter().map(Shape::leaf_count).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_overflow() {
        let s = Shape::array(ElementType::F32, vec![2, 3]);
        assert_eq!(s.element_count(), Ok(6));
        assert_eq!(s.byte_size(), Ok(24));
        let big = Shape::array(ElementType::F32, vec![1 << 40, 1 << 40]);
        assert!(matches!(big.element_count(), Err(ShapeError::Overflow(_))));
        let t = Shape::tuple(vec![s.clone(), Shape::scalar(ElementType::S8)]);
        assert_eq!(t.byte_size(), Ok(25));
        assert!(t.element_count().is_err());
        assert_eq!(t.subshape(&[1]), Some(&Shape::scalar(ElementType::S8)));
        assert_eq!(t.subshape(&[2]), None);
        assert!(s.compatible(&Shape::array_with(
            ElementType::F32,
            vec![2, 3],
            vec![false, false],
            Some(Layout::row_major(2))
        )));
    }
}
