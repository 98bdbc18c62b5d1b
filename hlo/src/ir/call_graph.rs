//! Call-graph queries and edits: which computations are reachable, who calls whom,
//! callees-first order, and removing or reordering computations with every reference
//! renumbered.

use crate::attrs::AttrValue;
use crate::ir::{CompId, Computation, InstrId, Module};

/// Computations reachable from the entry through called computations.
pub fn reachable_computations(module: &Module) -> Vec<bool> {
    let mut reach = vec![false; module.computations.len()];
    let mut stack = vec![module.entry];
    reach[module.entry.index()] = true;
    while let Some(c) = stack.pop() {
        for (_, i) in module.computation(c).instructions() {
            for callee in i.called_computations_iter() {
                if callee.index() < reach.len() && !reach[callee.index()] {
                    reach[callee.index()] = true;
                    stack.push(callee);
                }
            }
        }
    }
    reach
}

/// Removes the computations whose `keep` entry is false, renumbering every computation
/// reference. Returns how many were removed.
pub fn remove_computations(module: &mut Module, keep: &[bool]) -> usize {
    let order: Vec<CompId> = (0..module.computations.len())
        .filter(|&i| keep.get(i).copied().unwrap_or(true))
        .map(CompId::from_index)
        .collect();
    let removed = module.computations.len() - order.len();
    if removed > 0 {
        permute_computations(module, &order);
    }
    removed
}

/// Keeps exactly the computations of `order`, in that order, renumbering every
/// computation reference (references to dropped computations must not remain).
pub fn permute_computations(module: &mut Module, order: &[CompId]) {
    let mut remap: Vec<Option<CompId>> = vec![None; module.computations.len()];
    for (new, old) in order.iter().enumerate() {
        remap[old.index()] = Some(CompId::from_index(new));
    }
    let map = |c: &mut CompId| {
        if let Some(Some(n)) = remap.get(c.index()) {
            *c = *n;
        }
    };
    let mut slots: Vec<Option<Computation>> = std::mem::take(&mut module.computations)
        .into_iter()
        .map(Some)
        .collect();
    module.computations = order
        .iter()
        .filter_map(|c| slots.get_mut(c.index()).and_then(Option::take))
        .collect();
    for c in &mut module.computations {
        for i in &mut c.instrs {
            for a in &mut i.attrs {
                match &mut a.value {
                    AttrValue::Computation(c) => map(c),
                    AttrValue::Computations(cs) => cs.iter_mut().for_each(map),
                    _ => {}
                }
            }
        }
    }
    map(&mut module.entry);
}

/// Reorders the computations so that every callee comes before its callers (the order
/// the text format needs), keeping the existing order where it already does.
pub fn sort_computations(module: &mut Module) {
    let n = module.computations.len();
    let mut state = vec![0u8; n];
    let mut out = Vec::with_capacity(n);
    for start in 0..n {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        let callees = |c: usize| -> Vec<CompId> {
            let mut v: Vec<CompId> = module.computations[c]
                .instructions()
                .flat_map(|(_, i)| i.called_computations())
                .filter(|c| c.index() < n)
                .collect();
            v.reverse();
            v
        };
        let mut stack = vec![(start, callees(start))];
        while let Some((c, pending)) = stack.last_mut() {
            match pending.pop() {
                Some(d) if state[d.index()] == 0 => {
                    state[d.index()] = 1;
                    let cs = callees(d.index());
                    stack.push((d.index(), cs));
                }
                Some(_) => {}
                None => {
                    out.push(CompId::from_index(*c));
                    stack.pop();
                }
            }
        }
    }
    if out.iter().enumerate().any(|(i, c)| c.index() != i) {
        permute_computations(module, &out);
    }
}

/// Removes computations no longer reachable from the entry. Returns how many.
pub fn remove_unreachable_computations(module: &mut Module) -> usize {
    let keep = reachable_computations(module);
    remove_computations(module, &keep)
}

/// Every (caller computation, instruction) that calls each computation.
pub fn call_sites(module: &Module) -> Vec<Vec<(CompId, InstrId)>> {
    let mut sites = vec![Vec::new(); module.computations.len()];
    for (cid, c) in module.computations() {
        for (iid, i) in c.instructions() {
            for callee in i.called_computations_iter() {
                if let Some(v) = sites.get_mut(callee.index()) {
                    v.push((cid, iid));
                }
            }
        }
    }
    sites
}

/// Computations in post order of the call graph from the entry (callees first).
pub fn callees_first(module: &Module) -> Vec<CompId> {
    let n = module.computations.len();
    let mut state = vec![0u8; n];
    let mut out = Vec::new();
    let mut stack: Vec<(CompId, Vec<CompId>)> = Vec::new();
    let callees = |c: CompId| -> Vec<CompId> {
        let mut v: Vec<CompId> = module
            .computation(c)
            .instructions()
            .flat_map(|(_, i)| i.called_computations())
            .filter(|c| c.index() < n)
            .collect();
        v.reverse();
        v
    };
    state[module.entry.index()] = 1;
    stack.push((module.entry, callees(module.entry)));
    while let Some((c, pending)) = stack.last_mut() {
        match pending.pop() {
            Some(d) if state[d.index()] == 0 => {
                state[d.index()] = 1;
                let cs = callees(d);
                stack.push((d, cs));
            }
            Some(_) => {}
            None => {
                state[c.index()] = 2;
                out.push(*c);
                stack.pop();
            }
        }
    }
    out
}
