//! Async chains with late binding: an `async-start` binds the first operands of its
//! computation, each `async-update` binds the next ones, and the `async-done` runs the
//! computation on every operand bound along the chain. A state is the value
//! `((bound...), result, context...)` of XLA's shapes; until the done runs, its result and
//! context elements hold zeros.

use super::control::{zeros, Interpreter};
use super::error::EvalError;
use hlo::{Instruction, Literal};

/// `async-start(x...)`: the state `((x...), zeros, zeros...)`.
pub(crate) fn start(instr: &Instruction, vals: &[&Literal]) -> Result<Literal, EvalError> {
    let what = instr.name();
    let args: Vec<Literal> = vals.iter().map(|&v| v.clone()).collect();
    let mut parts = vec![Literal::Tuple(args)];
    for s in instr.shape().tuple_shapes().iter().skip(1) {
        parts.push(zeros(s, what)?);
    }
    Ok(Literal::Tuple(parts))
}

/// `async-update(prev, x...)`: `prev` with `x...` bound after its operands.
pub(crate) fn update(
    instr: &Instruction,
    prev: Literal,
    bound: Vec<Literal>,
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let Literal::Tuple(mut parts) = prev else {
        return Err(EvalError::invalid(what, "the async state is not a tuple"));
    };
    match parts.first_mut() {
        Some(Literal::Tuple(args)) => args.extend(bound),
        _ => {
            return Err(EvalError::invalid(
                what,
                "the async state holds no operand tuple",
            ))
        }
    }
    Ok(Literal::Tuple(parts))
}

/// `async-done(state)`: the called computation on every operand the state binds.
pub(crate) fn done(
    ev: &mut dyn Interpreter,
    instr: &Instruction,
    vals: &[&Literal],
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let comp = instr
        .calls()
        .ok_or_else(|| EvalError::invalid(what, "missing calls="))?;
    match vals.first() {
        Some(Literal::Tuple(parts)) => match parts.first() {
            Some(Literal::Tuple(args)) => ev.call(comp, args.clone()),
            _ => Err(EvalError::invalid(
                what,
                "the async state holds no operand tuple",
            )),
        },
        _ => Err(EvalError::invalid(what, "expected an async state operand")),
    }
}
