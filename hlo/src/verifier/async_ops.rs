//! The async rules of seed 001: a chain `async-start -> async-update* -> async-done`
//! shares one wrapped computation; each start and update has exactly one user, the next
//! step of its chain; an op with its own -start/-done pair is not wrapped.

use super::structure::Sink;
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
            sink.at(cid, id, format!("{op} needs calls= naming the wrapped computation"));
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
