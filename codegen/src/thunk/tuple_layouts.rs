//! A tuple's buffers are its operands' buffers (the thunk builder aliases them), so an
//! operand whose layout differs from the tuple's element layout would hand on bytes in the
//! wrong order: a root tuple's output, or a loop state copied byte for byte. XLA's layout
//! assignment never leaves such a tuple; a module written by hand or by another tool may.
//! [`MatchTupleLayouts`] copies each such operand into the element's layout first (a
//! `copy`, which the code generator emits as a transposing kernel).

use hlo::ir::edit::NameGen;
use hlo::ir::Instruction;
use hlo::pass::{Pass, PassError};
use hlo::{InstrId, Module, Opcode, Shape};

/// The pass: see the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct MatchTupleLayouts;

/// Whether two array shapes lay out their elements in the same order (no layout counts
/// as row-major); `false` for tuples.
pub(crate) fn same_layout(a: &Shape, b: &Shape) -> bool {
    matches!((order(a), order(b)), (Some(x), Some(y)) if x == y)
}

/// The minor-to-major order of an array shape, row-major when it has no layout.
fn order(s: &Shape) -> Option<Vec<i64>> {
    let a = s.as_array()?;
    let rank = a.dims().len() as i64;
    Some(
        a.layout()
            .map(|l| l.minor_to_major.clone())
            .unwrap_or_else(|| (0..rank).rev().collect()),
    )
}

impl Pass for MatchTupleLayouts {
    fn name(&self) -> &str {
        "match-tuple-layouts"
    }

    fn description(&self) -> &str {
        "copies a tuple operand whose layout differs from the tuple's element layout into that layout"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        let comps: Vec<_> = module.computations().map(|(id, _)| id).collect();
        for cid in comps {
            // (tuple, operand position, element shape) of each mismatch.
            let mut fixes: Vec<(InstrId, usize, Shape)> = Vec::new();
            let c = module.computation(cid);
            for (tid, t) in c.instructions() {
                if t.opcode() != Opcode::Tuple {
                    continue;
                }
                for (j, (&op, want)) in t
                    .operands()
                    .iter()
                    .zip(t.shape().tuple_shapes())
                    .enumerate()
                {
                    let have = c.instr(op).shape();
                    if let (Some(a), Some(b)) = (order(have), order(want)) {
                        if a != b {
                            fixes.push((tid, j, want.clone()));
                        }
                    }
                }
            }
            for (tid, j, want) in fixes {
                let c = module.computation_mut(cid);
                let op = c.instr(tid).operands()[j];
                let name = names.fresh(&format!("{}.relayout", c.instr(op).name()));
                let copy = Instruction::new(name, Opcode::Copy, want, vec![op]);
                let id = c
                    .add_instruction_before(copy, tid)
                    .map_err(|e| PassError::invalid(self.name(), e.to_string()))?;
                c.set_operand(tid, j, id)
                    .map_err(|e| PassError::invalid(self.name(), e.to_string()))?;
                changed = true;
            }
        }
        Ok(changed)
    }
}
