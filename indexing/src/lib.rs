//! # indexing — which elements of which tensor every HLO op and fusion reads
//!
//! For every HLO opcode, output-to-input maps ("output element `d` reads these operand
//! elements") and input-to-output maps ("operand element `d` is used by these output
//! elements"), written as [`affine::IndexingMap`]s; for fusions, the grouped composition of
//! those maps from the fusion's outputs to every operand ([`analyze`]), deduplicated and
//! simplified after every step. Runtime variables (`rt0`, the start index a dynamic-slice or
//! gather reads from another tensor) keep their provenance: the instruction producing the
//! value and the map from the same indices to the element read there ([`RuntimeVar`]); one
//! produced by an iota or constant is folded into the map when that is exact.
//!
//! On top: [`utilization`] (how often each input element is read for one evaluation of the
//! output, exact by enumeration) and [`coalescing`] (memory transactions of the first warp
//! of a kernel, from a thread-to-output map and the operand's physical layout).
//!
//! The entry points take a handle to one instruction ([`hlo::InstrRef`], from
//! `module.instr(name)`), which knows its module and computation:
//!
//! ```
//! let module = hlo::parse_module(r#"
//! HloModule m
//! fused {
//!   p = f32[4,8] parameter(0)
//!   ROOT r = f32[32] reshape(p)
//! }
//! ENTRY e {
//!   a = f32[4,8] parameter(0)
//!   ROOT fusion = f32[32] fusion(a), kind=kLoop, calls=fused
//! }"#).unwrap();
//! let fusion = module.instr("fusion").unwrap();
//! let maps = indexing::analyze(&fusion).unwrap();
//! assert_eq!(
//!     indexing::format_grouped(&maps.outputs),
//!     "operand id = 0\n  (d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]\n"
//! );
//! // Any instruction, fused or not: the reshape inside the fusion on its own.
//! let reshape = module.instr("r").unwrap();
//! assert_eq!(indexing::output_to_input(&reshape).unwrap(), maps.outputs);
//! ```
//!
//! Layers, each using only those before it: the per-op tables ([`ops`]); the folding of
//! runtime variables whose values are known statically; the composition of maps through a
//! computation (backward from a root, over a producer-consumer pair, forward from a hero);
//! the public questions on top ([`analyze`], [`output_to_input`], [`input_to_output`],
//! [`producer_consumer`], [`epilogue_indexing`], [`grouped_from`]), which pick the
//! composition an instruction needs; the same maps between physical (layout-ordered) shapes
//! ([`output_to_input_physical`], [`input_to_output_physical`]).
//!
//! Exactness: every map is exact unless the table in the crate's README says "superset"
//! (the map's image contains every element really read, and maybe more) or UNDEFINED (with
//! the reason, for just the operands affected).

mod analysis;
mod coalescing_impl;
mod compose;
mod error;
mod fold;
mod grouped;
mod indexed_map;
pub mod ops;
mod physical;
mod print;
mod scan_body;
mod scan_inverse;
mod utilization_impl;

pub use analysis::{
    analyze, epilogue_indexing, epilogue_indexing_to, grouped_from, input_to_output,
    output_to_input, producer_consumer,
};
pub use error::IndexingError;
pub use grouped::{FusionIndexing, GroupedIndexing, OperandIndexing, ValueMaps};
pub use indexed_map::{IndexedMap, RuntimeVar};
pub use physical::{input_to_output_physical, output_to_input_physical};
pub use print::{format_grouped, format_in_to_out, format_operand, format_values};

/// Utilization: how many times each input element is read for one full evaluation of the
/// output.
pub mod utilization {
    pub use crate::utilization_impl::*;
}

/// Coalescing: memory transactions of the first warp from a thread-to-output map.
pub mod coalescing {
    pub use crate::coalescing_impl::*;
}
