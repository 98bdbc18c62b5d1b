//! The column-reduction emitter's launch: a reduction over dimensions that are not the
//! input's minor-most physical ones (a batch norm's per-channel sums over an NHWC batch, a
//! bias gradient) keeps the minor dimensions' elements, the columns, consecutive across a
//! warp's lanes, so every load of a warp is consecutive addresses. A block owns a tile of
//! `columns` consecutive columns; its threads stand in `parts` rows of the tile, and each
//! thread folds the rows `part, part + parts, ..` of its column. The partials then go
//! through a shared tile, transposed, so that the `parts` partials of one column sit in
//! consecutive lanes and combine by warp shuffles.
//!
//! The thread map goes to the reduction's input: with `K` column tiles per block row,
//! `(th_x, ..)[chunk_id, unroll_id] -> (kept-major index bl_x floordiv K, reduced index
//! chunk_id * parts + th_x floordiv columns, column (bl_x mod K) * columns + th_x mod
//! columns)`, each delinearized in physical order.

use affine::{Expr, Interval, Var};
use device::Device;

use crate::gpu_launch::{
    coords, physical_order, place_groups, thread_map, GpuEmitter, Launch, WARP,
};

/// Most warps a column-reduction block has (8: 256 threads, a tile of 32 columns by 8
/// rows, whose transposed partials combine within groups of 8 lanes).
pub const COLUMN_BLOCK_WARPS: i64 = 8;

