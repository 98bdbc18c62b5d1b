//! The hero of a kernel after priority fusion (a fusion instruction or a single fusible
//! op): what iteration space its emitter runs over, so that multi-output and horizontal
//! fusion only put together kernels one emitter can generate.

use hlo::{Computation, InstrId, Instruction, Module, Opcode};

use crate::ops::{self, OpClass};

/// What one kernel's emitter iterates over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hero {
    /// `(input dims, reduced dims)` of its reduction, if it has one.
    pub reduction: Option<(Vec<i64>, Vec<i64>)>,
    /// Dimensions of its (first) output.
    pub output_dims: Vec<i64>,
    /// Whether it holds a transpose hero.
    pub transpose: bool,
}

impl Hero {
    /// Whether one emitter can run both kernels: equal reductions, a loop over a
    /// reduction's input space, or loops of equal output shape; never a transpose with a
    /// reduction.
    pub fn compatible(&self, other: &Hero) -> bool {
        match (&self.reduction, &other.reduction) {
            (Some(a), Some(b)) => a == b,
            (Some((input, _)), None) => !other.transpose && &other.output_dims == input,
            (None, Some((input, _))) => !self.transpose && &self.output_dims == input,
            (None, None) => self.output_dims == other.output_dims,
        }
    }
}

fn first_dims(s: &hlo::Shape) -> Vec<i64> {
    if s.is_tuple() {
        s.tuple_shapes().first().map(first_dims).unwrap_or_default()
    } else {
        s.dims().to_vec()
    }
}

fn reduction_of(comp: &Computation, i: &Instruction) -> Option<(Vec<i64>, Vec<i64>)> {
    let input = comp.instr(i.operand(0)?).shape().dims().to_vec();
    Some((input, i.dimensions().unwrap_or(&[]).to_vec()))
}

/// The hero of `id` in `comp`, or `None` when it is not a kernel multi-output or
/// horizontal fusion may take (bookkeeping, library calls, unfusible ops, in-place
/// updates, several reduction kinds).
pub fn hero_of(module: &Module, comp: &Computation, id: InstrId) -> Option<Hero> {
    let instr = comp.instr(id);
    let mut hero = Hero {
        reduction: None,
        output_dims: first_dims(instr.shape()),
        transpose: false,
    };
    let mut visit = |c: &Computation, i: &Instruction| -> bool {
        match ops::classify(module, i) {
            OpClass::Loop => true,
            OpClass::Transpose => {
                hero.transpose = true;
                true
            }
            OpClass::Reduction => {
                let r = reduction_of(c, i);
                if hero.reduction.is_some() && hero.reduction != r {
                    return false;
                }
                hero.reduction = r;
                true
            }
            OpClass::Bookkeeping => matches!(
                i.opcode(),
                Opcode::Parameter | Opcode::Constant | Opcode::Tuple | Opcode::GetTupleElement
            ),
            OpClass::InPlace | OpClass::Library | OpClass::Unfusible => false,
        }
    };
    if instr.opcode() == Opcode::Fusion {
        let body = module.get_computation(instr.calls()?)?;
        for (_, i) in body.instructions() {
            if !visit(body, i) {
                return None;
            }
        }
    } else if ops::is_bookkeeping(instr.opcode()) || !visit(comp, instr) {
        return None;
    }
    if hero.reduction.is_some() && hero.transpose {
        return None;
    }
    Some(hero)
}
