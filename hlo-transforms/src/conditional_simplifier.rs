//! Conditional simplification: a conditional whose branch is known — a constant
//! predicate or branch index (an out-of-range index selects the last branch, as XLA
//! defines), or a single branch — is replaced by that branch's body, inlined. Branch
//! computations left without callers are removed.

use hlo::ir::{call_graph, edit};
use hlo::ir::{InstrId, Module};
use hlo::literal::ArrayData;
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

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
        let mut names = edit::NameGen::new(module);
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
                let root = edit::clone_body_into(&mut names, &body, comp, &[arg]);
                edit::replace_uses(comp, id, root);
                edit::remove_instructions(comp, &std::iter::once(id).collect());
                edit::repair_order(comp);
                changed = true;
            }
        }
        if changed {
            call_graph::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

/// The branch a conditional takes whatever its inputs, if known.
fn taken_branch(
    comp: &hlo::ir::Computation,
    _id: InstrId,
    i: &hlo::ir::Instruction,
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
