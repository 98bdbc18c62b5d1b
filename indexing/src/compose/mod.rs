//! Composition of per-op maps through a computation, for any instruction of it: backward
//! from a root to the parameters (users before operands, through nested calls: `walk.rs`,
//! `called.rs`), over a would-be fusion of a producer into its consumer (`region.rs`), from
//! any value of a fusion or of one instruction (`start.rs`), and forward from a hero to the
//! roots (`epilogue.rs`). Every composed map is simplified and its runtime variables folded
//! (`sets.rs`, with `fold.rs`) at every step. The public questions, and which instruction
//! goes through which composition, are in `analysis.rs` above.
mod called;
mod epilogue;
mod region;
mod sets;
mod start;
mod walk;

pub(crate) use called::{async_start, called};
pub(crate) use epilogue::{forward, forward_to};
pub(crate) use region::region;
pub(crate) use sets::compose_sets;
pub(crate) use start::{from_start, Start};
pub(crate) use walk::through_computation;
