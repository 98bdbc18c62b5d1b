//! How many producer blocks a row stream multiplies per GEMM call, and which patch
//! matrices below [`super::stream::STREAM_MIN_BYTES`] stream by rows.
//!
//! The producer's grid is cut for the producer's own work (64 blocks, so 16 rows of a
//! `m = 1024` patch matrix each), and each GEMM call of a row stream reads the whole
//! rhs (from the last-level cache when it is larger than L2) and repacks it: calls on
//! a few rows spend their time there. Streamed one producer block per call, 3x3
//! convolutions ran 1.3-1.8x slower than with the patch matrix whole (session 56, F2,
//! single thread); grouped to 128-256 rows per call they ran within 2% of it. A slot
//! therefore takes `group` consecutive producer blocks and one GEMM call multiplies
//! their rows at once.

/// Rows one GEMM call of a row stream multiplies when the scratch allows.
pub const TARGET_ROWS: i64 = 256;

/// Producer blocks of this many rows or more go one per GEMM call: at 64 rows a call
/// already ran within a few percent of the whole matrix (session 55), and grouping
/// them would only grow the slots (unet_block's 18 MiB patches: 0.6 -> 2.4 MiB).
pub const GROUPED_BELOW_ROWS: i64 = 64;

/// Fewest rows per GEMM call for a row stream of an operand below
/// [`super::stream::STREAM_MIN_BYTES`] (which used to stay whole): with fewer the calls
/// cost more than the memory saved is worth.
pub const MIN_CALL_ROWS: i64 = 128;

/// Operands from this size up (below [`super::stream::STREAM_MIN_BYTES`]) stream by rows
/// when a call takes [`MIN_CALL_ROWS`] rows and the slots stay within
/// [`MAX_SCRATCH_FRACTION`] of the operand.
pub const ROW_STREAM_MIN_BYTES: u64 = 1 << 20;

/// A row stream's scratch slots take at most `1 / MAX_SCRATCH_FRACTION` of the operand
/// whole, so that streaming lowers the temp to a few blocks.
pub const MAX_SCRATCH_FRACTION: i64 = 4;

/// A slot holds at most this many bytes (or one producer block, when that is larger):
/// 256 rows of a `k = 4608` patch matrix would be 4.5 MiB per slot.
pub const MAX_SLOT_BYTES: i64 = 2 << 20;

/// Producer blocks per GEMM call for a row stream of `blocks` producer blocks of
/// `block_rows` rows and `block_bytes` bytes each into `slots` slots: enough for
/// [`TARGET_ROWS`] rows, no more than each slot's share of the blocks, the slots at most
/// [`MAX_SCRATCH_FRACTION`] of the operand and each at most [`MAX_SLOT_BYTES`]; at
/// least 1.
pub fn stream_group(blocks: i64, block_rows: i64, block_bytes: i64, slots: usize) -> i64 {
    let target = TARGET_ROWS;
    let slots = (slots as i64).max(1);
    let rows = block_rows.max(1);
    if rows >= GROUPED_BELOW_ROWS {
        return 1;
    }
    let wanted = (target + rows - 1) / rows;
    let share = blocks / slots;
    let few = blocks / (slots * MAX_SCRATCH_FRACTION);
    let small = MAX_SLOT_BYTES / block_bytes.max(1);
    wanted.min(share).min(few).min(small).max(1)
}

/// Whether a row stream of an operand of `bytes` (below the main threshold) in `blocks`
/// producer blocks of `block_rows` rows, `group` per call into `slots` slots, is worth
/// it: calls of at least [`MIN_CALL_ROWS`] rows, and slots of at most
/// [`MAX_SCRATCH_FRACTION`] of the operand (vit_forward's 4.8 MiB patches in 4 blocks of
/// 1.2 MiB would have kept half of it).
pub fn small_rows_stream(
    bytes: u64,
    (blocks, block_rows): (i64, i64),
    group: i64,
    slots: usize,
) -> bool {
    bytes >= ROW_STREAM_MIN_BYTES
        && group * block_rows >= MIN_CALL_ROWS
        && (slots as i64) * group * MAX_SCRATCH_FRACTION <= blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_reach_the_target_rows_within_a_quarter_and_the_slot_bytes() {
        // resnet18's m = 1024 patches: 64 blocks of 16 rows (k = 1152) in 2 slots: 8
        // blocks (128 rows) keep the slots at a quarter of the matrix.
        assert_eq!(stream_group(64, 16, 16 * 1152 * 4, 2), 8);
        // 32-row blocks of k = 576: 8 blocks make the 256 target rows, at a quarter.
        assert_eq!(stream_group(128, 32, 32 * 576 * 4, 2), 8);
        // 64-row blocks go one per call.
        assert_eq!(stream_group(64, 64, 64 * 576 * 4, 2), 1);
        // 32-row blocks of k = 4608 (590 KiB each): 3 fit in a 2 MiB slot.
        assert_eq!(stream_group(64, 32, 32 * 4608 * 4, 2), 3);
        // Blocks larger than a slot, or too few blocks for a quarter: one per call.
        assert_eq!(stream_group(64, 512, 512 * 4608 * 4, 2), 1);
        assert_eq!(stream_group(6, 4, 4 * 64 * 4, 2), 1);
        assert_eq!(stream_group(64, 30, 30 * 16 * 4, 1), 9);
    }

    #[test]
    fn small_operands_stream_with_enough_rows_per_call() {
        assert!(small_rows_stream(4 << 20, (64, 16), 8, 2));
        assert!(!small_rows_stream(4 << 20, (64, 8), 8, 2));
        assert!(!small_rows_stream(ROW_STREAM_MIN_BYTES - 1, (64, 32), 8, 2));
        // Slots over a quarter of the operand.
        assert!(!small_rows_stream(4 << 20, (4, 256), 1, 2));
    }
}
