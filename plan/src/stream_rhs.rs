//! Whether streaming a GEMM's lhs pays for reading its rhs once per block.
//!
//! A streamed GEMM ([`super::stream`]) multiplies each block's rows as soon as the
//! producer has written them, so every block reads the whole rhs. A rhs that stays in the
//! last-level cache costs those reads nothing to speak of (im2col patches against a
//! convolution's weights). A larger one comes from memory once per block: moco's
//! `f32[512, 65536] x f32[65536, 128]` in 64 blocks of 8 rows read its 32 MiB queue 64
//! times (2 GiB, 37 GFLOP/s), where the lhs written whole and read back is 256 MiB of
//! traffic and the GEMM blocks its rows itself. Streaming is kept when the rhs fits in
//! the cache or its rereads cost no more than the lhs's round trip they save.

/// A rhs below this many bytes stays in the last-level cache between blocks (the size
/// below which the stream keeps an lhs whole for fitting there, `STREAM_MIN_BYTES`).
pub const RHS_RESIDENT_BYTES: u64 = 8 << 20;

/// Whether streaming an lhs of `lhs_bytes` in `blocks` blocks against a rhs of
/// `rhs_bytes` moves no more bytes than writing the lhs whole and reading it back.
pub fn rereads_pay(rhs_bytes: u64, lhs_bytes: u64, blocks: i64) -> bool {
    if rhs_bytes < RHS_RESIDENT_BYTES {
        return true;
    }
    let rereads = u128::from(rhs_bytes) * u128::try_from(blocks.max(1)).unwrap_or(u128::MAX);
    rereads <= 2 * u128::from(lhs_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_weights_stream_and_a_large_queue_does_not() {
        // A 3x3x256x256 f32 convolution's weights: 2.25 MiB, any number of blocks.
        assert!(rereads_pay(2_359_296, 58 << 20, 392));
        // moco: the 32 MiB queue against 128 MiB of logits in 64 blocks.
        assert!(!rereads_pay(32 << 20, 128 << 20, 64));
        // A large rhs read by few blocks of a larger lhs still pays.
        assert!(rereads_pay(32 << 20, 512 << 20, 4));
        assert!(rereads_pay(32 << 20, 16 << 20, 1));
        assert!(!rereads_pay(32 << 20, 15 << 20, 1));
    }
}
