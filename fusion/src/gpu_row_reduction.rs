//! The row-reduction emitter's launch: a reduction over its input's minor-most physical
//! dimensions (a softmax's row max and sum, a layer norm's mean) gives each row `lanes`
//! consecutive threads, at most a warp. Lane `l` reads elements `l`, `l + lanes`, ... of
//! its row, so a warp's loads are consecutive addresses at every step (a thread per row
//! would stride by the row length); the lanes then combine their partials by warp shuffles.
//! Short rows take fewer lanes and several rows share a warp; few long rows take a block of
//! [`BLOCK_ROW_THREADS`] each, whose warps then combine through shared memory.
//!
//! The thread map goes to the reduction's input: `(th_x, ..)[chunk_id, unroll_id] ->
//! (input index)`, row `bl_x * rows_per_block + th_x floordiv lanes` and element
//! `chunk_id * lanes + th_x mod lanes` of the row, each delinearized in physical order.

use affine::{Expr, Interval, Var};
use device::Device;

use crate::gpu_launch::{
    coords, physical_order, place_groups, thread_map, GpuEmitter, Launch, LOOP_THREADS, WARP,
};

/// Rows at least this long, when there are few of them, take a block each.
pub const LONG_ROW: i64 = 4096;

/// Threads per row (8 warps) of a row that takes a block.
pub const BLOCK_ROW_THREADS: i64 = 256;

