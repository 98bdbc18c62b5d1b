//! The transpose emitter's launch: a kernel whose hero moves data across physical
//! dimensions (a `transpose`, or a `copy` that changes the layout) reads its operand along
//! the operand's minor-most dimension and writes the output along the output's, which are
//! different dimensions. A block owns a [`TILE`] × [`TILE`] tile of those two dimensions:
//! its threads read the tile with consecutive lanes on consecutive input addresses into
//! shared memory, and after a barrier write it with consecutive lanes on consecutive
//! output addresses, so both sides are coalesced (a loop kernel would stride one of them).
//!
//! In output coordinates, `x` is the output's minor-most physical dimension and `y` the
//! output dimension the operand's minor-most dimension becomes. With `X` tiles along `x`
//! and `Y` along `y`, block `bl_x` owns tile `(bl_x floordiv X) mod Y, bl_x mod X` of the
//! other dimensions' element `bl_x floordiv (X * Y)`; a thread covers [`TILE_ROWS`]-apart
//! rows of the tile at `unroll_id = 0..3`:
//! - the write map (the launch's thread map): `x = tile_x * 32 + th_x mod 32`,
//!   `y = tile_y * 32 + th_x floordiv 32 + unroll_id * 8`;
//! - the read map: `y = tile_y * 32 + th_x mod 32`, `x = tile_x * 32 + th_x floordiv 32 +
//!   unroll_id * 8`.

use affine::{Expr, IndexingMap, Interval, Var};
use hlo::{InstrId, Opcode};

use crate::gpu_hero::hero_under_epilogue;
use crate::gpu_launch::{
    coords, delinearize, physical_order, thread_map, GpuEmitter, Launch, WARP,
};

/// The tile's side: a warp's lanes read or write one of its rows.
pub const TILE: i64 = WARP;

/// Rows of the tile the block's threads cover at once (256 threads; each thread covers
/// `TILE / TILE_ROWS` rows).
pub const TILE_ROWS: i64 = 8;

/// Both tiled dimensions must have at least this many elements: a thinner transpose
/// wastes most of a tile, and the loop emitter serves it as well.
pub const MIN_TILED_EXTENT: i64 = 16;

/// A transpose launch: the launch (with the write map as its thread map) and the read map.
#[derive(Clone, Debug, PartialEq)]
pub struct TransposeLaunch {
    /// Grid, block and the write map: output index each (thread, unroll step) writes.
    pub launch: Launch,
    /// Output index whose hero value each (thread, unroll step) reads into the tile.
    pub read_map: IndexingMap,
}

/// The transpose launch for an output of logical `dims` laid out by `minor_to_major`
/// (empty: row-major), whose dimension `y` reads the operand's minor-most physical
/// dimension; `None` when `y` is the output's own minor-most physical dimension (nothing
/// to transpose) or either tiled dimension is under [`MIN_TILED_EXTENT`].
pub fn transpose_launch(
    dims: &[i64],
    minor_to_major: &[i64],
    y: usize,
) -> Result<Option<TransposeLaunch>, affine::MapError> {
    let rank = dims.len();
    let order = physical_order(rank, minor_to_major);
    let x = order[0];
    if x == y || y >= rank || dims[x] < MIN_TILED_EXTENT || dims[y] < MIN_TILED_EXTENT {
        return Ok(None);
    }
    let others: Vec<usize> = order[1..].iter().copied().filter(|&d| d != y).collect();
    let (nx, ny) = (dims[x], dims[y]);
    let (tiles_x, tiles_y) = ((nx + TILE - 1) / TILE, (ny + TILE - 1) / TILE);
    let outer: i64 = others.iter().map(|&d| dims[d]).product();
    let blocks = outer * tiles_x * tiles_y;
    let threads = TILE * TILE_ROWS;
    let unroll = TILE / TILE_ROWS;
    let th = Expr::var(Var::dim(coords::TH_X));
    let bl = Expr::var(Var::dim(coords::BL_X));
    let step = Expr::var(Var::range(coords::UNROLL));
    let tile_x = bl.modulo(Expr::constant(tiles_x)) * Expr::constant(TILE);
    let tile_y = bl
        .floor_div(Expr::constant(tiles_x))
        .modulo(Expr::constant(tiles_y))
        * Expr::constant(TILE);
    let lane = th.modulo(Expr::constant(TILE));
    let row = th.floor_div(Expr::constant(TILE)) + step * Expr::constant(TILE_ROWS);
    let outer_index = bl.floor_div(Expr::constant(tiles_x * tiles_y));
    let sub_dims: Vec<i64> = others.iter().map(|&d| dims[d]).collect();
    let sub_m2m: Vec<i64> = (0..others.len() as i64).collect();
    let outer_results = delinearize(outer_index, &sub_dims, &sub_m2m);
    let map = |xe: Expr, ye: Expr| -> Result<IndexingMap, affine::MapError> {
        let mut results = vec![Expr::constant(0); rank];
        results[x] = xe;
        results[y] = ye;
        for (p, &e) in outer_results.iter().enumerate() {
            results[others[p]] = e;
        }
        let mut constraints = Vec::new();
        if tiles_x * TILE > nx {
            constraints.push((xe, Interval::new(0, nx - 1)));
        }
        if tiles_y * TILE > ny {
            constraints.push((ye, Interval::new(0, ny - 1)));
        }
        thread_map((blocks, threads), (1, unroll), results, constraints)
    };
    let write = map(tile_x + lane, tile_y + row)?;
    let read = map(tile_x + row, tile_y + lane)?;
    Ok(Some(TransposeLaunch {
        launch: Launch {
            emitter: GpuEmitter::Transpose,
            blocks,
            threads,
            unroll,
            thread_map: write,
        },
        read_map: read,
    }))
}

