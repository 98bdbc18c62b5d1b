//! Every fusion of the corpus's optimized programs: the analysis answers (a tiled
//! computation or `not tileable`) without failing, tile sizes of 1 always satisfy the
//! constraints, and every tile is exact by enumeration where the root is small.

use crate::support::oracle::check_exact;
use tiling::TilingError;

/// Points the oracle may evaluate per tile.
const BUDGET: usize = 20_000;

#[test]
fn corpus_fusions_are_analysed() {
    let (mut tileable, mut not_tileable, mut checked) = (0, 0, 0);
    crate::support::corpus::for_each_fusion(|handle, where_| {
        let analysis = match tiling::analyze(handle) {
            Ok(a) => a,
            Err(TilingError::NotTileable(reason)) => {
                eprintln!("{where_}: not tileable: {reason}");
                not_tileable += 1;
                return;
            }
            Err(e) => panic!("{where_}: {e}"),
        };
        tileable += 1;
        let ones = vec![1; analysis.root_dims().len()];
        let tiled = analysis
            .tiled(&ones)
            .unwrap_or_else(|e| panic!("{where_}: sizes of 1: {e}"));
        let points: i64 = analysis.root_dims().iter().product();
        assert_eq!(tiled.num_programs(), points, "{where_}");
        if points > 64 {
            return;
        }
        for ti in analysis.instructions() {
            if let Err(e) = check_exact(&ti.map.map, &ti.tile, BUDGET) {
                panic!(
                    "{where_}: {}: {}\n{}\nnot exact: {e}",
                    ti.name, ti.map.map, ti.tile
                );
            }
            checked += 1;
        }
    });
    eprintln!("{tileable} fusions tiled, {not_tileable} not tileable, {checked} tiles checked");
    assert!(tileable > 0);
}
