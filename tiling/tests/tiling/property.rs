//! Property tests: on random small maps and random small fusions, every symbolic tile is
//! exact by brute-force enumeration (see `support::oracle`) for every tile-size vector that
//! satisfies its constraints, and its text form parses back.

use crate::support::fusions::random_fusion;
use crate::support::oracle::check_exact;
use affine::gen::Rng;
use affine::{Expr, IndexingMap, Interval};
use tiling::SymbolicTile;

const BUDGET: usize = 100_000;

/// A random atom over the map's variables, of the kinds reshapes, slices, reductions and
/// dynamic offsets produce, and some that have no exact tile.
fn atom(rng: &mut Rng, dims: usize, ranges: usize, runtimes: usize) -> Expr {
    let d = Expr::dim(rng.below(dims as u64) as u32);
    let c = |rng: &mut Rng| Expr::constant(rng.range_i64(2, 4));
    match rng.below(9) {
        0 | 1 => d,
        2 => d.floor_div(c(rng)),
        3 => d.modulo(c(rng)),
        4 => d.floor_div(c(rng)).modulo(c(rng)),
        5 if ranges > 0 => Expr::range(rng.below(ranges as u64) as u32),
        6 if runtimes > 0 => Expr::runtime(rng.below(runtimes as u64) as u32),
        7 => d * Expr::dim(rng.below(dims as u64) as u32),
        _ => d,
    }
}

fn random_map(rng: &mut Rng) -> IndexingMap {
    let dims = rng.range_i64(1, 3) as usize;
    let ranges = rng.range_i64(0, 1) as usize;
    let runtimes = rng.range_i64(0, 1) as usize;
    let results = rng.range_i64(0, 3) as usize;
    // Some domains start above 0, as a concatenate's or a pad's operand maps do.
    let dim_bounds = (0..dims)
        .map(|_| {
            let hi = rng.range_i64(0, 7);
            let lo = if rng.chance(1, 5) {
                rng.range_i64(0, hi)
            } else {
                0
            };
            Interval::new(lo, hi)
        })
        .collect();
    let range_bounds = (0..ranges)
        .map(|_| {
            let lo = rng.range_i64(0, 2);
            Interval::new(lo, lo + rng.range_i64(0, 3))
        })
        .collect();
    let rt_bounds = (0..runtimes).map(|_| Interval::new(0, 5)).collect();
    let exprs = (0..results)
        .map(|_| {
            let terms = rng.range_i64(1, 3);
            let mut e = Expr::constant(rng.range_i64(-2, 3));
            for _ in 0..terms {
                let k = *[1, 1, 1, 2, -1, 3, 4, 8]
                    .get(rng.below(8) as usize)
                    .unwrap_or(&1);
                e = e + atom(rng, dims, ranges, runtimes) * k;
            }
            e
        })
        .collect();
    IndexingMap::new(dim_bounds, range_bounds, rt_bounds, exprs, vec![]).expect("valid map")
}

#[test]
fn random_maps_have_exact_tiles() {
    let (mut tiles, mut none, mut checked) = (0, 0, 0);
    for seed in 0..1500u64 {
        let mut rng = Rng::new(seed);
        let map = random_map(&mut rng);
        let Ok(tile) = SymbolicTile::derive(&map) else {
            none += 1;
            continue;
        };
        tiles += 1;
        let text = tile.to_string();
        let back: SymbolicTile = text
            .parse()
            .unwrap_or_else(|e| panic!("seed {seed}: {text}\n{e}"));
        assert_eq!(back.to_string(), text, "seed {seed}");
        match check_exact(&map, &tile, BUDGET) {
            Ok(c) => checked += c.checked,
            Err(e) => panic!("seed {seed}: {map}\n{text}\nnot exact: {e}"),
        }
    }
    eprintln!("{tiles} tiles, {none} maps without, {checked} tile-size vectors checked");
    // The generator must exercise both outcomes.
    assert!(tiles > 400, "only {tiles} tiles ({none} without)");
    assert!(none > 100, "only {none} maps without a tile");
    assert!(checked > 5000, "only {checked} tile-size vectors checked");
}

