//! The while loops a pass may give new state elements: shared by the passes that hoist
//! work out of a loop body and pass it in as loop state (`while-loop-invariant-code-motion`,
//! `hoist-loop-invariant-dots`). Appending an element to the state is safe only when
//! nothing else sees the state's tuple shape: the body and condition are called by this
//! loop only (run `flatten-call-graph` first), the body's root is a tuple, and the loop,
//! the body parameter and the condition parameter are read through get-tuple-elements
//! only.

use hlo::ir::{CompId, Computation, InstrId, Module};
use hlo::Opcode;

/// Every while loop of the module, as (computation, instruction).
pub fn while_loops(module: &Module) -> Vec<(CompId, InstrId)> {
    module
        .computations()
        .flat_map(|(cid, c)| {
            c.instructions()
                .filter(|(_, i)| i.opcode == Opcode::While)
                .map(move |(id, _)| (cid, id))
        })
        .collect()
}

/// Whether every user of `id` in `c` is a get-tuple-element.
pub fn only_gtes(c: &Computation, id: InstrId) -> bool {
    c.instr(id)
        .users
        .iter()
        .all(|&u| c.instr(u).opcode == Opcode::GetTupleElement)
}

/// A loop whose state may grow: its body and condition and their parameters.
#[derive(Debug, Clone, Copy)]
pub struct ExtendableLoop {
    /// The loop's body computation and its parameter.
    pub body: CompId,
    pub body_param: InstrId,
    /// The loop's condition computation and its parameter.
    pub cond: CompId,
    pub cond_param: InstrId,
}

/// Loop `wid` of computation `cid`, when its state may gain elements (see the module
/// doc); `sites` are the call sites of every computation (`call_graph::call_sites`).
pub fn extendable_loop(
    module: &Module,
    sites: &[Vec<(CompId, InstrId)>],
    cid: CompId,
    wid: InstrId,
) -> Option<ExtendableLoop> {
    let c = module.computation(cid);
    let w = c.instr(wid);
    let (cond, body) = (w.while_condition()?, w.while_body()?);
    if sites[cond.index()].len() != 1 || sites[body.index()].len() != 1 || cond == body {
        return None;
    }
    if c.root == wid || !only_gtes(c, wid) || !w.shape().is_tuple() {
        return None;
    }
    let (b, k) = (module.computation(body), module.computation(cond));
    let (body_param, cond_param) = (*b.params.first()?, *k.params.first()?);
    let root = b.root_instr();
    if root.opcode != Opcode::Tuple || root.operands.len() != w.shape().tuple_shapes().len() {
        return None;
    }
    if !only_gtes(b, body_param) || !only_gtes(k, cond_param) {
        return None;
    }
    Some(ExtendableLoop {
        body,
        body_param,
        cond,
        cond_param,
    })
}
