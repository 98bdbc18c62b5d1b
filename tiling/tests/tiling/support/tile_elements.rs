//! The elements a propagated tile covers, listed: the oracle side of the tests that check
//! tiles against the evaluator.

use std::collections::BTreeSet;

use affine::enumerate::for_each_in_box;
use affine::Interval;
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use tiling::propagate::Tile;

/// Every index of `tile` at tile ids `tids`, tile sizes `sizes` and runtime values `rt`
/// (the product of its per-dimension values, in order; repeats kept).
pub fn tile_elements(tile: &Tile, tids: &[i64], sizes: &[i64], rt: &[i64]) -> Vec<Vec<i64>> {
    let v = tile
        .dim_values(
            &tids[..tile.num_tids],
            &sizes[..tile.num_tids],
            &rt[..tile.num_rt],
        )
        .expect("the tile evaluates");
    let mut out = vec![Vec::new()];
    for vals in &v {
        out = out
            .iter()
            .flat_map(|p| {
                vals.iter().map(move |&x| {
                    let mut q = p.clone();
                    q.push(x);
                    q
                })
            })
            .collect();
    }
    out
}

/// The elements of `tile` at these tile ids, sizes and runtime values, as a set (fails on
/// a repeat: a tile must not hold an element twice).
pub fn distinct_elements(
    tile: &Tile,
    tids: &[i64],
    sizes: &[i64],
    rt: &[i64],
) -> BTreeSet<Vec<i64>> {
    let out = tile_elements(tile, tids, sizes, rt);
    let n = out.len();
    let set: BTreeSet<Vec<i64>> = out.into_iter().collect();
    assert_eq!(
        set.len(),
        n,
        "a tile holds an element twice at {tids:?}: {tile}"
    );
    set
}

/// Calls `f(sizes, tids)` for every tile-size vector of `extents` and every tile id;
/// returns how many calls it made.
pub fn for_each_tiling(extents: &[i64], mut f: impl FnMut(&[i64], &[i64])) -> usize {
    let size_box: Vec<Interval> = extents.iter().map(|&e| Interval::new(1, e)).collect();
    let mut n = 0;
    for_each_in_box(&size_box, |sizes| {
        let grid: Vec<Interval> = extents
            .iter()
            .zip(sizes)
            .map(|(&e, &s)| Interval::new(0, (e - 1) / s))
            .collect();
        for_each_in_box(&grid, |tids| {
            f(sizes, tids);
            n += 1;
            true
        });
        true
    });
    n
}

/// The index of row-major position `i` in an array of dimensions `d`.
pub fn unlinear(mut i: i64, d: &[i64]) -> Vec<i64> {
    let mut out = vec![0; d.len()];
    for (slot, &n) in out.iter_mut().zip(d).rev() {
        *slot = i % n;
        i /= n;
    }
    out
}

/// An `s32` array literal of dimensions `d` holding `values` row-major.
pub fn s32(d: &[i64], values: Vec<i32>) -> Literal {
    let shape = hlo::Shape::array(hlo::ElementType::S32, d.to_vec());
    Literal::Array(ArrayLiteral::new(shape, ArrayData::S32(values)).expect("an s32 literal"))
}