/// The column-reduction launch for a reduction of an input of logical `dims` laid out by
/// `minor_to_major` (empty: row-major) over dimensions `reduced`; `None` unless the
/// reduced dimensions are consecutive in physical order with kept dimensions of more than
/// one element minor to them, and there are at least 2 rows to reduce.
pub fn column_reduction_launch(
    dims: &[i64],
    minor_to_major: &[i64],
    reduced: &[i64],
    device: &Device,
) -> Result<Option<Launch>, affine::MapError> {
    let _ = device;
    let rank = dims.len();
    let order = physical_order(rank, minor_to_major);
    let is_reduced = |d: usize| reduced.contains(&(d as i64));
    let minor_kept = order.iter().take_while(|&&d| !is_reduced(d)).count();
    let reduced_run = order[minor_kept..]
        .iter()
        .take_while(|&&d| is_reduced(d))
        .count();
    if reduced.is_empty() || minor_kept == 0 || reduced_run != reduced.len() {
        return Ok(None);
    }
    let minor = &order[..minor_kept];
    let middle = &order[minor_kept..minor_kept + reduced_run];
    let major = &order[minor_kept + reduced_run..];
    let extent = |ds: &[usize]| ds.iter().map(|&d| dims[d]).product::<i64>();
    let (cols, rows, outer) = (extent(minor), extent(middle), extent(major));
    if cols < 2 || rows < 2 {
        return Ok(None);
    }
    let columns = (cols as u64).next_power_of_two().min(WARP as u64) as i64;
    // Enough warps that the tile's rows cover the reduced rows once, at most 8.
    let warps = (((rows * columns + WARP - 1) / WARP).max(1) as u64)
        .next_power_of_two()
        .min(COLUMN_BLOCK_WARPS as u64) as i64;
    let threads = warps * WARP;
    let parts = threads / columns;
    let tiles_per_row = (cols + columns - 1) / columns;
    let blocks = outer * tiles_per_row;
    let chunks = (rows + parts - 1) / parts;
    let th = Expr::var(Var::dim(coords::TH_X));
    let bl = Expr::var(Var::dim(coords::BL_X));
    let column = bl.modulo(Expr::constant(tiles_per_row)) * Expr::constant(columns)
        + th.modulo(Expr::constant(columns));
    let row = Expr::var(Var::range(coords::CHUNK)) * Expr::constant(parts)
        + th.floor_div(Expr::constant(columns));
    let outer_index = bl.floor_div(Expr::constant(tiles_per_row));
    let results = place_groups(
        dims,
        &[(major, outer_index), (middle, row), (minor, column)],
    );
    let mut constraints = Vec::new();
    if tiles_per_row * columns > cols {
        constraints.push((column, Interval::new(0, cols - 1)));
    }
    if chunks * parts > rows {
        constraints.push((row, Interval::new(0, rows - 1)));
    }
    let thread_map = thread_map((blocks, threads), (chunks, 1), results, constraints)?;
    Ok(Some(Launch {
        emitter: GpuEmitter::ColumnReduction { columns, parts },
        blocks,
        threads,
        unroll: 1,
        thread_map,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> Device {
        device::load("h100").unwrap()
    }

    fn launch(dims: &[i64], m2m: &[i64], reduced: &[i64]) -> Option<Launch> {
        column_reduction_launch(dims, m2m, reduced, &h100()).unwrap()
    }

    #[test]
    fn a_tile_of_32_columns_by_8_rows_per_block() {
        let l = launch(&[4096, 1000], &[1, 0], &[0]).unwrap();
        assert_eq!(
            l.emitter,
            GpuEmitter::ColumnReduction {
                columns: 32,
                parts: 8
            }
        );
        assert_eq!((l.blocks, l.threads), (32, 256));
        assert_eq!(
            l.thread_map_text(),
            "(th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id, unroll_id] -> \
             (chunk_id * 8 + th_x floordiv 32, bl_x * 32 + th_x mod 32), domain: \
             th_x in [0, 255], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 31], \
             bl_y in [0, 0], bl_z in [0, 0], chunk_id in [0, 511], unroll_id in [0, 0], \
             bl_x * 32 + th_x mod 32 in [0, 999]"
        );
    }

    #[test]
    fn narrow_columns_stack_rows_in_a_warp() {
        let l = launch(&[1000, 4], &[1, 0], &[0]).unwrap();
        assert_eq!(
            l.emitter,
            GpuEmitter::ColumnReduction {
                columns: 4,
                parts: 64
            }
        );
        assert_eq!((l.blocks, l.threads), (1, 256));
        // Few rows take fewer warps.
        let l = launch(&[3, 64], &[1, 0], &[0]).unwrap();
        assert_eq!((l.blocks, l.threads), (2, 128));
    }

    #[test]
    fn rows_and_unsplit_reductions_are_not_columns() {
        assert!(launch(&[64, 32], &[1, 0], &[1]).is_none());
        assert!(launch(&[4, 64, 32], &[2, 1, 0], &[0, 2]).is_none());
        assert!(launch(&[64, 1], &[1, 0], &[0]).is_none());
        assert!(launch(&[1, 64], &[1, 0], &[0]).is_none());
    }

    /// Every input element is read by exactly one (thread, chunk), the threads of one
    /// column slot of a block read one column, and a warp's lanes read consecutive
    /// addresses at every chunk (by enumeration).
    #[test]
    fn every_element_is_read_once_and_warps_read_consecutive_columns() {
        use crate::gpu_launch::for_each_thread_point;
        let cases: [(&[i64], &[i64], &[i64]); 6] = [
            (&[70, 9], &[1, 0], &[0]),
            (&[5, 40, 3], &[2, 1, 0], &[1]),
            (&[4, 3, 6, 2], &[3, 2, 1, 0], &[1, 2]),
            (&[6, 7, 5], &[0, 2, 1], &[2]),
            (&[2, 3], &[], &[0]),
            (&[33, 100], &[1, 0], &[0]),
        ];
        for (dims, m2m, reduced) in cases {
            let l = launch(dims, m2m, reduced).unwrap();
            let GpuEmitter::ColumnReduction { columns, .. } = l.emitter else {
                panic!("{:?}", l.emitter)
            };
            let m = &l.thread_map;
            let n: i64 = dims.iter().product();
            let order = physical_order(dims.len(), m2m);
            let physical =
                |idx: &[i64]| order.iter().rev().fold(0, |acc, &d| acc * dims[d] + idx[d]);
            let mut seen = vec![0u32; n as usize];
            let mut slots = std::collections::HashMap::new();
            let mut tile_rows: std::collections::HashMap<(i64, i64, i64), Vec<i64>> =
                Default::default();
            for_each_thread_point(m, |flat, idx| {
                let row_major = idx.iter().zip(dims).fold(0, |acc, (i, d)| acc * d + i);
                seen[row_major as usize] += 1;
                let kept: Vec<i64> = (0..dims.len())
                    .filter(|&d| !reduced.contains(&(d as i64)))
                    .map(|d| idx[d])
                    .collect();
                let slot = (flat[3], flat[0] % columns);
                let first = slots.entry(slot).or_insert_with(|| kept.clone());
                assert_eq!(*first, kept, "{dims:?} {m2m:?} {reduced:?}");
                tile_rows
                    .entry((flat[3], flat[0] / columns, flat[6]))
                    .or_default()
                    .push(physical(&idx));
            });
            assert!(seen.iter().all(|&c| c == 1), "{dims:?} {m2m:?} {reduced:?}");
            // The consecutive lanes reading one row of a tile at a chunk read consecutive
            // addresses.
            for addrs in tile_rows.values() {
                let ok = addrs.windows(2).all(|w| w[1] == w[0] + 1);
                assert!(ok, "{dims:?} {m2m:?} {reduced:?}: {addrs:?}");
            }
        }
    }
}
