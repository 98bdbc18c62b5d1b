//! The verifier's driver: module and computation structure, then every instruction's
//! shape, layout and (for async ops) chain.

use super::async_ops;
use super::errors::{Sink, VerifyError};
use super::infer::{self, check_declared, is_unsupported, same_shape, show, Ctx};
use crate::ir::{CompId, Computation, InstrId, Instruction, Module};
use crate::opcode::Opcode;
use crate::shape::{Shape, UNBOUNDED_SIZE};
use rustc_hash::FxHashMap as FxMap;

pub(super) fn verify_module(module: &Module) -> Vec<VerifyError> {
    let mut sink = Sink::new(module);
    let total: usize = module
        .computations()
        .map(|(_, c)| c.instruction_count())
        .sum();
    let mut names: FxMap<&str, CompId> = FxMap::with_capacity_and_hasher(total, Default::default());
    let mut comp_names: FxMap<&str, ()> =
        FxMap::with_capacity_and_hasher(module.computation_count(), Default::default());
    for (cid, comp) in module.computations() {
        if comp_names.insert(comp.name(), ()).is_some() {
            sink.comp(
                cid,
                format!("computation name `{}` is used twice", comp.name()),
            );
        }
        verify_computation(module, cid, comp, &mut names, &mut sink);
    }
    verify_entry_layout(module, &mut sink);
    sink.errors
}

/// The parameter shapes written in computation signatures match the parameters.
pub(super) fn verify_signatures(
    module: &Module,
    signatures: &[(CompId, Vec<Shape>)],
) -> Vec<VerifyError> {
    let mut sink = Sink::new(module);
    for (cid, shapes) in signatures {
        let Some(comp) = module.get_computation(*cid) else {
            continue;
        };
        if shapes.len() != comp.parameters().len() {
            sink.comp(
                *cid,
                format!(
                    "the signature declares {} parameters but the computation has {}",
                    shapes.len(),
                    comp.parameters().len()
                ),
            );
            continue;
        }
        for (k, (s, &p)) in shapes.iter().zip(comp.parameters()).enumerate() {
            if let Some(pi) = comp.get(p) {
                if !same_shape(s, pi.shape()) {
                    sink.at(
                        *cid,
                        p,
                        format!(
                            "the signature declares parameter {k} as {} but it is {}",
                            show(s),
                            show(pi.shape())
                        ),
                    );
                }
            }
        }
    }
    sink.errors
}

/// The entry computation layout, when written, matches the entry's signature.
fn verify_entry_layout(module: &Module, sink: &mut Sink<'_>) {
    let Some(layout) = module.entry_computation_layout() else {
        return;
    };
    let entry = module.entry();
    let eid = module.entry_id();
    if layout.parameters.len() != entry.parameters().len() {
        sink.comp(
            eid,
            format!(
                "entry_computation_layout has {} parameters but the entry computation has {}",
                layout.parameters.len(),
                entry.parameters().len()
            ),
        );
    } else {
        for (k, (s, &p)) in layout.parameters.iter().zip(entry.parameters()).enumerate() {
            if let Some(pi) = entry.get(p) {
                if !same_shape(s, pi.shape()) {
                    sink.at(
                        eid,
                        p,
                        format!(
                            "entry_computation_layout gives parameter {k} shape {} but it is {}",
                            show(s),
                            show(pi.shape())
                        ),
                    );
                }
            }
        }
    }
    if let Some(root) = entry.get(entry.root()) {
        if !same_shape(&layout.result, root.shape()) {
            sink.comp(
                eid,
                format!(
                    "entry_computation_layout gives result {} but the root returns {}",
                    show(&layout.result),
                    show(root.shape())
                ),
            );
        }
    }
    for s in layout.parameters.iter().chain([&layout.result]) {
        if let Err(m) = check_shape(s) {
            sink.comp(eid, format!("entry_computation_layout: {m}"));
        }
    }
}