/// The transpose emitter's choice for the kernel rooted at `root` of `comp` (`fused`:
/// `comp` is a fusion's computation) whose output is laid out by `out_minor_to_major`:
/// its hero (a `transpose`, or a `copy` between layouts, the root itself or read by an
/// elementwise epilogue at the output index) and the launch, when the hero's operand's
/// minor-most physical dimension is not the output's. The code generator and `hloc
/// indexing --coalescing` both ask this.
pub fn transpose_of(
    comp: &hlo::Computation,
    root: InstrId,
    fused: bool,
    out_minor_to_major: &[i64],
) -> Option<(InstrId, TransposeLaunch)> {
    let is_hero = |i: &hlo::Instruction| matches!(i.opcode(), Opcode::Transpose | Opcode::Copy);
    let hero = if fused {
        hero_under_epilogue(comp, root, is_hero)?
    } else {
        root
    };
    let instr = comp.instr(hero);
    if !is_hero(instr) || instr.operands().len() != 1 {
        return None;
    }
    let out = instr.shape().as_array()?;
    let operand = comp.instr(instr.operands()[0]).shape().as_array()?;
    if operand.dims().is_empty() || out.dims().len() != operand.dims().len() {
        return None;
    }
    let operand_minor = match operand.layout() {
        Some(l) if !l.minor_to_major.is_empty() => l.minor_to_major[0],
        _ => operand.dims().len() as i64 - 1,
    };
    let y = match instr.opcode() {
        Opcode::Transpose => instr
            .dimensions()?
            .iter()
            .position(|&d| d == operand_minor)?,
        _ => operand_minor as usize,
    };
    let launch = transpose_launch(out.dims(), out_minor_to_major, y).ok()??;
    Some((hero, launch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_2d_transpose_tiles_both_dimensions() {
        // f32[100,64]{0,1}: x = 0 (physical minor), y = 1.
        let t = transpose_launch(&[100, 64], &[0, 1], 1).unwrap().unwrap();
        assert_eq!(
            (t.launch.blocks, t.launch.threads, t.launch.unroll),
            (8, 256, 4)
        );
        assert!(transpose_launch(&[100, 64], &[0, 1], 0).unwrap().is_none());
        assert!(transpose_launch(&[100, 8], &[0, 1], 1).unwrap().is_none());
    }

    /// Both maps cover every output element exactly once; at every unroll step the lanes
    /// of a warp write consecutive output addresses (write map) and read consecutive
    /// positions along `y` (read map); a thread's read and write elements lie in its
    /// block's tile (by enumeration).
    #[test]
    fn both_maps_cover_every_element_once_and_walk_their_minor_dimensions() {
        use crate::gpu_launch::for_each_thread_point;
        let cases: [(&[i64], &[i64], usize); 4] = [
            (&[100, 64], &[0, 1], 1),
            (&[3, 40, 50], &[1, 2, 0], 2),
            (&[17, 2, 33], &[2, 1, 0], 0),
            (&[20, 5, 18], &[0, 2, 1], 2),
        ];
        for (dims, m2m, y) in cases {
            let t = transpose_launch(dims, m2m, y).unwrap().unwrap();
            let x = m2m[0] as usize;
            let n: i64 = dims.iter().product();
            for (m, walked) in [(&t.launch.thread_map, x), (&t.read_map, y)] {
                let mut seen = vec![0u32; n as usize];
                let mut lanes: std::collections::HashMap<(i64, i64, i64), Vec<i64>> =
                    Default::default();
                for_each_thread_point(m, |flat, idx| {
                    let row_major = idx.iter().zip(dims).fold(0, |acc, (i, d)| acc * d + i);
                    seen[row_major as usize] += 1;
                    lanes
                        .entry((flat[3], flat[0] / WARP, flat[7]))
                        .or_default()
                        .push(idx[walked]);
                });
                assert!(seen.iter().all(|&c| c == 1), "{dims:?} {m2m:?} {y}");
                for walk in lanes.values() {
                    let ok = walk.windows(2).all(|w| w[1] == w[0] + 1);
                    assert!(ok, "{dims:?} {m2m:?} {y}: {walk:?}");
                }
            }
        }
    }
}
