//! Zero-sized HLO elimination: an instruction producing an array with no elements is
//! replaced by an empty constant of its shape (its value is fully known: there is none).
//! Parameters, constants and instructions with side effects are left alone.

use hlo::ir::edit;
use hlo::ir::{Instruction, Module};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The pass (`zero-sized-hlo-elimination`).
#[derive(Debug, Default)]
pub struct ZeroSizedHloElimination;

impl Pass for ZeroSizedHloElimination {
    fn name(&self) -> &str {
        "zero-sized-hlo-elimination"
    }

    fn description(&self) -> &str {
        "replaces instructions producing empty arrays by empty constants"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let targets: Vec<_> = module.computations[ci]
                .instructions()
                .filter(|(_, i)| {
                    i.shape.is_array()
                        && i.shape.dims().contains(&0)
                        && !i.shape.is_dynamic()
                        && !matches!(i.opcode, Opcode::Parameter | Opcode::Constant)
                        && !edit::has_side_effect(module, i)
                })
                .map(|(id, i)| (id, (*i.shape).clone(), i.name.clone()))
                .collect();
            for (id, shape, name) in targets {
                let Some(ty) = shape.element_type() else {
                    continue;
                };
                let Some(data) = ArrayData::new(ty) else {
                    continue;
                };
                let Some(lit) = ArrayLiteral::new(shape.clone(), data) else {
                    continue;
                };
                let comp = &mut module.computations[ci];
                let c = edit::add(
                    comp,
                    Instruction::constant(names.fresh(&name), shape, Literal::Array(lit)),
                );
                edit::replace_uses(comp, id, c);
                changed = true;
            }
            if changed {
                edit::repair_order(&mut module.computations[ci]);
            }
        }
        if changed {
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}
