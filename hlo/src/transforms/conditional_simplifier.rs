//! Conditional simplification: a conditional whose branch is known — a constant
//! predicate or branch index (an out-of-range index selects the last branch, as XLA
//! defines), or a single branch — is replaced by that branch's body, inlined. Branch
//! computations left without callers are removed.

use super::util;
use crate::ir::{InstrId, Module};
use crate::literal::ArrayData;
use crate::opcode::Opcode;
use crate::pass::{Pass, PassError};

/// The pass (`conditional-simplifier`).
#[derive(Debug, Default)]
pub struct ConditionalSimplifier;

impl Pass for ConditionalSimplifier {
    fn name(&self) -> &str {
        "conditional-simplifier"
    }

    fn description(&self) -> &str {
        "inlines the taken branch of a conditional with a constant selector or a single branch"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = util::NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let comp = &module.computations[ci];
            let picks: Vec<(InstrId, usize)> = comp
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Conditional)
                .filter_map(|(id, i)| Some((id, taken_branch(comp, id, i)?)))
                .collect();
            for (id, branch) in picks {
                let comp = &module.computations[ci];
                let i = comp.instr(id);
                let Some(branches) = i.branch_computations() else {
                    continue;
                };
                let Some(&callee) = branches.get(branch) else {
                    continue;
                };
                let Some(&arg) = i.operands.get(branch + 1) else {
                    continue;
                };
                if callee.index() == ci {
                    continue;
                }
                let body = module.computations[callee.index()].clone();
                let comp = &mut module.computations[ci];
                let root = util::clone_body_into(&mut names, &body, comp, &[arg]);
                util::replace_uses(comp, id, root);
                util::remove_instructions(comp, &std::iter::once(id).collect());
                util::repair_order(comp);
                changed = true;
            }
        }
        if changed {
            util::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

/// The branch a conditional takes whatever its inputs, if known.
fn taken_branch(
    comp: &crate::ir::Computation,
    _id: InstrId,
    i: &crate::ir::Instruction,
) -> Option<usize> {
    let n = i.branch_computations()?.len();
    if n == 1 {
        return Some(0);
    }
    let sel = comp.instr(*i.operands.first()?);
    if sel.opcode != Opcode::Constant {
        return None;
    }
    let a = sel.literal()?.as_array()?;
    Some(match a.data() {
        // pred: true takes the first (true) branch.
        ArrayData::Pred(v) => usize::from(!*v.first()?),
        ArrayData::S32(v) => {
            let k = *v.first()?;
            if k < 0 || k as usize >= n {
                n - 1
            } else {
                k as usize
            }
        }
        _ => return None,
    })
}
