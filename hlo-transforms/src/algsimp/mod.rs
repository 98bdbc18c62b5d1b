//! The algebraic simplifier: local rewrites, one handler per opcode, each rule documented
//! where it is implemented with its floating-point conditions. The rules never change a
//! result beyond what XLA's own `AlgebraicSimplifier` permits; where XLA accepts a change
//! (the sign of a zero, rounding of `exp(a) * exp(b)`), the rule says so.
//!
//! Every handler sees one instruction and returns its replacement (an existing
//! instruction of the same shape, or a new one); the driver redirects the uses and, at the
//! end, removes what became dead. A run repeats sweeps until nothing changes (at most
//! [`MAX_SWEEPS`]).
//!
//! Handlers (opcodes): abs, add, and, bitcast, broadcast, ceil, compare, concatenate,
//! convert, copy, divide, dot, dynamic-slice, dynamic-update-slice, exponential (through
//! multiply), floor, gather, imag, iota, log, maximum, minimum, multiply, negate, not, or,
//! pad, power, real, reduce, remainder, reshape, reverse, round-nearest-afz,
//! round-nearest-even, select, shift-left, shift-right-arithmetic, shift-right-logical,
//! sign, slice, sort, subtract, transpose, xor.

mod elementwise;
mod movement;
pub(crate) mod reduce_dot;
mod rewriter;
pub mod scalar;
mod updates;

use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Module};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;
use rewriter::Rw;

/// Sweeps per run at most (each sweep visits every instruction once).
pub const MAX_SWEEPS: usize = 8;

/// The algebraic simplifier (`algsimp`).
#[derive(Debug, Default)]
pub struct AlgebraicSimplifier;

/// The binary opcode a computation applies to its two scalar parameters, if that is all
/// it does (`add(p0, p1)` or `add(p1, p0)`).
pub(crate) fn reducer_kind(comp: &Computation) -> Option<Opcode> {
    if comp.params.len() != 2 || comp.instruction_count() != 3 {
        return None;
    }
    let root = comp.root_instr();
    let ops = root.operands.as_slice();
    let (p0, p1) = (comp.params[0], comp.params[1]);
    (ops == [p0, p1] || ops == [p1, p0]).then_some(root.opcode)
}

/// Whether `comp` takes two parameters and returns the second (a scatter's overwrite).
fn returns_second(comp: &Computation) -> bool {
    comp.params.len() == 2 && comp.root == comp.params[1]
}

impl Pass for AlgebraicSimplifier {
    fn name(&self) -> &str {
        "algsimp"
    }

    fn description(&self) -> &str {
        "local algebraic rewrites (identities, constant canonicalization, no-op and chained data movement, exact conversions)"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let reducers: Vec<Option<Opcode>> = module.computations.iter().map(reducer_kind).collect();
        let overwrites: Vec<bool> = module.computations.iter().map(returns_second).collect();
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let mut comp_changed = false;
            for _ in 0..MAX_SWEEPS {
                let comp = &mut module.computations[ci];
                let order = comp.def_before_use_order().into_owned();
                let mut sweep = false;
                for id in order {
                    if comp.instr(id).users.is_empty() && comp.root != id {
                        continue;
                    }
                    let mut rw = Rw {
                        comp,
                        names: &mut names,
                        reducers: &reducers,
                        overwrites: &overwrites,
                        current: id,
                    };
                    if let Some(new) = simplify(&mut rw, id) {
                        if new != id {
                            debug_assert!(comp.instr(new).shape.compatible(&comp.instr(id).shape));
                            edit::replace_uses(comp, id, new);
                            sweep = true;
                        }
                    }
                }
                if !sweep {
                    break;
                }
                comp_changed = true;
                edit::repair_order(comp);
            }
            if comp_changed {
                changed = true;
            }
        }
        if changed {
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}

/// The replacement of `id`, if a rule applies.
fn simplify(rw: &mut Rw<'_>, id: InstrId) -> Option<InstrId> {
    let op = rw.opcode(id);
    // Every rule must keep the shape; a rule that cannot is a bug, so check here.
    let new = match op {
        Opcode::Add
        | Opcode::Subtract
        | Opcode::Multiply
        | Opcode::Divide
        | Opcode::Maximum
        | Opcode::Minimum
        | Opcode::And
        | Opcode::Or
        | Opcode::Xor
        | Opcode::Power
        | Opcode::Remainder
        | Opcode::ShiftLeft
        | Opcode::ShiftRightArithmetic
        | Opcode::ShiftRightLogical => elementwise::binary(rw, id),
        Opcode::Negate
        | Opcode::Abs
        | Opcode::Not
        | Opcode::Log
        | Opcode::Floor
        | Opcode::Ceil
        | Opcode::RoundNearestAfz
        | Opcode::RoundNearestEven
        | Opcode::Sign
        | Opcode::Real
        | Opcode::Imag
        | Opcode::Convert
        | Opcode::Copy
        | Opcode::Bitcast => elementwise::unary(rw, id),
        Opcode::Compare => elementwise::compare(rw, id),
        Opcode::Select => elementwise::select(rw, id),
        Opcode::Broadcast
        | Opcode::Reshape
        | Opcode::Transpose
        | Opcode::Slice
        | Opcode::Pad
        | Opcode::Concatenate
        | Opcode::Reverse
        | Opcode::DynamicSlice
        | Opcode::DynamicUpdateSlice
        | Opcode::Gather
        | Opcode::Scatter
        | Opcode::Iota => movement::simplify(rw, id),
        Opcode::Reduce | Opcode::Dot | Opcode::Sort => reduce_dot::simplify(rw, id),
        _ => None,
    }?;
    let ok = rw.shape(new).compatible(rw.shape(id));
    ok.then_some(new)
}
