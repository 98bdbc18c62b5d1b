//! The containers of the results: sets of maps per operand (deduplicated, in a
//! deterministic order, or UNDEFINED), grouped per output of an instruction or fusion, and
//! per value of a would-be fusion.

use std::collections::BTreeMap;

use affine::MapForm;

use crate::IndexedMap;

/// The maps from one tensor (an output) to one operand: a set (deduplicated, ordered by
/// text), or UNDEFINED with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OperandIndexing {
    /// The set of maps; empty when the operand is not read (for this output).
    Maps(BTreeMap<String, IndexedMap>),
    /// The analysis cannot describe the access.
    Undefined(String),
}

impl Default for OperandIndexing {
    fn default() -> Self {
        OperandIndexing::Maps(BTreeMap::new())
    }
}

impl OperandIndexing {
    /// The empty set: the operand is not read.
    pub fn none() -> OperandIndexing {
        OperandIndexing::default()
    }

    /// One map.
    pub fn single(map: IndexedMap) -> OperandIndexing {
        let mut s = OperandIndexing::none();
        s.insert(map);
        s
    }

    /// One plain map.
    pub fn map(map: affine::IndexingMap) -> OperandIndexing {
        OperandIndexing::single(IndexedMap::plain(map))
    }

    /// UNDEFINED with a reason.
    pub fn undefined(reason: impl Into<String>) -> OperandIndexing {
        OperandIndexing::Undefined(reason.into())
    }

    /// Adds a map (an UNDEFINED map makes the whole set UNDEFINED; KNOWN EMPTY is dropped).
    pub fn insert(&mut self, map: IndexedMap) {
        match map.map.form() {
            MapForm::KnownEmpty => {}
            MapForm::Undefined => {
                if let OperandIndexing::Maps(_) = self {
                    *self = OperandIndexing::undefined("composition with an UNDEFINED map");
                }
            }
            MapForm::Normal => {
                if let OperandIndexing::Maps(m) = self {
                    m.entry(map.key()).or_insert(map);
                }
            }
        }
    }

    /// Adds every map of `other` (UNDEFINED absorbs).
    pub fn merge(&mut self, other: OperandIndexing) {
        match other {
            OperandIndexing::Undefined(r) => {
                if let OperandIndexing::Maps(_) = self {
                    *self = OperandIndexing::Undefined(r);
                }
            }
            OperandIndexing::Maps(ms) => {
                for (_, m) in ms {
                    self.insert(m);
                }
            }
        }
    }

    /// The maps, in order (empty for UNDEFINED).
    pub fn maps(&self) -> impl Iterator<Item = &IndexedMap> + '_ {
        let m = match self {
            OperandIndexing::Maps(m) => Some(m),
            OperandIndexing::Undefined(_) => None,
        };
        m.into_iter().flat_map(|m| m.values())
    }

    /// True for UNDEFINED.
    pub fn is_undefined(&self) -> bool {
        matches!(self, OperandIndexing::Undefined(_))
    }
}

/// Output-to-input maps of one output of an instruction: one entry per operand.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GroupedIndexing {
    /// `operands[i]`: maps from the output to operand `i`.
    pub operands: Vec<OperandIndexing>,
}

/// Output-to-input maps of a fusion: `outputs[k].operands[i]` holds the maps from the
/// fusion's output `k` to its operand `i`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FusionIndexing {
    /// One entry per output of the fusion.
    pub outputs: Vec<GroupedIndexing>,
}

/// Maps from one tensor to the values of a would-be fusion: one entry per instruction (and
/// output of it), in traversal order from the root.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ValueMaps {
    /// `(instruction name, output index, maps)`.
    pub values: Vec<(String, usize, OperandIndexing)>,
}