/// Position of each live instruction in the order (`usize::MAX` when not live).
fn positions(comp: &Computation) -> Vec<usize> {
    let n = comp.instrs.len();
    let mut pos = vec![usize::MAX; n];
    for (k, &id) in comp.instruction_ids().iter().enumerate() {
        if let Some(p) = pos.get_mut(id.index()) {
            *p = k;
        }
    }
    pos
}

fn verify_computation<'m>(
    module: &'m Module,
    cid: CompId,
    comp: &'m Computation,
    names: &mut FxMap<&'m str, CompId>,
    sink: &mut Sink<'m>,
) {
    let pos = positions(comp);
    let live = |id: InstrId| pos.get(id.index()).is_some_and(|&p| p != usize::MAX);

    if !live(comp.root()) {
        sink.comp(cid, "the root is not an instruction of the computation");
    }
    let mut n_params = 0usize;
    for (k, &p) in comp.parameters().iter().enumerate() {
        match comp.get(p) {
            Some(i) if live(p) && i.parameter_number() == Some(k as i64) => {}
            _ => sink.comp(
                cid,
                format!("parameter {k} is missing or is not `parameter({k})`"),
            ),
        }
    }

    let mut order_broken = false;
    let mut ops: Vec<&'m Shape> = Vec::with_capacity(8);
    for (k, &id) in comp.instruction_ids().iter().enumerate() {
        let Some(instr) = comp.get(id) else {
            sink.comp(
                cid,
                format!("the order lists unknown instruction id {}", id.index()),
            );
            continue;
        };
        if let Some(&other) = names.get(instr.name()) {
            let where_ = if other == cid {
                String::new()
            } else {
                format!(
                    " (also in computation `{}`)",
                    module.computation(other).name()
                )
            };
            sink.at(
                cid,
                id,
                format!("instruction name `{}` is used twice{where_}", instr.name()),
            );
        } else {
            names.insert(instr.name(), cid);
        }
        if instr.opcode() == Opcode::Parameter {
            n_params += 1;
            if instr
                .parameter_number()
                .and_then(|n| usize::try_from(n).ok())
                .and_then(|n| comp.parameters().get(n))
                != Some(&id)
            {
                sink.at(
                    cid,
                    id,
                    "parameter is not in the computation's parameter list",
                );
            }
        }
        // Operands and control predecessors: live and defined earlier.
        let mut operands_ok = true;
        ops.clear();
        for (j, &op) in instr.operands().iter().enumerate() {
            match comp.get(op) {
                Some(o) if live(op) => {
                    if pos[op.index()] >= k {
                        order_broken = true;
                        sink.at(
                            cid,
                            id,
                            format!("operand {j} `{}` is not defined before its use", o.name()),
                        );
                    }
                    ops.push(o.shape());
                }
                _ => {
                    operands_ok = false;
                    sink.at(
                        cid,
                        id,
                        format!("operand {j} is not a live instruction of this computation"),
                    );
                }
            }
        }
        for &p in instr.control_predecessors() {
            if !live(p) {
                sink.at(cid, id, "a control predecessor is not a live instruction");
            } else if pos[p.index()] >= k {
                order_broken = true;
                sink.at(
                    cid,
                    id,
                    format!(
                        "control predecessor `{}` comes after this instruction",
                        comp.instr(p).name()
                    ),
                );
            }
        }
        if let Err(m) = check_shape(instr.shape()) {
            sink.at(cid, id, m);
        }
        for c in instr.called_computations_iter() {
            if module.get_computation(c).is_none() {
                operands_ok = false;
                sink.at(
                    cid,
                    id,
                    format!("calls computation {} which does not exist", c.index()),
                );
            } else if c == cid {
                operands_ok = false;
                sink.at(cid, id, "calls its own computation");
            }
        }
        if operands_ok {
            check_instruction(module, cid, id, instr, &ops, sink);
        }
        if instr.opcode().is_async() || is_async_step(instr.opcode()) {
            async_ops::check(module, cid, comp, id, instr, sink);
        }
        async_ops::check_legacy_pair(cid, comp, id, instr, sink);
    }
    if n_params != comp.parameters().len() {
        sink.comp(
            cid,
            format!(
                "has {n_params} parameter instructions but {} parameters",
                comp.parameters().len()
            ),
        );
    }
    if order_broken {
        if let Some(id) = find_cycle(comp, &pos) {
            sink.at(
                cid,
                id,
                "is on a cycle of operands and control predecessors",
            );
        }
    }
}

