//! # codegen — kernels, their C, and the thunk sequence
//!
//! - [`kir`]: the kernel IR (buffers, a launch grid of blocks, loops over affine index
//!   expressions, scalar operations of every element type), its verifier and text form.
//! - [`emit`]: HLO to kernel IR; the loops and indices are the ops' indexing maps.
//! - [`c`]: the C printer (one translation unit per module, with a small prelude).
//! - [`thunk`]: the schedule, the buffer assignment and the thunk sequence of a module.
//! - [`EmitTarget`]: the parameters the emitters generate code for (lanes, tile sizes, the
//!   description the root tiling is costed on), handed in by the backend.
//!
//! The crate emits text and data only: it runs no compiler and loads nothing.

pub mod c;
pub mod emit;
mod error;
pub mod kir;
mod target;
pub mod thunk;

pub use error::CodegenError;
pub use target::EmitTarget;
