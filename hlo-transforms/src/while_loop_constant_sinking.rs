//! While-loop constant sinking: a loop state element that the body passes through
//! unchanged (`root` element k is `get-tuple-element(param, k)`) and whose initial value
//! is a constant is replaced, inside the body and the condition, by a copy of that
//! constant. The state element itself stays (the while-loop simplifier removes it once
//! nothing reads it). Body and condition must be called by this loop only (run
//! `flatten-call-graph` first).

use hlo::ir::{call_graph, edit};
use hlo::ir::{CompId, Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The pass (`while-loop-constant-sinking`).
#[derive(Debug, Default)]
pub struct WhileLoopConstantSinking;

impl Pass for WhileLoopConstantSinking {
    fn name(&self) -> &str {
        "while-loop-constant-sinking"
    }

    fn description(&self) -> &str {
        "replaces loop-invariant constant loop state by constants inside body and condition"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let sites = call_graph::call_sites(module);
        // (condition, body, the constant state elements to sink).
        type Sink = (CompId, CompId, Vec<(usize, Instruction)>);
        let mut work: Vec<Sink> = Vec::new();
        for (_, c) in module.computations() {
            for (_, w) in c.instructions().filter(|(_, i)| i.opcode == Opcode::While) {
                let (Some(cond), Some(body)) = (w.while_condition(), w.while_body()) else {
                    continue;
                };
                if sites[cond.index()].len() != 1 || sites[body.index()].len() != 1 {
                    continue;
                }
                let init = c.instr(w.operands[0]);
                if init.opcode != Opcode::Tuple {
                    continue;
                }
                let b = module.computation(body);
                let consts: Vec<(usize, Instruction)> = (0..init.operands.len())
                    .filter(|&k| invariant(b, k))
                    .filter_map(|k| {
                        let e = c.instr(init.operands[k]);
                        (e.opcode == Opcode::Constant).then(|| (k, e.clone()))
                    })
                    .collect();
                if !consts.is_empty() {
                    work.push((cond, body, consts));
                }
            }
        }
        let mut changed = false;
        for (cond, body, consts) in work {
            for comp_id in [cond, body] {
                let comp = module.computation_mut(comp_id);
                for (k, c) in &consts {
                    changed |= sink(comp, *k, c, comp_id == body, &mut names);
                }
                edit::repair_order(comp);
            }
        }
        Ok(changed)
    }
}

/// True when the body's root passes element `k` of its parameter through unchanged.
pub(crate) fn invariant(body: &Computation, k: usize) -> bool {
    let root = body.root_instr();
    let Some(&p) = body.params.first() else {
        return false;
    };
    root.opcode == Opcode::Tuple
        && root.operands.get(k).is_some_and(|&e| {
            let g = body.instr(e);
            g.opcode == Opcode::GetTupleElement
                && g.operands[0] == p
                && g.tuple_index() == Some(k as i64)
        })
}

/// Replaces the uses of `get-tuple-element(param, k)` by a copy of constant `c`, except
/// the body root's (which passes the element through).
fn sink(
    comp: &mut Computation,
    k: usize,
    c: &Instruction,
    is_body: bool,
    names: &mut edit::NameGen,
) -> bool {
    let Some(&p) = comp.params.first() else {
        return false;
    };
    let gtes: Vec<InstrId> = comp
        .instr(p)
        .users
        .iter()
        .copied()
        .filter(|&g| comp.instr(g).tuple_index() == Some(k as i64))
        .collect();
    let root = if is_body { Some(comp.root) } else { None };
    let mut changed = false;
    for g in gtes {
        let users: Vec<InstrId> = comp
            .instr(g)
            .users
            .iter()
            .copied()
            .filter(|&u| Some(u) != root)
            .collect();
        if users.is_empty() {
            continue;
        }
        let mut copy = c.clone();
        copy.users.clear();
        copy.attrs.clear();
        copy.name = names.fresh(&c.name);
        let new = edit::add(comp, copy);
        for u in users {
            for op in &mut comp.instr_mut(u).operands {
                if *op == g {
                    *op = new;
                }
            }
        }
        comp.recompute_users();
        changed = true;
    }
    changed
}
