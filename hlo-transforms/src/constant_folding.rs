//! Constant folding through the reference evaluator: an instruction whose operands are
//! all constants is evaluated and replaced by a constant, in def-before-use order (so
//! chains fold). Not folded:
//!
//! - results with more than [`ConstantFolding::max_elements`] elements (default 65536),
//!   so large constants are not materialized; broadcasts and iotas (XLA does not fold
//!   them either: they are cheaper than the constant they would become);
//! - instructions with side effects, `rng`, control flow (`while`, `conditional`,
//!   `call`), custom calls, tuples and tuple-shaped results, zero-operand instructions;
//! - operands whose literals were elided (`{...}`), and splat operands (one value written
//!   for every element) of more than `max_elements` elements, which evaluating would
//!   expand;
//! - anything the evaluator refuses (an unsupported op is left as it is).

use hlo::ir::edit;
use hlo::ir::{Instruction, Module};
use hlo::literal::Literal;
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The pass (`constant-folding`).
#[derive(Debug)]
pub struct ConstantFolding {
    /// Largest result (in elements) that is folded.
    pub max_elements: i64,
}

impl Default for ConstantFolding {
    fn default() -> ConstantFolding {
        ConstantFolding {
            max_elements: 1 << 16,
        }
    }
}

fn foldable_opcode(op: Opcode) -> bool {
    !matches!(
        op,
        Opcode::Constant
            | Opcode::Parameter
            | Opcode::Broadcast
            | Opcode::Iota
            | Opcode::Rng
            | Opcode::RngBitGenerator
            | Opcode::RngGetAndUpdateState
            | Opcode::While
            | Opcode::Conditional
            | Opcode::Call
            | Opcode::CustomCall
            | Opcode::Tuple
            | Opcode::Fusion
            | Opcode::AfterAll
    ) && !op.is_async()
}

impl Pass for ConstantFolding {
    fn name(&self) -> &str {
        "constant-folding"
    }

    fn description(&self) -> &str {
        "evaluates instructions whose operands are all constants (results up to 65536 elements)"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        // Called computations (reducers, comparators) are needed to evaluate; a scratch
        // copy of the module holds one small computation per folded instruction.
        let mut scratch: Option<Module> = None;
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let order = module.computations[ci].def_before_use_order().into_owned();
            let mut comp_changed = false;
            for id in order {
                let comp = &module.computations[ci];
                let instr = comp.instr(id);
                if !foldable_opcode(instr.opcode)
                    || instr.operands.is_empty()
                    || !instr.shape.is_array()
                    || instr
                        .shape
                        .element_count()
                        .map_or(true, |n| n > self.max_elements)
                    || edit::has_side_effect(module, instr)
                    || !instr.control_predecessors().is_empty()
                {
                    continue;
                }
                // A splat operand above the size limit is not folded: evaluating would
                // expand its elements (listed constants are already stored in full).
                let all_constant = instr.operands.iter().all(|&o| {
                    let op = comp.instr(o);
                    op.opcode == Opcode::Constant
                        && op.literal().is_some_and(|l| {
                            !l.is_elided()
                                && l.as_array().is_none_or(|a| {
                                    !a.is_splat()
                                        || i64::try_from(a.element_count())
                                            .is_ok_and(|n| n <= self.max_elements)
                                })
                        })
                });
                if !all_constant {
                    continue;
                }
                // One computation: copies of the constant operands, then the instruction.
                let mut b = hlo::ir::ComputationBuilder::new(names.fresh("constant_folding"));
                let mut ops = Vec::new();
                let mut seen: Vec<(hlo::ir::InstrId, hlo::ir::InstrId)> = Vec::new();
                for &o in &instr.operands {
                    if let Some(&(_, n)) = seen.iter().find(|(k, _)| *k == o) {
                        ops.push(n);
                        continue;
                    }
                    let mut c = comp.instr(o).clone();
                    c.users.clear();
                    c.attrs.clear();
                    let n = b.add(c);
                    seen.push((o, n));
                    ops.push(n);
                }
                let mut copy = instr.clone();
                copy.users.clear();
                copy.operands = ops;
                copy.attrs
                    .retain(|a| a.name != hlo::attrs::AttrName::ControlPredecessors);
                let root = b.add(copy);
                let Ok(tmp) = b.build(Some(root)) else {
                    continue;
                };
                let scratch = scratch.get_or_insert_with(|| module.clone());
                let tmp_id = scratch.add_computation(tmp);
                let value = hlo_eval::Evaluator::new(scratch).call(tmp_id, Vec::new());
                scratch.computations.pop();
                let lit = match value {
                    Ok(l @ Literal::Array(_)) => l,
                    Ok(_) => continue,
                    Err(e) => {
                        log::debug!(target: "hlo::pass::constant_folding",
                            "not folding `{}`: {e}",
                            instr.name
                        );
                        continue;
                    }
                };
                let shape = (*instr.shape).clone();
                let name = names.fresh(&instr.name);
                let comp = &mut module.computations[ci];
                let c = edit::add(comp, Instruction::constant(name, shape, lit));
                edit::replace_uses(comp, id, c);
                comp_changed = true;
            }
            if comp_changed {
                changed = true;
                edit::repair_order(&mut module.computations[ci]);
            }
        }
        if changed {
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_cap_is_respected() {
        let text = "HloModule m\nENTRY e {\n  a = s32[4] constant({1, 2, 3, 4})\n  ROOT n = s32[4] negate(a)\n}\n";
        let mut m = hlo::parse_module(text).unwrap();
        let mut small = ConstantFolding { max_elements: 3 };
        assert!(!small.run(&mut m).unwrap());
        let mut big = ConstantFolding { max_elements: 4 };
        assert!(big.run(&mut m).unwrap());
        assert_eq!(m.entry().root_instr().opcode(), Opcode::Constant);
    }
}
