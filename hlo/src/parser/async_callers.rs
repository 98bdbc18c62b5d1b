//! One async-start per wrapped computation, as XLA's parser requires: the wrapped
//! computation of an async chain belongs to that chain (its async-update/-done take the
//! start's `calls=`), so a second async-start naming it would share one computation
//! between two chains. XLA rejects the module ("Computation X is called by more than one
//! async op"); the short forms (`custom-call-start`, ...) each generate their own.

use std::collections::HashSet;

use super::{PResult, Parser};
use crate::ir::CompId;
use crate::opcode::Opcode;

impl<'a> Parser<'a> {
    /// Errors at the second async-start (in text order within each computation, the
    /// computations in text order) whose `calls=` names a computation an earlier one
    /// already wraps.
    pub(super) fn check_async_callers(&self) -> PResult<()> {
        let mut wrapped: HashSet<CompId> = HashSet::new();
        for (ci, comp) in self.comps.iter().enumerate() {
            let cid = CompId::from_index(ci);
            for (iid, instr) in comp.instructions() {
                if instr.opcode != Opcode::AsyncStart {
                    continue;
                }
                let Some(called) = instr.calls() else {
                    continue;
                };
                if !wrapped.insert(called) {
                    let at = self.source_map.offset(cid, iid).unwrap_or(0);
                    let name = self
                        .comps
                        .get(called.index())
                        .map_or("", |c| c.name.as_str());
                    return Err(self.error_at(
                        at,
                        format!(
                            "computation `{name}` is called by more than one async op (each async-start wraps its own computation)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
