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
//! ```
//! let module = hlo::parse_module(r#"
//! HloModule m
//! ENTRY e {
//!   p0 = f32[4,8] parameter(0)
//!   ROOT r = f32[32] reshape(p0)
//! }"#).unwrap();
//! let root = module.entry().root();
//! let maps = indexing::output_to_input(&module, module.entry_id(), root).unwrap();
//! assert_eq!(
//!     indexing::format_grouped(&maps),
//!     "operand id = 0\n  (d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]\n"
//! );
//! ```
//!
//! Exactness: every map is exact unless the table in the crate's README says "superset"
//! (the map's image contains every element really read, and maybe more) or UNDEFINED (with
//! the reason, for just the operands affected).

mod coalescing_impl;
mod error;
mod fold;
mod fusion;
mod grouped;
mod indexed_map;
mod ops;
mod print;
mod utilization_impl;

pub use error::IndexingError;
pub use fusion::{analyze, epilogue_indexing, producer_consumer, FusionIndexing, ValueMaps};
pub use grouped::{GroupedIndexing, OperandIndexing};
pub use indexed_map::{IndexedMap, RuntimeVar};
pub use ops::{input_to_output, output_to_input};
pub use print::{format_grouped, format_in_to_out, format_operand};

/// Utilization: how many times each input element is read for one full evaluation of the
/// output.
pub mod utilization {
    pub use crate::utilization_impl::*;
}

/// Coalescing: memory transactions of the first warp from a thread-to-output map.
pub mod coalescing {
    pub use crate::coalescing_impl::*;
}

/// Finds an instruction by name in any computation of the module (entry first).
pub fn find_instruction(module: &hlo::Module, name: &str) -> Option<(hlo::CompId, hlo::InstrId)> {
    let entry = module.entry_id();
    let in_comp = |c: hlo::CompId| module.computation(c).find(name).map(|i| (c, i));
    in_comp(entry).or_else(|| module.computations().find_map(|(c, _)| in_comp(c)))
}

/// Formats the producer-consumer maps: `instr = NAME` sections (`instr = NAME output K` for
/// output K > 0 of a tuple-shaped instruction), each holding its maps as in
/// [`format_grouped`]; several consumer outputs are grouped under `output id = K`.
pub fn format_values(outputs: &[ValueMaps]) -> String {
    let mut s = String::new();
    let multi = outputs.len() > 1;
    for (k, vm) in outputs.iter().enumerate() {
        let pad = if multi {
            s.push_str(&format!("output id = {k}\n"));
            "  "
        } else {
            ""
        };
        for (name, kk, set) in &vm.values {
            if *kk > 0 {
                s.push_str(&format!("{pad}instr = {name} output {kk}\n"));
            } else {
                s.push_str(&format!("{pad}instr = {name}\n"));
            }
            s.push_str(&format_operand(set, &format!("{pad}  ")));
        }
    }
    s
}