fn is_async_step(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::AsyncStart | Opcode::AsyncUpdate | Opcode::AsyncDone
    )
}

fn check_instruction(
    module: &Module,
    cid: CompId,
    id: InstrId,
    instr: &Instruction,
    ops: &[&Shape],
    sink: &mut Sink<'_>,
) {
    if is_unsupported(instr.opcode()) {
        return;
    }
    if let Some(n) = instr.opcode().arity() {
        if n != ops.len() {
            sink.at(
                cid,
                id,
                format!("{} takes {n} operands, not {}", instr.opcode(), ops.len()),
            );
            return;
        }
    }
    let ctx = Ctx { module, instr, ops };
    match infer::infer(&ctx) {
        Ok(inferred) => {
            if let Err(m) = check_declared(instr.shape(), &inferred, ops) {
                sink.at(cid, id, m);
            }
        }
        Err(m) => sink.at(cid, id, m),
    }
}

/// Dimensions are sizes (or `?`), layouts are permutations of the dimensions.
pub(super) fn check_shape(s: &Shape) -> Result<(), String> {
    match s {
        Shape::Tuple(t) => t.iter().try_for_each(check_shape),
        Shape::Array(a) => {
            for (i, &d) in a.dims().iter().enumerate() {
                if d < 0 && !(d == UNBOUNDED_SIZE && a.is_dynamic_dim(i)) {
                    return Err(format!("dimension {i} of {} is negative", show(s)));
                }
            }
            if let Some(l) = a.layout() {
                let rank = a.dims().len();
                let token_like = l.minor_to_major.is_empty() && !a.element_type().is_array_type();
                if !l.is_permutation_of(rank) && !token_like {
                    return Err(format!(
                        "layout {{{}}} of {} is not a permutation of its {rank} dimensions",
                        super::infer::join(&l.minor_to_major),
                        show(s)
                    ));
                }
            }
            Ok(())
        }
    }
}

/// An instruction on a cycle of operand/control edges among live instructions (Kahn's
/// algorithm: what cannot be ordered is on or after a cycle; walk back to the cycle).
fn find_cycle(comp: &Computation, pos: &[usize]) -> Option<InstrId> {
    let n = pos.len();
    let live = |i: usize| pos[i] != usize::MAX;
    let deps = |i: usize| {
        let ins = &comp.instrs[i];
        ins.operands()
            .iter()
            .chain(ins.control_predecessors())
            .map(|d| d.index())
            .filter(move |&d| d < n && live(d))
    };
    let mut indeg = vec![0usize; n];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in (0..n).filter(|&i| live(i)) {
        for d in deps(i) {
            indeg[i] += 1;
            succ[d].push(i);
        }
    }
    let mut stack: Vec<usize> = (0..n).filter(|&i| live(i) && indeg[i] == 0).collect();
    let mut done = vec![false; n];
    while let Some(i) = stack.pop() {
        done[i] = true;
        for &s in &succ[i] {
            indeg[s] -= 1;
            if indeg[s] == 0 {
                stack.push(s);
            }
        }
    }
    let mut cur = (0..n).find(|&i| live(i) && !done[i])?;
    // Walk unfinished dependencies n times: we end on a cycle.
    for _ in 0..n {
        cur = deps(cur).find(|&d| !done[d])?;
    }
    Some(InstrId::from_index(cur))
}
