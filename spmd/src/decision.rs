//! What propagation decides for one instruction, and its text form: the sharding the
//! instruction's value gets, what its operands must be resharded to first, the partial
//! sums its local result holds (and the groups that all-reduce them), and why.

use std::fmt::Write as _;

use hlo::attrs::Window;
use hlo::{CompId, Computation, InstrId, Module};

use crate::tiling::Tiling;

/// The sharding of a value: one tiling per array, one per element of a tuple.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueTiling {
    /// An array's tiling.
    Array(Tiling),
    /// A tuple's elements' tilings.
    Tuple(Vec<Tiling>),
    /// A value of a manual region (a `shard_map` body): each device's own value, already
    /// of its per-device shape; no tiling relates it to a global array.
    Manual,
}

impl ValueTiling {
    /// The array tiling, `None` for a tuple.
    pub fn array(&self) -> Option<&Tiling> {
        match self {
            ValueTiling::Array(t) => Some(t),
            ValueTiling::Tuple(_) | ValueTiling::Manual => None,
        }
    }

    /// XLA's text of the sharding (`{replicated}`, `{devices=[2,1]<=[2]}`, tuples in braces).
    pub fn text(&self) -> String {
        match self {
            ValueTiling::Array(t) => t.to_sharding().to_string(),
            ValueTiling::Tuple(ts) => {
                let parts: Vec<String> = ts.iter().map(|t| t.to_sharding().to_string()).collect();
                format!("{{{}}}", parts.join(", "))
            }
            ValueTiling::Manual => "{manual}".to_string(),
        }
    }
}

/// Partial sums the local op leaves: an all-reduce over `groups` (global device ids)
/// completes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialSums {
    /// The groups of the all-reduce.
    pub groups: Vec<Vec<i64>>,
}

/// A halo exchange: operand `operand`'s tile along split dimension `dim` extended by the
/// last `low` elements of the tile before it and the first `high` of the tile after it
/// (collective-permutes), positions outside the array set to `fill`, then cut to the
/// `length` elements the device's output tile reads, from `offsets[device]` on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Halo {
    /// The operand whose tile is extended.
    pub operand: usize,
    /// The split dimension.
    pub dim: usize,
    /// Elements from the tile before.
    pub low: i64,
    /// Elements from the tile after.
    pub high: i64,
    /// Per device, where its window starts in the extended tile.
    pub offsets: Vec<i64>,
    /// Elements of the window along `dim`.
    pub length: i64,
    /// What positions outside the array hold: the value of operand `Some(i)` (a scalar: a
    /// pad or init value), or zero (`None`).
    pub fill: Option<usize>,
}

/// A computation partitioned for the op that calls it: its decisions (parameters as the
/// caller passes them), and the sharding its root is resharded to (`None`: as decided).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Called {
    /// The computation (of the module being partitioned).
    pub comp: CompId,
    /// Its instructions' decisions.
    pub decisions: Decisions,
    /// What its root must be.
    pub root: Option<ValueTiling>,
}

/// One instruction's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The value's sharding after partitioning.
    pub out: ValueTiling,
    /// The sharding the local op's result has (before a reshard to `out`, which an
    /// annotation on the instruction may ask for).
    pub local: ValueTiling,
    /// What each operand must be resharded to before the local op (`None`: as it is).
    pub operands: Vec<Option<Tiling>>,
    /// What each tuple operand must be resharded to, element by element (`None`, or no
    /// entry: as it is).
    pub tuple_operands: Vec<Option<Vec<Tiling>>>,
    /// Partial sums to all-reduce after the local op.
    pub partial: Option<PartialSums>,
    /// The window the local op runs with, where it differs from the instruction's (a
    /// windowed op on a split dimension reads its halo-extended tile with no padding).
    pub window: Option<Window>,
    /// Halo exchanges that extend operands' tiles before the local op.
    pub halos: Vec<Halo>,
    /// Computations the op calls, partitioned with it (a loop's condition and body).
    pub called: Vec<Called>,
    /// Why, in words.
    pub why: String,
}

/// Every instruction's decision, indexed by the entry computation's instruction ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decisions {
    /// `by_id[id.index()]`, `None` for instructions not reached.
    pub by_id: Vec<Option<Decision>>,
    /// `partial[id.index()]`: for a partially manual region's value tiled over the
    /// automatic axes, the manual coordinate each device serves (`manual_partial.rs`).
    pub partial: Vec<Option<Vec<i64>>>,
}

impl Decisions {
    /// The decision of `id`.
    pub fn get(&self, id: InstrId) -> Option<&Decision> {
        self.by_id.get(id.index()).and_then(Option::as_ref)
    }

    /// The manual coordinate of each device where `id` is a partially manual region's
    /// value tiled over the automatic axes.
    pub fn partial_keys(&self, id: InstrId) -> Option<&[i64]> {
        self.partial
            .get(id.index())
            .and_then(Option::as_ref)
            .map(Vec::as_slice)
    }

    /// [`Decisions::explain`], each computation an op is partitioned with (a loop's
    /// condition and body) after the op's line, indented, under its name.
    pub fn explain_module(&self, module: &Module, comp: &Computation) -> String {
        let mut out = String::new();
        for id in comp.def_before_use_order().iter() {
            let Some(d) = self.get(*id) else { continue };
            let _ = writeln!(
                out,
                "{}: {} <- {}",
                comp.instr(*id).name(),
                d.out.text(),
                d.why
            );
            for c in &d.called {
                let callee = module.computation(c.comp);
                let _ = writeln!(out, "  {}:", callee.name());
                for line in c.decisions.explain_module(module, callee).lines() {
                    let _ = writeln!(out, "    {line}");
                }
            }
        }
        out
    }

    /// The text `hloc partition --explain` prints: one line per instruction of `entry`, in
    /// order, `name: sharding <- why`.
    pub fn explain(&self, entry: &Computation) -> String {
        let mut out = String::new();
        for id in entry.def_before_use_order().iter() {
            let Some(d) = self.get(*id) else { continue };
            let _ = writeln!(
                out,
                "{}: {} <- {}",
                entry.instr(*id).name(),
                d.out.text(),
                d.why
            );
        }
        out
    }
}
