//! The shape types: a [`Shape`] (an array or a tuple), an [`ArrayShape`], its [`Layout`]
//! and the layout's suffixes. Defined together because they are mutually recursive (the
//! physical shape `P(shape)` of a sparse layout is a shape); their methods live in
//! `shape` (shapes) and `layout` (layouts).

use super::element_type::ElementType;

/// The size of a tile dimension printed as `*` (XLA's `Tile::kCombineDimension`).
pub const TILE_COMBINE_DIMENSION: i64 = i64::MIN;

/// One tile of a tiled layout, e.g. `(8,128)`; a dimension equal to
/// [`TILE_COMBINE_DIMENSION`] prints as `*`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Tile {
    /// Tile sizes, most major first.
    pub dims: Vec<i64>,
}

/// One split configuration `SC(dim:i,j,...)` of a layout.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct SplitConfig {
    /// The split dimension.
    pub dimension: i64,
    /// Split indices along that dimension.
    pub split_indices: Vec<i64>,
}

/// The layout suffixes printed after `:` in the order XLA prints them (`D`, `T`, `L`, `#`,
/// `*`, `E`, `S`, `SC`, `P`, `M`). A field at its default value is not printed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LayoutSuffixes {
    /// Sparse dimension level types of `D(...)`, verbatim (`D`, `C`, `S`, `H`, with `+`/`~`).
    pub dim_level_types: Vec<String>,
    /// Tiles of `T(...)(...)`.
    pub tiles: Vec<Tile>,
    /// `L(n)`: tail padding alignment in elements (default 1).
    pub tail_padding_alignment: i64,
    /// `#(type)`: index primitive type of sparse layouts.
    pub index_type: Option<ElementType>,
    /// `*(type)`: pointer primitive type of sparse layouts.
    pub pointer_type: Option<ElementType>,
    /// `E(n)`: element size in bits (0 = the type's natural size).
    pub element_size_bits: i64,
    /// `S(n)`: memory space (0 = default).
    pub memory_space: i64,
    /// `SC(...)`: split configurations.
    pub split_configs: Vec<SplitConfig>,
    /// `P(shape)`: physical shape of sparse layouts.
    pub physical_shape: Option<Box<Shape>>,
    /// `M(n)`: dynamic shape metadata prefix bytes (0 = none).
    pub dynamic_shape_metadata_prefix_bytes: i64,
}

impl Default for LayoutSuffixes {
    fn default() -> Self {
        LayoutSuffixes {
            dim_level_types: Vec::new(),
            tiles: Vec::new(),
            tail_padding_alignment: 1,
            index_type: None,
            pointer_type: None,
            element_size_bits: 0,
            memory_space: 0,
            split_configs: Vec::new(),
            physical_shape: None,
            dynamic_shape_metadata_prefix_bytes: 0,
        }
    }
}

/// The layout of an array shape: a minor-to-major order and optional suffixes.
///
/// `suffixes` is `None` when every suffix has its default value (the common case), so
/// layouts stay small and compare equal however they were built.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Layout {
    /// Dimension numbers from the most minor (fastest varying) to the most major.
    pub minor_to_major: Vec<i64>,
    pub(super) suffixes: Option<Box<LayoutSuffixes>>,
}

/// An array shape: element type, dimension sizes and an optional layout.
///
/// `token[]` and `opaque[]` are rank-0 array shapes of element type
/// [`ElementType::Token`] / [`ElementType::Opaque`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrayShape {
    pub(super) element_type: ElementType,
    pub(super) dims: Vec<i64>,
    /// Empty when every dimension is static; otherwise one flag per dimension.
    pub(super) dynamic: Vec<bool>,
    pub(super) layout: Option<Layout>,
}

/// A shape: an array or a (possibly nested, possibly empty) tuple.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// An array (including scalars, `token[]` and `opaque[]`).
    Array(ArrayShape),
    /// A tuple of shapes.
    Tuple(Vec<Shape>),
}
