//! The HLO IR: modules own computations, computations own an arena of instructions.
//!
//! Instructions refer to each other by [`InstrId`] (an index into their computation's
//! arena) and to computations by [`CompId`] (an index into the module's list).

pub mod accessors;
pub mod async_link;
pub mod blocked_scan;
pub mod call_graph;
mod computation;
pub mod edit;
mod handle;
mod instruction;
mod metadata;
mod module;
pub mod reducer;

pub use computation::{Computation, ComputationBuilder};
pub use handle::InstrRef;
pub use instruction::{Instruction, Payload};
pub use metadata::{MetaValue, Metadata, SourceLocation, StackFrameIndex, TableRow};
pub(crate) use metadata::{INT_KEYS, STRING_KEYS};
pub use module::{ComputationLayout, Module, ModuleAttr, ModuleAttrValue};

/// The id of an instruction within its computation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstrId(u32);

impl InstrId {
    /// The arena index.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The id of arena index `i` (saturating at `u32::MAX`).
    pub fn from_index(i: usize) -> InstrId {
        InstrId(u32::try_from(i).unwrap_or(u32::MAX))
    }
}

/// The id of a computation within its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CompId(u32);

impl CompId {
    /// The index in the module's computation list.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The id of index `i` (saturating at `u32::MAX`).
    pub fn from_index(i: usize) -> CompId {
        CompId(u32::try_from(i).unwrap_or(u32::MAX))
    }
}

/// Errors of IR construction and mutation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IrError {
    /// A computation needs at least one instruction.
    #[error("computation `{0}` has no instructions")]
    EmptyComputation(String),
    /// An id outside the computation.
    #[error("computation `{0}` has no instruction with id {1}")]
    BadId(String, usize),
    /// An id outside the module.
    #[error("module has no computation with id {0}")]
    BadComputation(usize),
    /// An operand or control predecessor that is not defined before its user.
    #[error("in computation `{computation}`, instruction `{instruction}` uses an instruction defined after it")]
    ForwardReference {
        /// Computation name.
        computation: String,
        /// Instruction name.
        instruction: String,
    },
    /// A negative or too large parameter number.
    #[error("computation `{0}` has invalid parameter number {1}")]
    BadParameterNumber(String, i64),
    /// Two parameters with the same number.
    #[error("computation `{0}` has two parameters numbered {1}")]
    DuplicateParameter(String, i64),
    /// Parameter numbers with a gap.
    #[error("computation `{0}` has no parameter {1} (parameter numbers must be 0..n)")]
    MissingParameter(String, i64),
    /// An operand index outside the instruction's operands.
    #[error("computation `{0}`: no operand {1}")]
    BadOperandIndex(String, usize),
    /// An instruction that cannot be removed (it has users, is the root or a parameter).
    #[error("computation `{0}`: instruction `{1}` is still used")]
    StillUsed(String, String),
}
