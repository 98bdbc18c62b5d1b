//! Call-graph flattening: a computation called from several sequential call sites
//! (`call`, `while`, `conditional`) gets one copy per extra site, so that every such
//! computation has exactly one caller (later passes may then change a callee for its
//! caller alone). Computations applied elementwise (`to_apply` of reduce, sort, map, ...)
//! may stay shared. Copies get fresh computation and instruction names.

use hlo::attrs::AttrValue;
use hlo::ir::{call_graph, edit};
use hlo::ir::{CompId, InstrId, Module};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The flattener (`flatten-call-graph`).
#[derive(Debug, Default)]
pub struct FlattenCallGraph;

fn is_sequential(op: Opcode) -> bool {
    matches!(op, Opcode::Call | Opcode::While | Opcode::Conditional)
}

impl Pass for FlattenCallGraph {
    fn name(&self) -> &str {
        "flatten-call-graph"
    }

    fn description(&self) -> &str {
        "clones computations called from several call/while/conditional sites so each has one caller"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let mut changed = false;
        // Callers first: cloning a caller adds call sites to its callees, handled later.
        let mut order = call_graph::callees_first(module);
        order.reverse();
        let mut k = 0;
        while k < order.len() {
            let target = order[k];
            k += 1;
            if target == module.entry {
                continue;
            }
            let sites: Vec<(CompId, InstrId)> = call_graph::call_sites(module)[target.index()]
                .iter()
                .copied()
                .filter(|&(c, i)| is_sequential(module.computation(c).instr(i).opcode))
                .collect();
            for &(caller, instr) in sites.iter().skip(1) {
                let mut copy = module.computation(target).clone();
                copy.name = names.fresh(&copy.name);
                for i in &mut copy.instrs {
                    i.name = names.fresh(&i.name);
                }
                let new_id = module.add_computation(copy);
                let site = module.computation_mut(caller).instr_mut(instr);
                // Only the first reference to `target` on this instruction moves (a
                // conditional may name the same branch twice: each gets its own copy).
                let mut moved = false;
                for a in &mut site.attrs {
                    match &mut a.value {
                        AttrValue::Computation(c) if *c == target && !moved => {
                            *c = new_id;
                            moved = true;
                        }
                        AttrValue::Computations(cs) => {
                            for c in cs.iter_mut() {
                                if *c == target && !moved {
                                    *c = new_id;
                                    moved = true;
                                }
                            }
                        }
                        _ => {}
                    }
                }
                order.push(new_id);
                changed = true;
            }
        }
        if changed {
            call_graph::sort_computations(module);
        }
        Ok(changed)
    }
}
