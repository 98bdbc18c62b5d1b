//! Tile propagation through reshapes to their outputs, by enumeration: for reshapes between
//! every pair of factorizations of a few element counts, every tile-size vector of the
//! operand (unit strides) and strided tiles of concrete sizes, the output tile (where there
//! is one) holds exactly the elements the reshape sends the operand tile's elements to.

use tiling::propagate::{to_outputs, DimTile, TilingSpace};

use crate::support::propagation::check_propagation;

/// Points the oracle may evaluate per tile.
const BUDGET: usize = 200_000;

/// The shapes of `n` elements of rank at most 3 (unit dimensions included at rank 3).
fn shapes(n: i64) -> Vec<Vec<i64>> {
    let mut out = vec![vec![n]];
    for a in 1..=n {
        if n % a != 0 {
            continue;
        }
        out.push(vec![a, n / a]);
        for b in 1..=n / a {
            if (n / a) % b == 0 {
                out.push(vec![a, b, n / a / b]);
            }
        }
    }
    out
}

fn module(from: &[i64], to: &[i64]) -> hlo::Module {
    let dims = |d: &[i64]| {
        d.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    hlo::parse_module(&format!(
        "HloModule m\nENTRY e {{\n  p0 = f32[{}] parameter(0)\n  ROOT r = f32[{}] reshape(p0)\n}}",
        dims(from),
        dims(to)
    ))
    .expect("module parses")
}

/// Every tile-size vector of a shape.
fn size_vectors(shape: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new()];
    for &e in shape {
        out = out
            .into_iter()
            .flat_map(|v| {
                (1..=e).map(move |s| {
                    let mut v = v.clone();
                    v.push(s);
                    v
                })
            })
            .collect();
    }
    out
}

/// Propagates `tile` (over a space of the operand's extents with `sizes`) to the output of
/// `from -> to` and checks the result by enumeration; whether there was a tile.
fn check(from: &[i64], to: &[i64], sizes: &[i64], dims: Option<Vec<DimTile>>) -> bool {
    let m = module(from, to);
    let r = m.instr("r").expect("root");
    let mut space = TilingSpace::parallel(from);
    space.set_tile_sizes(sizes).expect("sizes");
    let tile = match dims {
        Some(d) => space.tile(d),
        None => space.root_tile(),
    };
    let tiles = to_outputs(&mut space, &r, 0, &tile).expect("propagates");
    let maps = indexing::input_to_output(&r, 0).expect("indexing");
    let mut map = maps[0].maps().next().expect("one map").clone();
    map.normalize().expect("normalize");
    match &tiles[0] {
        Ok(t) => {
            if let Err(e) = check_propagation(&space, &tile, &map, t, BUDGET) {
                panic!("{from:?} -> {to:?}, {tile}\n{t}\nnot exact: {e}");
            }
            true
        }
        Err(_) => false,
    }
}

#[test]
fn reshapes_to_the_output_are_exact() {
    let (mut tiled, mut total) = (0usize, 0usize);
    for n in [6, 8, 12] {
        let all = shapes(n);
        for from in &all {
            for to in &all {
                for sizes in size_vectors(from) {
                    total += 1;
                    tiled += usize::from(check(from, to, &sizes, None));
                }
            }
        }
    }
    // Collapses of whole rows and expansions of aligned tiles have tiles.
    assert!(tiled * 4 > total, "{tiled} of {total} reshapes tiled");
}

#[test]
fn strided_tiles_through_reshapes_are_exact() {
    let mut tiled = 0usize;
    for n in [12, 24] {
        let all = shapes(n);
        for from in all.iter().filter(|s| s.len() <= 2) {
            for to in &all {
                for sizes in size_vectors(from) {
                    for stride in 2..=3 {
                        // Stride `stride` along the last dimension, offsets tid * size * stride.
                        let dims: Vec<DimTile> = from
                            .iter()
                            .enumerate()
                            .map(|(i, &e)| {
                                let last = i + 1 == from.len();
                                let st = if last { stride } else { 1 };
                                DimTile {
                                    offset: affine::Expr::dim(i as u32) * (sizes[i] * st),
                                    size: affine::Expr::constant(sizes[i]),
                                    stride: affine::Expr::constant(st),
                                    upper_bound: affine::Expr::constant(e),
                                }
                            })
                            .collect();
                        tiled += usize::from(check(from, to, &sizes, Some(dims)));
                    }
                }
            }
        }
    }
    assert!(tiled > 0);
}

#[test]
fn reshapes_to_the_operand_are_exact() {
    use tiling::propagate::to_operands;
    let (mut tiled, mut total) = (0usize, 0usize);
    for n in [6, 8, 12] {
        let all = shapes(n);
        for from in &all {
            for to in &all {
                let m = module(from, to);
                let r = m.instr("r").expect("root");
                for sizes in size_vectors(to) {
                    total += 1;
                    let mut space = TilingSpace::parallel(to);
                    space.set_tile_sizes(&sizes).expect("sizes");
                    let tile = space.root_tile();
                    let tiles = to_operands(&mut space, &r, 0, &tile).expect("propagates");
                    let maps = tiling::output_to_input(&r).expect("indexing");
                    let mut map = maps[0].operands[0].maps().next().expect("a map").clone();
                    map.normalize().expect("normalize");
                    if let Ok(t) = &tiles[0] {
                        if let Err(e) = check_propagation(&space, &tile, &map, t, BUDGET) {
                            panic!("{from:?} -> {to:?}, {tile}\n{t}\nnot exact: {e}");
                        }
                        tiled += 1;
                    }
                }
            }
        }
    }
    assert!(tiled * 4 > total, "{tiled} of {total} reshapes tiled");
}
