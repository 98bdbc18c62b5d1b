//! Array layouts: minor-to-major dimension order plus XLA's layout suffixes
//! (`{1,0:T(8,128)(2,1)E(4)S(1)}`).

use super::{ElementType, Shape};

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
    suffixes: Option<Box<LayoutSuffixes>>,
}

impl Layout {
    /// A plain layout with the given minor-to-major order and no suffixes.
    pub fn new(minor_to_major: Vec<i64>) -> Layout {
        Layout {
            minor_to_major,
            suffixes: None,
        }
    }

    /// A layout with suffixes (normalized: all-default suffixes are dropped).
    pub fn with_suffixes(minor_to_major: Vec<i64>, suffixes: LayoutSuffixes) -> Layout {
        let suffixes = (suffixes != LayoutSuffixes::default()).then(|| Box::new(suffixes));
        Layout {
            minor_to_major,
            suffixes,
        }
    }

    /// The default (row-major) layout of a rank-`rank` array: `{rank-1, ..., 1, 0}`.
    pub fn row_major(rank: usize) -> Layout {
        Layout::new((0..rank as i64).rev().collect())
    }

    /// The suffixes, if any differs from its default.
    pub fn suffixes(&self) -> Option<&LayoutSuffixes> {
        self.suffixes.as_deref()
    }

    /// Replaces the suffixes (normalized as in [`Layout::with_suffixes`]).
    pub fn set_suffixes(&mut self, suffixes: LayoutSuffixes) {
        self.suffixes = (suffixes != LayoutSuffixes::default()).then(|| Box::new(suffixes));
    }

    /// Tiles (`T(...)`); empty when untiled.
    pub fn tiles(&self) -> &[Tile] {
        self.suffixes().map_or(&[], |s| &s.tiles)
    }

    /// Element size in bits (`E(n)`); 0 means the element type's natural size.
    pub fn element_size_bits(&self) -> i64 {
        self.suffixes().map_or(0, |s| s.element_size_bits)
    }

    /// Memory space (`S(n)`); 0 is the default space.
    pub fn memory_space(&self) -> i64 {
        self.suffixes().map_or(0, |s| s.memory_space)
    }

    /// True when the layout has no suffix (only a minor-to-major order).
    pub fn is_plain(&self) -> bool {
        self.suffixes.is_none()
    }

    /// True when `minor_to_major` is `{rank-1, ..., 0}`.
    pub fn is_row_major(&self) -> bool {
        let n = self.minor_to_major.len() as i64;
        self.minor_to_major
            .iter()
            .enumerate()
            .all(|(i, &d)| d == n - 1 - i as i64)
    }

    /// True when `minor_to_major` is a permutation of `0..rank`.
    pub fn is_permutation_of(&self, rank: usize) -> bool {
        if self.minor_to_major.len() != rank {
            return false;
        }
        if rank <= 64 {
            let mut seen = 0u64;
            for &d in &self.minor_to_major {
                match u32::try_from(d) {
                    Ok(d) if (d as usize) < rank && seen & (1 << d) == 0 => seen |= 1 << d,
                    _ => return false,
                }
            }
            return true;
        }
        let mut seen = vec![false; rank];
        for &d in &self.minor_to_major {
            match usize::try_from(d).ok().and_then(|d| seen.get_mut(d)) {
                Some(s) if !*s => *s = true,
                _ => return false,
            }
        }
        true
    }
}
