//! The memory planner (issue 32): dataflow values and their aliasing over the fused
//! module, schedules costed by a heap simulation, buffer assignment into parameter,
//! constant, output and one temp block at offsets (temporaries also inside outputs not
//! yet written; a donated parameter's bytes taken by its output; a library call's result
//! over its dying operand, [`library_in_place`]; values of loop bodies and branches by
//! steps of their own, [`steps`]), patch matrices built again rather than kept
//! ([`remat`]), the choice of schedule and streaming under a memory limit, and XLA-style
//! dumps of the result.

pub mod assign;
pub mod carried;
pub mod donate;
mod dump;
pub mod heap;
pub mod in_place;
pub mod in_place_order;
pub mod library_in_place;
pub mod limit;
pub mod one_pointer;
pub mod poison;
pub mod remat;
pub mod schedule;
pub mod steps;
pub mod values;
mod values_text;

pub use dump::{
    human_bytes, xla_buffer_assignment_text, xla_memory_dumps, xla_memory_usage_report,
};
pub use values::{dataflow, Dataflow, Position, Share, ShareReason, Use, Value, ValueId};
pub use values_text::values_text;
