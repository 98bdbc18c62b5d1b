//! # codegen — kernels, their C, and the thunk sequence
//!
//! - [`kir`]: the kernel IR (buffers, a launch grid of blocks, loops over affine index
//!   expressions, scalar operations of every element type), its verifier and text form.
//! - [`emit`]: HLO to kernel IR; the loops and indices are the ops' indexing maps.
//! - [`c`]: the C printer (one translation unit per module, with a small prelude).
//! - [`thunk`]: the schedule, the buffer assignment and the thunk sequence of a module.
//!
//! The crate emits text and data only: it runs no compiler and loads nothing.

pub mod c;
pub mod emit;
mod error;
pub mod kir;
pub mod thunk;

pub use error::CodegenError;
