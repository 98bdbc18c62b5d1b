//! What the code generator behind a fusion pipeline can emit, asked before a fusion is
//! formed or grown rather than found out afterwards.
//!
//! The fusion passes consider candidate kernels as sets of instructions of one computation
//! ([`Candidate`]); before they form one (priority fusion merging a producer into its
//! consumers, multi-output fusion merging siblings or a producer with its consumer,
//! horizontal fusion merging independent kernels) they ask the pipeline's
//! [`EmitterReach`] whether one kernel of that set can be emitted, and they read the code
//! generator's switches ([`EmitterRules`]: what kinds of fusion it emits at all, and how
//! large) from it. Right before priority fusion forms a kernel it asks once more
//! ([`EmitterReach::confirm`]): hloc's emitters answer that by emitting the kernel's body,
//! since how members index each other (a guard, a read over a range) can refuse too. The reaches of XLA's emitters live in `xla_reach` ([`crate::XlaCpuReach`],
//! [`crate::XlaGpuReach`]); hloc's own emitters answer through `codegen`'s implementation.
//!
//! The device description keeps the hardware's facts (rates, bandwidths, caches, the cost
//! of a launch); these switches belong to the code generator, so they come with the reach
//! (the cost model reads one of them, [`EmitterRules::hoists_invariant_values`]).

use hlo::attrs::FusionKind;
use hlo::{Computation, InstrId, Module};

/// The switches of a code generator that the fusion passes follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmitterRules {
    /// Most operands one fused kernel may take.
    pub max_operands: usize,
    /// Most instructions one fused kernel may hold.
    pub max_instructions: usize,
    /// `kind=` of a fusion holding a reduction (`kLoop` where reductions run in loop
    /// fusions, `kInput` for XLA:GPU's reduction emitter).
    pub reduction_kind: FusionKind,
    /// Whether the code generator emits tuple-rooted (multi-output) fusions: the
    /// multi-output and horizontal passes run only where it does.
    pub multi_output: bool,
    /// Whether every output of a multi-output fusion must have the same dimensions (and
    /// none be a reduction).
    pub multi_output_same_dims: bool,
    /// Whether a fusion may hold transposes of one permutation only (a tiled transpose
    /// emitter) rather than any (a loop emitter indexing each).
    pub one_transpose_kind_per_fusion: bool,
    /// Whether the code generator computes a value that does not change along a kernel's
    /// innermost loop once before that loop (loop-invariant code motion): a reduction read
    /// through a broadcast along the minor dimensions then runs once per row, so the cost
    /// model prices it so and it may fuse into its consumer (a softmax or a layer norm in
    /// one kernel). A switch of the code generator, not a fact of the machine.
    pub hoists_invariant_values: bool,
}

/// A kernel the fusion passes consider forming: `members` of `comp`, in def-before-use
/// order, whose values leave the kernel through `roots`.
pub struct Candidate<'a> {
    /// The computation the members belong to.
    pub comp: &'a Computation,
    /// The instructions of the kernel, in def-before-use order.
    pub members: &'a [InstrId],
    /// The instructions whose values the kernel writes (one, or several for a
    /// multi-output fusion).
    pub roots: &'a [InstrId],
    /// Whether XLA:CPU may emit `comp` with its per-element IR emitter
    /// ([`crate::xla_cpu::per_element_computations`]).
    pub per_element: bool,
    /// The position of an instruction of `comp` in def-before-use order.
    pub position: &'a dyn Fn(InstrId) -> usize,
}

/// Why a candidate cannot be emitted as one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unemittable {
    /// The member at fault.
    pub at: InstrId,
    /// What that member is, as a phrase that follows its name and "is" in a report
    /// ("a transpose XLA's cost analysis tests for a bitcast").
    pub why: String,
}

/// What a code generator can emit, as the fusion passes ask it.
pub trait EmitterReach: std::fmt::Debug + Send + Sync {
    /// A short name for logs (`xla-cpu`, `hloc`).
    fn name(&self) -> &str;

    /// The code generator's switches.
    fn rules(&self) -> &EmitterRules;

    /// `Ok` when one kernel of `candidate` can be emitted; otherwise the first member
    /// that keeps it from being one. Called for every candidate a pass is about to form,
    /// so it must be cheap (a walk over the members).
    fn can_emit(&self, candidate: &Candidate<'_>) -> Result<(), Unemittable>;

    /// The exact answer for a candidate a pass is about to form (after [`EmitterReach::can_emit`]
    /// and the cost model accepted it): a code generator whose reach depends on how the
    /// members index each other, not only on which ops they are, runs its emitter here on
    /// the kernel as it would be formed, so no fusion it cannot take is ever formed.
    /// `module` holds `candidate.comp` and the computations its members call. Called once
    /// per fusion formed (or grown), not for every candidate considered; XLA's reaches
    /// need no more than [`EmitterReach::can_emit`].
    fn confirm(&self, module: &Module, candidate: &Candidate<'_>) -> Result<(), Unemittable> {
        let _ = module;
        let _ = candidate;
        Ok(())
    }

    /// Whether the passes rewrite ops into the forms this code generator's fusions take
    /// before fusing (XLA:CPU's: concatenates as pads, canonical gathers, unit reshapes as
    /// reductions, dots with a vector operand as multiplies and sums) and add the copies
    /// its shape inference needs inside fusions ([`crate::xla_cpu::select_predicate_needs_copy`]).
    fn xla_cpu_forms(&self) -> bool {
        false
    }
}