/// The row-reduction launch for a reduction of an input of logical `dims`, laid out by
/// `minor_to_major` (empty: row-major), over dimensions `reduced`; `None` when those are
/// not the input's minor-most physical dimensions or a row has fewer than 2 elements
/// (nothing for lanes to share).
pub fn row_reduction_launch(
    dims: &[i64],
    minor_to_major: &[i64],
    reduced: &[i64],
    device: &Device,
) -> Result<Option<Launch>, affine::MapError> {
    let rank = dims.len();
    let order = physical_order(rank, minor_to_major);
    let is_reduced = |d: usize| reduced.contains(&(d as i64));
    let minor_reduced = order.iter().take_while(|&&d| is_reduced(d)).count();
    if reduced.is_empty() || minor_reduced != reduced.len() {
        return Ok(None);
    }
    let row_len: i64 = order[..minor_reduced].iter().map(|&d| dims[d]).product();
    let rows: i64 = order[minor_reduced..].iter().map(|&d| dims[d]).product();
    if row_len < 2 || rows < 1 {
        return Ok(None);
    }
    let units = i64::from(device.compute.units).max(1);
    // Few long rows (a loss summed over everything, a norm over few channels): a block of
    // several warps per row, so the device still gets a block per multiprocessor; the
    // warps combine through shared memory.
    let lanes = if row_len >= LONG_ROW && rows < units * 4 {
        BLOCK_ROW_THREADS
    } else {
        (row_len as u64).next_power_of_two().min(WARP as u64) as i64
    };
    let mut rows_per_block = (LOOP_THREADS / lanes).max(1);
    if rows < rows_per_block {
        // Few rows: one block, rounded up to whole warps.
        rows_per_block = (rows * lanes + WARP - 1) / WARP * WARP / lanes;
    }
    let threads = rows_per_block * lanes;
    let blocks = (rows + rows_per_block - 1) / rows_per_block;
    let chunks = (row_len + lanes - 1) / lanes;
    let th = Expr::var(Var::dim(coords::TH_X));
    let row = Expr::var(Var::dim(coords::BL_X)) * Expr::constant(rows_per_block)
        + th.floor_div(Expr::constant(lanes));
    let element = Expr::var(Var::range(coords::CHUNK)) * Expr::constant(lanes)
        + th.modulo(Expr::constant(lanes));
    let results = place_groups(
        dims,
        &[
            (&order[minor_reduced..], row),
            (&order[..minor_reduced], element),
        ],
    );
    let mut constraints = Vec::new();
    if blocks * rows_per_block > rows {
        constraints.push((row, Interval::new(0, rows - 1)));
    }
    if chunks * lanes > row_len {
        constraints.push((element, Interval::new(0, row_len - 1)));
    }
    let thread_map = thread_map((blocks, threads), (chunks, 1), results, constraints)?;
    Ok(Some(Launch {
        emitter: GpuEmitter::RowReduction { lanes },
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
        row_reduction_launch(dims, m2m, reduced, &h100()).unwrap()
    }

    #[test]
    fn long_rows_take_a_warp_each_four_rows_a_block() {
        let l = launch(&[1000, 4096], &[1, 0], &[1]).unwrap();
        assert_eq!(l.emitter, GpuEmitter::RowReduction { lanes: 32 });
        assert_eq!((l.blocks, l.threads), (250, 128));
        assert_eq!(
            l.thread_map_text(),
            "(th_x, th_y, th_z, bl_x, bl_y, bl_z)[chunk_id, unroll_id] -> \
             (bl_x * 4 + th_x floordiv 32, chunk_id * 32 + th_x mod 32), domain: \
             th_x in [0, 127], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 249], \
             bl_y in [0, 0], bl_z in [0, 0], chunk_id in [0, 127], unroll_id in [0, 0]"
        );
    }

    #[test]
    fn short_rows_share_a_warp() {
        let l = launch(&[64, 5], &[], &[1]).unwrap();
        assert_eq!(l.emitter, GpuEmitter::RowReduction { lanes: 8 });
        assert_eq!((l.blocks, l.threads), (4, 128));
        let text = l.thread_map_text();
        assert!(text.contains("th_x mod 8 in [0, 4]"), "{text}");
    }

    #[test]
    fn few_long_rows_take_a_block_each() {
        let l = launch(&[8, 1 << 20], &[1, 0], &[1]).unwrap();
        assert_eq!(l.emitter, GpuEmitter::RowReduction { lanes: 256 });
        assert_eq!((l.blocks, l.threads), (8, 256));
        // Many long rows keep a warp each.
        let l = launch(&[4096, 8192], &[1, 0], &[1]).unwrap();
        assert_eq!(l.emitter, GpuEmitter::RowReduction { lanes: 32 });
    }

    #[test]
    fn column_reductions_and_single_element_rows_are_not_rows() {
        assert!(launch(&[64, 32], &[1, 0], &[0]).is_none());
        assert!(launch(&[64, 32], &[0, 1], &[1]).is_none());
        assert!(launch(&[64, 1], &[1, 0], &[1]).is_none());
    }

    /// Every input element is read by exactly one (thread, chunk), and the lanes of one
    /// row group read one row (by enumeration).
    #[test]
    fn every_element_is_read_once_by_its_rows_lanes() {
        use crate::gpu_launch::for_each_thread_point;
        let cases: [(&[i64], &[i64], &[i64]); 6] = [
            (&[9, 70], &[1, 0], &[1]),
            (&[2, 4100], &[1, 0], &[1]),
            (&[3, 4, 5], &[2, 1, 0], &[1, 2]),
            (&[4, 3, 6], &[1, 0, 2], &[0, 1]),
            (&[2, 3], &[], &[1]),
            (&[37, 2], &[1, 0], &[1]),
        ];
        for (dims, m2m, reduced) in cases {
            let l = launch(dims, m2m, reduced).unwrap();
            let GpuEmitter::RowReduction { lanes } = l.emitter else {
                panic!("{:?}", l.emitter)
            };
            let m = &l.thread_map;
            let n: i64 = dims.iter().product();
            let mut seen = vec![0u32; n as usize];
            let mut rows = std::collections::HashMap::new();
            for_each_thread_point(m, |flat, idx| {
                let row_major = idx.iter().zip(dims).fold(0, |acc, (i, d)| acc * d + i);
                seen[row_major as usize] += 1;
                // The lanes of one row group read one row.
                let group = flat[3] * l.threads + flat[0];
                let kept: Vec<i64> = (0..dims.len())
                    .filter(|&d| !reduced.contains(&(d as i64)))
                    .map(|d| idx[d])
                    .collect();
                let first = rows.entry(group / lanes).or_insert_with(|| kept.clone());
                assert_eq!(*first, kept, "{dims:?} {m2m:?} {reduced:?}");
            });
            assert!(seen.iter().all(|&c| c == 1), "{dims:?} {m2m:?} {reduced:?}");
        }
    }
}
