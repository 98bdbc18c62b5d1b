//! Collectives that repeat: two all-gathers (all-reduces, reduce-scatters) of the same
//! value over the same groups, dimension and reducer give the same result, so the later
//! one's users read the earlier one and it goes. Resharding is decided per user, so a
//! value two users need gathered is gathered twice (an FSDP step gathers each weight for
//! the forward dot and again for the backward one, as XLA's CSE would merge); without
//! this the combiner joined both copies and moved the weight twice.

use std::collections::HashSet;

use hlo::ir::edit;
use hlo::{CompId, InstrId, Module};

use crate::combine::kind_of;

/// Removes the repeated collectives of every computation of `m`; how many went.
pub(crate) fn dedupe_collectives(m: &mut Module) -> usize {
    let mut removed = 0;
    for index in 0..m.computations.len() {
        let id = CompId::from_index(index);
        let comp = m.computation(id);
        let order = comp.def_before_use_order().into_owned();
        let mut seen: Vec<(InstrId, InstrId, String)> = Vec::new();
        let mut repeats: Vec<(InstrId, InstrId)> = Vec::new();
        for i in order {
            let instr = comp.instr(i);
            let Some(k) = kind_of(m, instr) else { continue };
            let key = format!("{k:?} {}", instr.shape());
            let operand = instr.operands()[0];
            match seen.iter().find(|(o, _, s)| *o == operand && *s == key) {
                Some(&(_, first, _)) => repeats.push((i, first)),
                None => seen.push((operand, i, key)),
            }
        }
        if repeats.is_empty() {
            continue;
        }
        removed += repeats.len();
        let comp = &mut m.computations[index];
        let mut dead = HashSet::new();
        for (again, first) in repeats {
            edit::replace_uses(comp, again, first);
            dead.insert(again);
        }
        edit::remove_instructions(comp, &dead);
        edit::repair_order(comp);
    }
    removed
}
