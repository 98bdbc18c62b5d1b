//! # codegen — the kernel IR and the emitters, for every target
//!
//! - [`kir`]: the kernel IR (buffers, a launch grid of blocks, loops over affine index
//!   expressions, scalar operations of every element type), its verifier and text form.
//! - [`emit`]: HLO to kernel IR; the loops and indices are the ops' indexing maps.
//! - [`EmitTarget`]: the parameters the emitters generate code for (lanes, tile sizes, the
//!   description the root tiling is costed on), handed in by the backend.
//! - [`HlocReach`]: what the emitters generate, as the fusion passes ask it
//!   ([`fusion::EmitterReach`]), confirming each fusion by emitting it before it forms;
//!   [`UnfuseUnemittable`] unfuses the fusions a module arrives with that they cannot.
//!
//! Targets print the kernel IR (`backend-cpu`'s C printer); the `plan` crate decides
//! which kernels a program needs. The crate emits data only: it runs no compiler and
//! loads nothing.

mod candidate;
pub mod emit;
mod error;
pub mod kir;
mod reach;
mod target;
mod unfuse;

pub use error::CodegenError;
pub use reach::HlocReach;
pub use target::{ColumnTiles, EmitTarget, ScanLanes};
pub use unfuse::UnfuseUnemittable;
