//! Array layouts: minor-to-major dimension order plus XLA's layout suffixes
//! (`{1,0:T(8,128)(2,1)E(4)S(1)}`); the methods of [`Layout`] (defined in `types`).

use super::types::{Layout, LayoutSuffixes, Tile};

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
