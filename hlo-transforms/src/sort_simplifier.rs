//! Sort simplification: a multi-operand sort whose results are read only through
//! `get-tuple-element`s drops the operands whose results nobody reads and whose values
//! the comparator ignores (its parameters `2k` and `2k+1` unused). The comparator is
//! copied with those parameters removed. A sort left with one operand produces that
//! array directly.

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::{call_graph, edit};
use hlo::ir::{Computation, InstrId, Module, Payload};
use hlo::pass::{Pass, PassError};
use hlo::shape::Shape;
use hlo::Opcode;

/// The pass (`sort-simplifier`).
#[derive(Debug, Default)]
pub struct SortSimplifier;

impl Pass for SortSimplifier {
    fn name(&self) -> &str {
        "sort-simplifier"
    }

    fn description(&self) -> &str {
        "removes sort operands whose results are unused and that the comparator ignores"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = edit::NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let sorts: Vec<InstrId> = module.computations[ci]
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Sort && i.shape.is_tuple())
                .map(|(id, _)| id)
                .collect();
            for id in sorts {
                changed |= simplify(module, ci, id, &mut names);
            }
        }
        if changed {
            call_graph::remove_unreachable_computations(module);
        }
        Ok(changed)
    }
}

fn simplify(module: &mut Module, ci: usize, id: InstrId, names: &mut edit::NameGen) -> bool {
    let comp = &module.computations[ci];
    let sort = comp.instr(id);
    let n = sort.operands.len();
    if comp.root == id {
        return false;
    }
    let mut used = vec![false; n];
    for &u in &sort.users {
        let ui = comp.instr(u);
        match (ui.opcode, ui.tuple_index()) {
            (Opcode::GetTupleElement, Some(k)) if (k as usize) < n => used[k as usize] = true,
            _ => return false,
        }
    }
    let Some(cmp_id) = sort.to_apply() else {
        return false;
    };
    let cmp = module.computation(cmp_id);
    if cmp.params.len() != 2 * n {
        return false;
    }
    let ignored = |k: usize| {
        cmp.instr(cmp.params[2 * k]).users.is_empty()
            && cmp.instr(cmp.params[2 * k + 1]).users.is_empty()
            && cmp.root != cmp.params[2 * k]
            && cmp.root != cmp.params[2 * k + 1]
    };
    let keep: Vec<usize> = (0..n).filter(|&k| used[k] || !ignored(k)).collect();
    if keep.len() == n || keep.is_empty() {
        return false;
    }
    // The new comparator: the kept parameters renumbered, the others removed.
    let mut new_cmp: Computation = cmp.clone();
    new_cmp.name = names.fresh(&cmp.name);
    let mut params = Vec::new();
    let mut dead = std::collections::HashSet::new();
    for k in 0..n {
        for side in 0..2 {
            let p = cmp.params[2 * k + side];
            if keep.contains(&k) {
                new_cmp.instrs[p.index()].payload = Payload::Parameter(params.len() as i64);
                params.push(p);
            } else {
                dead.insert(p);
            }
        }
    }
    for i in &mut new_cmp.instrs {
        i.name = names.fresh(&i.name);
    }
    new_cmp.order.retain(|i| !dead.contains(i));
    new_cmp.params = params;
    new_cmp.recompute_users();
    let new_cmp_id = module.add_computation(new_cmp);

    let comp = &mut module.computations[ci];
    let sort = comp.instr(id).clone();
    let ops: Vec<InstrId> = keep.iter().map(|&k| sort.operands[k]).collect();
    let shapes: Vec<Shape> = keep
        .iter()
        .map(|&k| sort.shape.tuple_shapes()[k].clone())
        .collect();
    let single = keep.len() == 1;
    let shape = if single {
        shapes[0].clone()
    } else {
        Shape::tuple(shapes)
    };
    let mut new_sort = sort.clone();
    new_sort.users.clear();
    new_sort.name = names.fresh(&sort.name);
    new_sort.operands = ops;
    new_sort.set_shape(shape);
    new_sort.set_attr(AttrName::ToApply, AttrValue::Computation(new_cmp_id));
    let new_id = edit::add(comp, new_sort);
    for &u in &sort.users {
        let Some(k) = comp.instr(u).tuple_index() else {
            continue;
        };
        let pos = keep.iter().position(|&x| x as i64 == k).unwrap_or(0);
        if single {
            edit::replace_uses(comp, u, new_id);
        } else {
            let g = comp.instr_mut(u);
            g.operands = vec![new_id];
            g.set_attr(AttrName::Index, AttrValue::Int(pos as i64));
        }
    }
    comp.recompute_users();
    let dead: std::collections::HashSet<InstrId> = std::iter::once(id)
        .chain(if single {
            sort.users.clone()
        } else {
            Vec::new()
        })
        .collect();
    edit::remove_instructions(comp, &dead);
    edit::repair_order(comp);
    call_graph::sort_computations(module);
    true
}
