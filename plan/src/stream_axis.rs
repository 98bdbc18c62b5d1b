//! The dimension a streamed GEMM's blocks split (see [`super::stream`]); a file of its
//! own so that the thunk type can name it without depending on the streaming pass.

/// Which dimension of a [`crate::Thunk::StreamedGemm`]'s GEMM its producer's blocks split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamAxis {
    /// Block `b` writes lhs rows `[b R, (b + 1) R)` (row-major, strides `(k, 1)`), which
    /// give result rows `[b R, (b + 1) R)` alone.
    Rows,
    /// Block `b` writes rows `[b R, (b + 1) R)` along `k` of the streamed operand: the
    /// rhs stored `[k, n]` row-major (strides `(n, 1)`), or with `lhs` the lhs stored
    /// `[k, m]` (strides `(1, m)`). Every block's product adds into the whole result: a
    /// weight gradient's GEMM reads im2col patches across its summed (batch x spatial)
    /// dimension, so only a block of them is live at a time. Each slot's run of blocks
    /// sums into an accumulator of its own (the first slot's is the result; the others
    /// follow the slots in the operand's buffer), added into the result at the end.
    Contraction {
        /// Whether the streamed operand is the lhs (else the rhs).
        lhs: bool,
    },
}
