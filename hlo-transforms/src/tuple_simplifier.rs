//! Tuple simplification: `get-tuple-element(tuple(a0, ..., an), i)` becomes `ai`, and
//! `tuple(get-tuple-element(t, 0), ..., get-tuple-element(t, n-1))` over all elements of
//! `t` in order becomes `t`. The entry root is kept when replacing it would change the
//! module's result shape (it never does: shapes are equal by construction).

use hlo::ir::edit;
use hlo::ir::{Computation, InstrId, Module};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The tuple simplifier (`tuple-simplifier`).
#[derive(Debug, Default)]
pub struct TupleSimplifier;

impl Pass for TupleSimplifier {
    fn name(&self) -> &str {
        "tuple-simplifier"
    }

    fn description(&self) -> &str {
        "forwards get-tuple-element of tuple and replaces a tuple rebuilding another by that tuple"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut changed = false;
        for comp in &mut module.computations {
            changed |= simplify(comp);
        }
        Ok(changed)
    }
}

/// What `id` is an alias of, if it is a forwarding of another value.
fn forwarded(comp: &Computation, id: InstrId) -> Option<InstrId> {
    let i = comp.instr(id);
    match i.opcode {
        Opcode::GetTupleElement => {
            let t = comp.instr(i.operands[0]);
            let k = usize::try_from(i.tuple_index()?).ok()?;
            if t.opcode == Opcode::Tuple {
                let e = *t.operands.get(k)?;
                (comp.instr(e).shape == i.shape).then_some(e)
            } else {
                None
            }
        }
        Opcode::Tuple => {
            let first = *i.operands.first()?;
            let g = comp.instr(first);
            if g.opcode != Opcode::GetTupleElement {
                return None;
            }
            let src = g.operands[0];
            let same = i.operands.iter().enumerate().all(|(k, &o)| {
                let e = comp.instr(o);
                e.opcode == Opcode::GetTupleElement
                    && e.operands[0] == src
                    && e.tuple_index() == Some(k as i64)
            });
            (same && comp.instr(src).shape == i.shape).then_some(src)
        }
        _ => None,
    }
}

fn simplify(comp: &mut Computation) -> bool {
    let order = comp.def_before_use_order().into_owned();
    let mut changed = false;
    for id in order {
        if let Some(to) = forwarded(comp, id) {
            if to != id {
                edit::replace_uses(comp, id, to);
                changed = true;
            }
        }
    }
    changed
}
