//! The rules of asynchronous chains: a chain `async-start -> async-update* -> async-done`
//! calls one wrapped computation (two chains may call the same one); each step's state
//! reaches the next step's operand 0 directly or through ops that pass it on (tuples,
//! copies, barriers, metadata custom calls, while loops), and each start and update has
//! exactly one user; an op with its own -start/-done pair (`copy-start`,
//! `all-reduce-start`, `send`, ...) is not wrapped.

use super::errors::Sink;
use crate::ir::async_link::{is_metadata_custom_call, trace_async_link, AsyncLink};
use crate::ir::{CompId, Computation, InstrId, Instruction, Module};
use crate::opcode::Opcode;

pub(super) fn check(
    module: &Module,
    cid: CompId,
    comp: &Computation,
    id: InstrId,
    instr: &Instruction,
    sink: &mut Sink<'_>,
) {
    let op = instr.opcode();
    let calls = instr.calls();
    match calls.and_then(|c| module.get_computation(c)) {
        None => {
            sink.at(
                cid,
                id,
                format!("{op} needs calls= naming the wrapped computation"),
            );
            return;
        }
        Some(wrapped) => {
            if op == Opcode::AsyncStart {
                let root = wrapped.root_instr().opcode();
                if root.has_native_async_form() {
                    sink.at(
                        cid,
                        id,
                        format!(
                            "async-start wraps {root}, which has its own asynchronous form ({root}-start/-done)"
                        ),
                    );
                }
            }
        }
    }
    if matches!(op, Opcode::AsyncUpdate | Opcode::AsyncDone) {
        // The previous link, through tuples, copies, barriers, metadata custom calls and
        // while loops; none found is accepted (the state comes from where the walk
        // cannot see).
        match previous_link(module, cid, instr.operand(0), &[], 0) {
            Some((pc, p)) => {
                let prev = module.computation(pc).instr(p);
                if prev.calls() != calls {
                    sink.at(
                        cid,
                        id,
                        format!(
                            "{op} calls another computation than the step `{}` of its chain",
                            prev.name()
                        ),
                    );
                }
            }
            None => {
                if let Some(d) = instr
                    .operand(0)
                    .and_then(|o| comp.get(o))
                    .filter(|d| d.opcode() == Opcode::AsyncDone)
                {
                    sink.at(
                        cid,
                        id,
                        format!(
                            "{op}'s operand 0 `{}` is an async-done, not the state of a chain",
                            d.name()
                        ),
                    );
                }
            }
        }
    }
    if matches!(op, Opcode::AsyncStart | Opcode::AsyncUpdate) {
        // One user: the next step (this state as its operand 0), or an op that passes
        // the state on.
        let users = instr.users();
        let next_ok = |u: &InstrId| {
            comp.get(*u).is_some_and(|ui| match ui.opcode() {
                Opcode::AsyncUpdate | Opcode::AsyncDone => ui.operand(0) == Some(id),
                Opcode::Tuple | Opcode::Copy | Opcode::OptimizationBarrier | Opcode::While => true,
                Opcode::CustomCall => is_metadata_custom_call(ui),
                _ => false,
            })
        };
        let is_root = comp.root() == id;
        if users.len() != 1 || is_root || !next_ok(&users[0]) {
            sink.at(
                cid,
                id,
                format!(
                    "{op} must have exactly one user, the next step of its chain (it has {}{})",
                    users.len(),
                    if is_root { " and is the root" } else { "" }
                ),
            );
        }
    }
}

/// The async-start or async-update whose state `operand` of computation `cid` carries
/// (element `within` of it): through pass-through ops, and from a while body's
/// parameter to the init of each loop that runs the body (the first found).
fn previous_link(
    module: &Module,
    cid: CompId,
    operand: Option<InstrId>,
    within: &[i64],
    depth: usize,
) -> Option<(CompId, InstrId)> {
    let comp = module.get_computation(cid)?;
    let limit = comp.instruction_count() + 1;
    match trace_async_link(|i| comp.get(i), operand?, within, limit, true) {
        AsyncLink::Found(p) => Some((cid, p)),
        AsyncLink::Parameter { number: 0, path } if depth < module.computation_count() => {
            module.computations().find_map(|(caller_id, caller)| {
                caller.instructions().find_map(|(_, w)| {
                    (w.opcode() == Opcode::While && w.while_body() == Some(cid))
                        .then(|| previous_link(module, caller_id, w.operand(0), &path, depth + 1))
                        .flatten()
                })
            })
        }
        _ => None,
    }
}

/// The `-done` of a legacy asynchronous pair's start.
fn legacy_done(op: Opcode) -> Option<Opcode> {
    Some(match op {
        Opcode::CopyStart => Opcode::CopyDone,
        Opcode::AllReduceStart => Opcode::AllReduceDone,
        Opcode::AllGatherStart => Opcode::AllGatherDone,
        Opcode::CollectivePermuteStart => Opcode::CollectivePermuteDone,
        _ => return None,
    })
}

/// The legacy asynchronous pairs (`copy-start`/`copy-done`, `all-reduce-start`,
/// `all-gather-start`, `collective-permute-start`): a start has exactly one user, its
/// `-done`, and a `-done` takes its start. (`send`/`recv` are not held to this: pipelined
/// loops pass them through tuples.)
pub(super) fn check_legacy_pair(
    cid: CompId,
    comp: &Computation,
    id: InstrId,
    instr: &Instruction,
    sink: &mut Sink<'_>,
) {
    let op = instr.opcode();
    if let Some(done) = legacy_done(op) {
        let users = instr.users();
        let ok = users.len() == 1 && comp.get(users[0]).is_some_and(|u| u.opcode() == done);
        if !ok {
            sink.at(
                cid,
                id,
                format!(
                    "{op} instruction requires one consumer, a {done}, found {}",
                    users.len()
                ),
            );
        }
    }
    let start = [
        Opcode::CopyStart,
        Opcode::AllReduceStart,
        Opcode::AllGatherStart,
        Opcode::CollectivePermuteStart,
    ]
    .into_iter()
    .find(|&s| legacy_done(s) == Some(op));
    if let Some(start) = start {
        if let Some(p) = instr.operand(0).and_then(|o| comp.get(o)) {
            if p.opcode() != start {
                sink.at(
                    cid,
                    id,
                    format!(
                        "The operand of a {op} instruction needs to be {start}, found {}",
                        p.opcode()
                    ),
                );
            }
        }
    }
}
