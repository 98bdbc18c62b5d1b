//! Layout-sensitive checks ([`super::VerifyOptions::layout_sensitive`]), for modules after
//! layout assignment: every array of rank >= 1 has a layout, and values that are the same
//! buffer have the same layout (loop state through `while` and its computations, operands
//! and parameters of called computations and their results, tuple elements, the entry
//! computation layout).

use super::errors::{Sink, VerifyError};
use super::infer::show;
use crate::ir::{CompId, Computation, InstrId, Instruction, Module};
use crate::opcode::Opcode;
use crate::shape::Shape;

/// Equal including layouts (rank-0 arrays need none).
fn same_with_layout(a: &Shape, b: &Shape) -> bool {
    match (a, b) {
        (Shape::Array(x), Shape::Array(y)) => {
            x.element_type() == y.element_type()
                && x.dims() == y.dims()
                && (x.dims().is_empty() || x.layout() == y.layout())
        }
        (Shape::Tuple(x), Shape::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_with_layout(p, q))
        }
        _ => false,
    }
}

fn missing_layout(s: &Shape) -> bool {
    match s {
        Shape::Array(a) => {
            !a.dims().is_empty() && a.element_type().is_array_type() && a.layout().is_none()
        }
        Shape::Tuple(t) => t.iter().any(missing_layout),
    }
}

/// A called computation's parameter and root shapes.
fn params_and_root(module: &Module, c: CompId) -> Option<(Vec<&Shape>, &Shape)> {
    let comp = module.get_computation(c)?;
    let params = comp
        .parameters()
        .iter()
        .map(|&p| comp.get(p).map(Instruction::shape))
        .collect::<Option<Vec<_>>>()?;
    Some((params, comp.get(comp.root())?.shape()))
}

pub(super) fn check(module: &Module) -> Vec<VerifyError> {
    let mut sink = Sink::new(module);
    for (cid, comp) in module.computations() {
        for (id, instr) in comp.instructions() {
            check_instruction(module, cid, comp, id, instr, &mut sink);
        }
    }
    if let Some(layout) = module.entry_computation_layout() {
        let entry = module.entry();
        let eid = module.entry_id();
        for (k, (s, &p)) in layout.parameters.iter().zip(entry.parameters()).enumerate() {
            if let Some(pi) = entry.get(p) {
                if !same_with_layout(s, pi.shape()) {
                    sink.at(
                        eid,
                        p,
                        format!(
                            "entry_computation_layout gives parameter {k} {s} but it is {}",
                            pi.shape()
                        ),
                    );
                }
            }
        }
        if let Some(root) = entry.get(entry.root()) {
            if !same_with_layout(&layout.result, root.shape()) {
                sink.comp(
                    eid,
                    format!(
                        "entry_computation_layout gives result {} but the root is {}",
                        layout.result,
                        root.shape()
                    ),
                );
            }
        }
    }
    sink.errors
}

fn check_instruction(
    module: &Module,
    cid: CompId,
    comp: &Computation,
    id: InstrId,
    instr: &Instruction,
    sink: &mut Sink<'_>,
) {
    let shape = instr.shape();
    if missing_layout(shape) {
        sink.at(cid, id, format!("{} has no layout", show(shape)));
        return;
    }
    let Some(ops) = instr
        .operands()
        .iter()
        .map(|&o| comp.get(o).map(Instruction::shape))
        .collect::<Option<Vec<&Shape>>>()
    else {
        return;
    };
    let mut expect = |what: String, a: &Shape, b: &Shape| {
        if !same_with_layout(a, b) {
            sink.at(cid, id, format!("{what}: {a} vs {b} (layouts must agree)"));
        }
    };
    match instr.opcode() {
        Opcode::GetTupleElement => {
            let e = instr
                .tuple_index()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| ops.first()?.tuple_shapes().get(i));
            if let Some(e) = e {
                expect("result and tuple element".into(), shape, e);
            }
        }
        Opcode::Tuple => {
            for (i, (e, o)) in shape.tuple_shapes().iter().zip(&ops).enumerate() {
                expect(format!("tuple element {i} and operand {i}"), e, o);
            }
        }
        Opcode::While => {
            if let Some(&op) = ops.first() {
                expect("while operand and result".into(), op, shape);
                if let Some((p, r)) = instr.while_body().and_then(|c| params_and_root(module, c)) {
                    if let Some(p0) = p.first() {
                        expect("while operand and body parameter".into(), op, p0);
                    }
                    expect("while operand and body root".into(), op, r);
                }
                if let Some((p, _)) = instr
                    .while_condition()
                    .and_then(|c| params_and_root(module, c))
                {
                    if let Some(p0) = p.first() {
                        expect("while operand and condition parameter".into(), op, p0);
                    }
                }
            }
        }
        Opcode::Call | Opcode::Fusion => {
            let callee = instr.to_apply().or(instr.calls());
            if let Some((params, root)) = callee.and_then(|c| params_and_root(module, c)) {
                for (i, (p, o)) in params.iter().zip(&ops).enumerate() {
                    expect(format!("operand {i} and parameter {i}"), o, p);
                }
                expect("result and called root".into(), shape, root);
            }
        }
        Opcode::Conditional => {
            for (b, c) in instr
                .branch_computations()
                .unwrap_or_default()
                .into_iter()
                .enumerate()
            {
                if let (Some((params, root)), Some(o)) =
                    (params_and_root(module, c), ops.get(b + 1))
                {
                    if let Some(p0) = params.first() {
                        expect(format!("branch {b} operand and parameter"), o, p0);
                    }
                    expect(format!("result and branch {b} root"), shape, root);
                }
            }
        }
        _ => {}
    }
}
