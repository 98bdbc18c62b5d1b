//! Errors of the tiling crate.

use thiserror::Error;

/// Why a tiling question could not be answered.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TilingError {
    /// The fusion cannot be tiled: an answer, not a failure of the caller (`not tileable:
    /// <reason>`).
    #[error("not tileable: {0}")]
    NotTileable(String),
    /// The instruction given is not a fusion (or call) with a fused computation.
    #[error("instruction `{0}` is not a fusion")]
    NotAFusion(String),
    /// A tile-size list does not fit the root: wrong rank or a size below 1.
    #[error("bad tile sizes: {0}")]
    BadTileSizes(String),
    /// A tile does not fit the tensor it is propagated from (wrong rank, no such operand or
    /// output).
    #[error("bad tile: {0}")]
    BadTile(String),
    /// The indexing analysis failed (a malformed instruction).
    #[error(transparent)]
    Indexing(#[from] indexing::IndexingError),
    /// An error of the map algebra (overflow while evaluating, arity mismatch).
    #[error("map algebra: {0}")]
    Map(#[from] affine::MapError),
    /// Evaluating an expression failed (overflow, division by zero).
    #[error(transparent)]
    Eval(#[from] affine::EvalError),
    /// The text form of a symbolic tile or constraint could not be read.
    #[error("line {line}: {message}")]
    Parse {
        /// 1-based line of the text.
        line: usize,
        /// What is wrong.
        message: String,
    },
}