#[test]
fn random_fusions_have_exact_tiles() {
    let (mut analysed, mut not_tileable) = (0, 0);
    for seed in 0..300u64 {
        let mut rng = Rng::new(seed);
        let text = random_fusion(&mut rng, false);
        let module =
            hlo::parse_module(&text).unwrap_or_else(|e| panic!("seed {seed}:\n{text}\n{e}"));
        let f = module.instr("f").expect("fusion");
        let analysis = match tiling::analyze(&f) {
            Ok(a) => a,
            Err(tiling::TilingError::NotTileable(_)) => {
                not_tileable += 1;
                continue;
            }
            Err(e) => panic!("seed {seed}:\n{text}\n{e}"),
        };
        analysed += 1;
        for ti in analysis.instructions() {
            if let Err(e) = check_exact(&ti.map.map, &ti.tile, BUDGET) {
                panic!(
                    "seed {seed}:\n{text}\n{}: {}\n{}\nnot exact: {e}",
                    ti.name, ti.map.map, ti.tile
                );
            }
        }
        // Random admitted tile sizes: the tiled computation has prod(ceil(D_i / t_i))
        // programs, and program p's tile of every instruction starts where its map sends
        // the origin of root tile p (row-major over the tile grid).
        let dims = analysis.root_dims().to_vec();
        for _ in 0..4 {
            let sizes: Vec<i64> = dims.iter().map(|&d| rng.range_i64(1, d.max(1))).collect();
            if !analysis.constraints().holds(&sizes).expect("constraints") {
                continue;
            }
            let t = analysis.tiled(&sizes).expect("tiled");
            let counts: Vec<i64> = dims
                .iter()
                .zip(&sizes)
                .map(|(d, s)| (d + s - 1) / s)
                .collect();
            assert_eq!(
                t.num_programs(),
                counts.iter().product::<i64>(),
                "seed {seed}"
            );
            check_programs(&analysis, &t, &sizes, &counts, seed);
        }
    }
    eprintln!("{analysed} fusions analysed, {not_tileable} not tileable");
    assert!(
        analysed > 150,
        "only {analysed} fusions analysed ({not_tileable} not tileable)"
    );
}

/// Checks every program's tile offsets and sizes against the maps of the analysis.
fn check_programs(
    analysis: &tiling::SymbolicTileAnalysis,
    tiled: &tiling::TiledComputation,
    sizes: &[i64],
    counts: &[i64],
    seed: u64,
) {
    for pid in 0..tiled.num_programs() {
        // Row-major unravelling of the program id over the tile grid.
        let mut rest = pid;
        let mut origin = vec![0; counts.len()];
        for i in (0..counts.len()).rev() {
            origin[i] = (rest % counts[i]) * sizes[i];
            rest /= counts[i];
        }
        for ti in analysis.instructions() {
            let m = &ti.map.map;
            let lows: Vec<i64> = m.ranges().iter().map(|b| b.lo).collect();
            let rt: Vec<i64> = m.runtimes().iter().map(|b| b.lo).collect();
            let want = m
                .evaluate(&affine::Point {
                    dims: &origin,
                    ranges: &lows,
                    runtimes: &rt,
                })
                .expect("evaluate");
            let concrete = ti.tile.evaluate(sizes, &rt).expect("tile");
            let found = tiled.instructions.iter().any(|c| {
                c.name == ti.name
                    && c.tile_sizes == concrete.sizes
                    && c.tile_offsets
                        .evaluate(&affine::Point {
                            dims: &[pid],
                            ranges: &[],
                            runtimes: &rt,
                        })
                        .ok()
                        == Some(want.clone())
            });
            assert!(
                found,
                "seed {seed}: program {pid}: no tile of `{}` at {want:?}\n{tiled}",
                ti.name
            );
        }
    }
}
