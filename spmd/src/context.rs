//! What every propagation rule reads: the module, the entry computation, the device
//! count and the decisions made so far (operands come before their users).

use hlo::{Computation, InstrId, Instruction, Module};

use crate::backward::Hints;
use crate::decision::{Decision, Decisions, ValueTiling};
use crate::error::SpmdError;
use crate::tiling::Tiling;

/// The state of propagation over the entry computation.
pub(crate) struct Ctx<'a> {
    /// The module (with calls inlined).
    pub module: &'a Module,
    /// Its entry computation.
    pub comp: &'a Computation,
    /// How many devices the program runs on.
    pub devices: usize,
    /// The decisions so far.
    pub decisions: Decisions,
    /// What users want (backward propagation).
    pub hints: Hints,
    /// Operand shardings a rule is asked to assume instead of the decided ones (how a
    /// backward hint is tried: the operands as they would be sliced).
    pub assume: Vec<(InstrId, ValueTiling)>,
    /// The parameters' shardings where the caller decides them (a loop body's carry);
    /// empty for the entry computation, whose parameters carry annotations.
    pub params: Vec<ValueTiling>,
    /// Propagation itself, for the rules that partition the computations an op calls
    /// (a loop's body) the same way: `propagate(module, computation, devices, params)`.
    pub propagate: Propagate,
}

/// The signature of propagation over one computation (see [`Ctx::propagate`]).
pub(crate) type Propagate =
    fn(&Module, &Computation, usize, Vec<ValueTiling>) -> Result<Decisions, SpmdError>;

impl Ctx<'_> {
    /// The decided sharding of operand `i` of `instr`.
    pub fn operand(&self, instr: &Instruction, i: usize) -> Result<&ValueTiling, SpmdError> {
        let id = instr
            .operand(i)
            .ok_or_else(|| SpmdError::invalid(instr.name(), format!("no operand {i}")))?;
        self.decided(id)
    }

    /// The decided sharding of `id`.
    pub fn decided(&self, id: InstrId) -> Result<&ValueTiling, SpmdError> {
        if let Some((_, t)) = self.assume.iter().find(|(a, _)| *a == id) {
            return Ok(t);
        }
        self.decisions.get(id).map(|d| &d.out).ok_or_else(|| {
            SpmdError::invalid(
                self.comp.instr(id).name(),
                "used before its sharding is decided",
            )
        })
    }

    /// The decided array tiling of operand `i` of `instr` (an error for a tuple).
    pub fn operand_array(&self, instr: &Instruction, i: usize) -> Result<&Tiling, SpmdError> {
        self.operand(instr, i)?
            .array()
            .ok_or_else(|| SpmdError::unsupported(instr, format!("operand {i} is a tuple")))
    }

    /// The dimensions of operand `i` of `instr`.
    pub fn operand_dims(&self, instr: &Instruction, i: usize) -> Vec<i64> {
        instr
            .operand(i)
            .map(|o| self.comp.instr(o).shape().dims().to_vec())
            .unwrap_or_default()
    }
}

/// A decision whose value keeps the local op's sharding and needs no partial sums.
pub(crate) fn simple(out: Tiling, operands: Vec<Option<Tiling>>, why: String) -> Decision {
    with_value(ValueTiling::Array(out), operands, why)
}

/// [`simple`] for a value that may be a tuple (a variadic reduce's, a manual region's).
pub(crate) fn with_value(out: ValueTiling, operands: Vec<Option<Tiling>>, why: String) -> Decision {
    Decision {
        out: out.clone(),
        local: out,
        operands,
        partial: None,
        tuple_operands: Vec::new(),
        window: None,
        halos: Vec::new(),
        called: Vec::new(),
        why,
    }
}

/// `{...}` text of a tiling, for reasons.
pub(crate) fn text(t: &Tiling) -> String {
    t.to_sharding().to_string()
}
