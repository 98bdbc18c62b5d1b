//! Where the previous link of an async chain is. The first operand of an `async-update`
//! or `async-done` is the state of its chain, which may reach it through ops that pass a
//! value on unchanged: `tuple` and `get-tuple-element` (followed together, element by
//! element), `copy`, a single-operand `opt-barrier`, the metadata custom calls
//! (`Sharding`, `LocalToGlobalShape`, `GlobalToLocalShape`, `xla.sdy.*`) and `while`
//! (its result element comes from the same element of its init). A walk that ends at a
//! parameter says which parameter and element, so that a caller that knows the
//! computation's call sites (a while body's parameter is its loop's init) can go on.

use super::{InstrId, Instruction};
use crate::opcode::Opcode;

/// What the walk back from an operand found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AsyncLink {
    /// The `async-start` or `async-update` whose state the operand is.
    Found(InstrId),
    /// The operand is an `async-done` itself (not a state).
    Done(InstrId),
    /// Element `path` (outermost index first) of parameter `number` of the computation.
    Parameter {
        /// The parameter number.
        number: i64,
        /// The tuple element of the parameter, outermost index first.
        path: Vec<i64>,
    },
    /// No producer (a value the walk cannot see through).
    Unknown,
}

/// True for the custom calls that only annotate their operand (sharding and shape
/// metadata of partitioned modules).
pub fn is_metadata_custom_call(i: &Instruction) -> bool {
    i.opcode() == Opcode::CustomCall
        && i.custom_call_target().is_some_and(|t| {
            matches!(t, "Sharding" | "LocalToGlobalShape" | "GlobalToLocalShape")
                || t.starts_with("xla.sdy.")
        })
}

/// Walks back from `operand` (an instruction of one computation, looked up with `get`)
/// to the async state it carries: element `within` (outermost index first; empty for
/// the value itself) of `operand`. The walk is bounded by `limit` steps. With
/// `through_loops` false it stops at a `while` (whose body may have moved the chain on:
/// the init's state is the chain's only if the body passes it through unchanged).
pub fn trace_async_link<'a>(
    get: impl Fn(InstrId) -> Option<&'a Instruction>,
    operand: InstrId,
    within: &[i64],
    limit: usize,
    through_loops: bool,
) -> AsyncLink {
    // Tuple indices still to select, the next one (outermost) last.
    let mut path: Vec<i64> = within.iter().rev().copied().collect();
    let mut id = operand;
    for step in 0..limit {
        let Some(i) = get(id) else {
            return AsyncLink::Unknown;
        };
        let first = i.operands().first().copied();
        match i.opcode() {
            Opcode::AsyncStart | Opcode::AsyncUpdate if path.is_empty() => {
                return AsyncLink::Found(id)
            }
            Opcode::AsyncDone if path.is_empty() && step == 0 && within.is_empty() => {
                return AsyncLink::Done(id)
            }
            Opcode::GetTupleElement => match (i.tuple_index(), first) {
                (Some(k), Some(o)) => {
                    path.push(k);
                    id = o;
                }
                _ => return AsyncLink::Unknown,
            },
            Opcode::Tuple => {
                let next = path
                    .pop()
                    .and_then(|k| usize::try_from(k).ok())
                    .and_then(|k| i.operands().get(k).copied());
                match next {
                    Some(o) => id = o,
                    None => return AsyncLink::Unknown,
                }
            }
            Opcode::OptimizationBarrier if i.operands().len() != 1 => return AsyncLink::Unknown,
            Opcode::While if !through_loops => return AsyncLink::Unknown,
            Opcode::Copy | Opcode::OptimizationBarrier | Opcode::While => match first {
                Some(o) => id = o,
                None => return AsyncLink::Unknown,
            },
            Opcode::CustomCall if is_metadata_custom_call(i) && i.operands().len() == 1 => {
                id = first.unwrap_or(id);
            }
            Opcode::Parameter => {
                path.reverse();
                return AsyncLink::Parameter {
                    number: i.parameter_number().unwrap_or(0),
                    path,
                };
            }
            _ => return AsyncLink::Unknown,
        }
    }
    AsyncLink::Unknown
}
