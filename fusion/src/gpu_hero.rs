//! The hero of a GPU kernel with an epilogue: the one instruction whose emitter shapes the
//! kernel (a reduce, a transpose), with elementwise ops over it computed at the output
//! index after it, as XLA's emitters take a hero and its epilogue.

use hlo::InstrId;

/// The hero (an instruction `is_hero` accepts) that `root` is, or that `root`'s
/// elementwise ops read at their own index (the only hero reached from `root`, and only
/// through elementwise ops of `root`'s dimensions, so that its value at the output index
/// is all they need); `None` otherwise.
pub fn hero_under_epilogue(
    c: &hlo::Computation,
    root: InstrId,
    is_hero: impl Fn(&hlo::Instruction) -> bool,
) -> Option<InstrId> {
    use std::collections::HashMap;
    let dims = c.instr(root).shape().as_array()?.dims().to_vec();
    // Which instructions reach a reduce, by a walk from the root.
    fn reaches(
        c: &hlo::Computation,
        id: InstrId,
        is_hero: &dyn Fn(&hlo::Instruction) -> bool,
        memo: &mut HashMap<InstrId, bool>,
        found: &mut Vec<InstrId>,
    ) -> bool {
        if let Some(&r) = memo.get(&id) {
            return r;
        }
        let instr = c.instr(id);
        let r = if is_hero(instr) {
            if !found.contains(&id) {
                found.push(id);
            }
            true
        } else {
            let mut any = false;
            for &o in instr.operands() {
                any |= reaches(c, o, is_hero, memo, found);
            }
            any
        };
        memo.insert(id, r);
        r
    }
    let (mut memo, mut found) = (HashMap::new(), Vec::new());
    reaches(c, root, &is_hero, &mut memo, &mut found);
    let [hero] = found[..] else {
        return None;
    };
    // Every instruction on a path to the hero is elementwise at the root's index.
    let on_path_ok = memo
        .iter()
        .filter(|(&id, &r)| r && id != hero)
        .all(|(&id, _)| {
            let i = c.instr(id);
            i.opcode().is_elementwise() && i.shape().as_array().is_some_and(|a| a.dims() == dims)
        });
    on_path_ok.then_some(hero)
}
