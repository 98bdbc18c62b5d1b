//! Which computation a `fusion`, `call` or async op runs, and where an async chain starts.

use hlo::{CompId, InstrId, Module, Opcode};

use crate::IndexingError;

/// The computation instruction `id` of `comp` calls (`calls=`, or `to_apply=` for a
/// `call`); [`IndexingError::NotAFusion`] when it calls none.
pub(crate) fn called(module: &Module, comp: CompId, id: InstrId) -> Result<CompId, IndexingError> {
    let instr = module.computation(comp).instr(id);
    instr
        .calls()
        .or_else(|| instr.to_apply())
        .filter(|c| module.get_computation(*c).is_some())
        .ok_or_else(|| IndexingError::NotAFusion(instr.name().to_string()))
}

/// The `async-start` of an async chain ending at (or passing through) `id`: the
/// instruction whose operands the wrapped computation's parameters stand for.
pub(crate) fn async_start(module: &Module, comp: CompId, mut id: InstrId) -> InstrId {
    let c = module.computation(comp);
    for _ in 0..c.instruction_count() {
        let i = c.instr(id);
        if i.opcode() == Opcode::AsyncStart {
            break;
        }
        match i.operand(0) {
            Some(op) => id = op,
            None => break,
        }
    }
    id
}
