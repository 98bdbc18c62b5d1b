//! The elements a propagated tile covers, listed: the oracle side of the tests that check
//! tiles against the evaluator.

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
