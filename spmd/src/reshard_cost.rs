//! The bytes per device a reshard moves, counted as `Emit::reshard` does it and as
//! `collective_stats` counts collectives: one all-to-all of the local tile where a split
//! only moves between two dimensions, else an all-gather (counted by its result) along
//! each dimension the target does not refine; the dynamic-slices after them move nothing.
//! A rule that may reshard either of two operands (a dot whose operands split
//! differently) compares these to choose the cheaper one.

use hlo::Shape;

use crate::emit::{local_shape, with_dims};
use crate::emit_all_to_all::moved_split;
use crate::tiling::Tiling;

/// The bytes one device's collectives move to reshard a value of `global` shape from
/// `from` to `to`; `None` where the shapes or tilings do not fit together.
pub(crate) fn reshard_bytes(global: &Shape, from: &Tiling, to: &Tiling) -> Option<u64> {
    if from == to {
        return Some(0);
    }
    let bytes = |s: &Shape| s.byte_size().ok().map(|b| b.max(0) as u64);
    let dims = global.as_array()?.dims().to_vec();
    if moved_split(from, to, &dims).is_some() {
        return bytes(&local_shape(global, from, "reshard").ok()?);
    }
    let mut cur = from.clone();
    let mut total = 0;
    for d in 0..dims.len() {
        if cur.refines(to, d, dims[d]) {
            continue;
        }
        let mut gathered = local_shape(global, &cur, "reshard").ok()?.dims().to_vec();
        gathered[d] *= cur.tiles[d];
        cur = cur.gathered(&[d]);
        total += bytes(&with_dims(global, gathered))?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_an_all_gather_by_its_result_and_a_moved_split_by_the_tile() {
        let global = Shape::array(hlo::shape::ElementType::F32, vec![8, 16]);
        let rows = Tiling {
            tiles: vec![4, 1],
            of_device: (0..4).map(|d| vec![d, 0]).collect(),
        };
        let cols = Tiling {
            tiles: vec![1, 4],
            of_device: (0..4).map(|d| vec![0, d]).collect(),
        };
        let whole = Tiling::replicated(2, 4);
        assert_eq!(reshard_bytes(&global, &rows, &rows), Some(0));
        // Gathered whole: every device ends with all 8x16 floats.
        assert_eq!(reshard_bytes(&global, &rows, &whole), Some(8 * 16 * 4));
        // Rows to columns: one all-to-all of a 2x16 tile.
        assert_eq!(reshard_bytes(&global, &rows, &cols), Some(2 * 16 * 4));
        // Whole to rows: a dynamic-slice only.
        assert_eq!(reshard_bytes(&global, &whole, &rows), Some(0));
    }
}
