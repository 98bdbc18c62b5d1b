//! The rules of asynchronous chains: a chain `async-start -> async-update* -> async-done`
//! shares one wrapped computation; each start and update has exactly one user, the next
//! step of its chain; an op with its own -start/-done pair (`copy-start`, `all-reduce-start`,
//! `send`, ...) is not wrapped.

use super::errors::Sink;
use crate::ir::{CompId, Computation, InstrId, Instruction, Module};
use crate::opcode::Opcode;

/// Opcodes with dedicated async pairs (`all-reduce-start`, `copy-start`, `send`, ...),
/// which must not be wrapped in `async-start`.
fn has_own_async_pair(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::AllReduce
            | Opcode::AllGather
            | Opcode::CollectivePermute
            | Opcode::Copy
            | Opcode::Send
            | Opcode::Recv
    )
}

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
                if has_own_async_pair(root) {
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
        match instr.operand(0).and_then(|o| comp.get(o)) {
            Some(prev) if matches!(prev.opcode(), Opcode::AsyncStart | Opcode::AsyncUpdate) => {
                if prev.calls() != calls {
                    sink.at(
                        cid,
                        id,
                        format!(
                            "{op} calls another computation than its operand `{}`",
                            prev.name()
                        ),
                    );
                }
            }
            _ => sink.at(
                cid,
                id,
                format!("{op}'s operand must be an async-start or async-update"),
            ),
        }
    }
    if matches!(op, Opcode::AsyncStart | Opcode::AsyncUpdate) {
        let users = instr.users();
        let next_ok = |u: &InstrId| {
            comp.get(*u).is_some_and(|ui| {
                matches!(ui.opcode(), Opcode::AsyncUpdate | Opcode::AsyncDone)
                    && ui.operands().len() == 1
            })
        };
        let is_root = comp.root() == id;
        if users.len() != 1 || is_root || !next_ok(&users[0]) {
            sink.at(
                cid,
                id,
                format!(
                    "{op} must have exactly one user, an async-update or async-done (it has {}{})",
                    users.len(),
                    if is_root { " and is the root" } else { "" }
                ),
            );
        }
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
