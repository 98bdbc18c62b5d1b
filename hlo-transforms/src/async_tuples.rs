//! The async chains `async-lowering` cannot follow (a state that crosses a `while` loop,
//! a call or a conditional) written as the plain tuples their states are, so that a target
//! running one thing at a time needs no async support: a state is
//! `((bound...), result, context...)` (XLA's shapes; the evaluator's values, with the
//! result and context zero until the done runs), so
//! - `async-start(x...)` becomes `tuple(tuple(x...), zeros, zeros...)`;
//! - `async-update(prev, x...)` becomes `prev` with `x...` appended to its operand tuple;
//! - `async-done(prev)` becomes a copy of the wrapped computation's body on the operands
//!   in `prev`'s operand tuple.
//!
//! Each op is rewritten on its own (its value keeps its shape), wherever its chain leads.
//! An op is left as it is when its state is not of that form, when a result or context
//! element has no zero (a token), or, for a done, when the bound operands do not match its
//! computation's parameters (the verifier judges those chains).

use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction, Module};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::{AttrName, AttrValue, Opcode, Shape};

/// Rewrites every generic async op of `module` as tuples (see the module documentation).
/// Returns whether anything changed.
pub(crate) fn materialize_async_states(module: &mut Module, names: &mut NameGen) -> bool {
    let mut changed = false;
    for ci in 0..module.computations.len() {
        let ops: Vec<InstrId> = module.computations[ci]
            .def_before_use_order()
            .iter()
            .copied()
            .filter(|&id| {
                matches!(
                    module.computations[ci].instr(id).opcode,
                    Opcode::AsyncStart | Opcode::AsyncUpdate | Opcode::AsyncDone
                )
            })
            .collect();
        let mut here = false;
        for id in ops {
            let instr = module.computations[ci].instr(id).clone();
            let new = match instr.opcode {
                Opcode::AsyncStart => start(&mut module.computations[ci], names, &instr),
                Opcode::AsyncUpdate => update(&mut module.computations[ci], names, &instr),
                _ => {
                    let Some(callee) = instr.calls().filter(|c| c.index() != ci) else {
                        continue;
                    };
                    let Some(body) = module.get_computation(callee).cloned() else {
                        continue;
                    };
                    done(&mut module.computations[ci], names, &instr, &body)
                }
            };
            if let Some(new) = new {
                let comp = &mut module.computations[ci];
                edit::replace_uses(comp, id, new);
                edit::remove_instructions(comp, &std::iter::once(id).collect());
                here = true;
            }
        }
        if here {
            edit::repair_order(&mut module.computations[ci]);
            changed = true;
        }
    }
    changed
}

/// `async-start(x...)` as `tuple(tuple(x...), zeros...)`.
fn start(comp: &mut Computation, names: &mut NameGen, instr: &Instruction) -> Option<InstrId> {
    let parts = instr.shape.tuple_shapes();
    let (args, rest) = parts.split_first()?;
    if !args.is_tuple() || args.tuple_shapes().len() != instr.operands.len() {
        return None;
    }
    let zeros: Vec<Instruction> = rest
        .iter()
        .map(|s| zero_constant(names, &instr.name, s))
        .collect::<Option<_>>()?;
    let bound = tuple(
        comp,
        names,
        &instr.name,
        args.clone(),
        instr.operands.clone(),
    );
    let mut elements = vec![bound];
    elements.extend(zeros.into_iter().map(|z| edit::add(comp, z)));
    Some(tuple(
        comp,
        names,
        &instr.name,
        (*instr.shape).clone(),
        elements,
    ))
}

/// `async-update(prev, x...)` as `prev` with `x...` appended to its operand tuple.
fn update(comp: &mut Computation, names: &mut NameGen, instr: &Instruction) -> Option<InstrId> {
    let (&prev, fresh) = instr.operands.split_first()?;
    let prev_shape = (*comp.get(prev)?.shape).clone();
    let (prev_args, prev_rest) = prev_shape.tuple_shapes().split_first()?;
    let parts = instr.shape.tuple_shapes();
    let (args, rest) = parts.split_first()?;
    if !prev_args.is_tuple()
        || !args.is_tuple()
        || args.tuple_shapes().len() != prev_args.tuple_shapes().len() + fresh.len()
        || rest.len() != prev_rest.len()
    {
        return None;
    }
    let held = gte(comp, names, &instr.name, prev, 0, prev_args.clone());
    let mut bound: Vec<InstrId> = prev_args
        .tuple_shapes()
        .iter()
        .enumerate()
        .map(|(k, s)| gte(comp, names, &instr.name, held, k, s.clone()))
        .collect();
    bound.extend(fresh.iter().copied());
    let mut elements = vec![tuple(comp, names, &instr.name, args.clone(), bound)];
    for (k, s) in prev_rest.iter().enumerate() {
        elements.push(gte(comp, names, &instr.name, prev, k + 1, s.clone()));
    }
    Some(tuple(
        comp,
        names,
        &instr.name,
        (*instr.shape).clone(),
        elements,
    ))
}

/// `async-done(prev)` as a copy of `body` on the operands in `prev`'s operand tuple.
fn done(
    comp: &mut Computation,
    names: &mut NameGen,
    instr: &Instruction,
    body: &Computation,
) -> Option<InstrId> {
    let &prev = instr.operands.first()?;
    let prev_shape = (*comp.get(prev)?.shape).clone();
    let args = prev_shape.tuple_shapes().first()?;
    if !args.is_tuple() || args.tuple_shapes().len() != body.parameters().len() {
        return None;
    }
    let held = gte(comp, names, &instr.name, prev, 0, args.clone());
    let bound: Vec<InstrId> = args
        .tuple_shapes()
        .iter()
        .enumerate()
        .map(|(k, s)| gte(comp, names, &instr.name, held, k, s.clone()))
        .collect();
    Some(edit::clone_body_into(names, body, comp, &bound))
}

fn tuple(
    comp: &mut Computation,
    names: &mut NameGen,
    base: &str,
    shape: Shape,
    elements: Vec<InstrId>,
) -> InstrId {
    let name = names.fresh(base);
    edit::add(comp, Instruction::new(name, Opcode::Tuple, shape, elements))
}

fn gte(
    comp: &mut Computation,
    names: &mut NameGen,
    base: &str,
    of: InstrId,
    index: usize,
    shape: Shape,
) -> InstrId {
    let name = names.fresh(base);
    let g = Instruction::new(name, Opcode::GetTupleElement, shape, vec![of])
        .with_attr(AttrName::Index, AttrValue::Int(index as i64));
    edit::add(comp, g)
}

/// A constant of `shape` holding zeros (nested tuples as tuple constants); `None` for a
/// token or an element type with no zero.
fn zero_constant(names: &mut NameGen, base: &str, shape: &Shape) -> Option<Instruction> {
    let literal = zero_literal(shape)?;
    Some(Instruction::constant(
        names.fresh(base),
        shape.clone(),
        literal,
    ))
}

fn zero_literal(shape: &Shape) -> Option<Literal> {
    if shape.is_tuple() {
        let parts = shape.tuple_shapes().iter().map(zero_literal);
        return parts.collect::<Option<_>>().map(Literal::Tuple);
    }
    let ty = shape.element_type()?;
    let mut zero = ArrayData::new(ty)?;
    zero.push_int(ty, 0).ok()?;
    ArrayLiteral::splat(shape.clone(), zero).map(Literal::Array)
}
