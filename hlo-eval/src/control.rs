//! Control flow and wrappers: while, conditional, async-start, tuple access helpers.

use super::data::make;
use super::{EvalError, Evaluator};
use hlo::literal::ArrayData;
use hlo::shape::Shape;
use hlo::{Instruction, Literal};

/// `while`: runs the body while the condition holds.
pub(crate) fn run_while(
    ev: &mut Evaluator<'_>,
    instr: &Instruction,
    init: Literal,
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let cond = instr
        .while_condition()
        .ok_or_else(|| EvalError::invalid(what, "missing condition="))?;
    let body = instr
        .while_body()
        .ok_or_else(|| EvalError::invalid(what, "missing body="))?;
    let mut state = init;
    let limit = ev.while_limit();
    let mut iterations: u64 = 0;
    loop {
        let c = ev.call(cond, vec![state.clone()])?;
        match c.as_array().map(|a| a.data()) {
            Some(ArrayData::Pred(v)) if v.len() == 1 => {
                if !v[0] {
                    return Ok(state);
                }
            }
            _ => {
                return Err(EvalError::invalid(
                    what,
                    "while condition must return pred[]",
                ))
            }
        }
        if iterations == limit {
            return Err(EvalError::LoopLimit {
                instr: what.to_string(),
                limit,
            });
        }
        iterations += 1;
        state = ev.call(body, vec![state])?;
    }
}

/// `conditional`: a `pred` selects branch 0 (true) or 1 (false); an integer index selects
/// that branch, out-of-range indices the last one.
pub(crate) fn conditional(
    ev: &mut Evaluator<'_>,
    instr: &Instruction,
    vals: &[&Literal],
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let branches = instr
        .branch_computations()
        .ok_or_else(|| EvalError::invalid(what, "missing branch computations"))?;
    let sel = vals
        .first()
        .and_then(|v| v.as_array())
        .ok_or_else(|| EvalError::invalid(what, "missing branch selector"))?;
    let n = branches.len();
    if n == 0 || vals.len() != n + 1 {
        return Err(EvalError::invalid(
            what,
            "conditional needs one operand per branch",
        ));
    }
    let k = match sel.data() {
        ArrayData::Pred(v) if v.len() == 1 => usize::from(!v[0]),
        ArrayData::S32(v) if v.len() == 1 => usize::try_from(v[0])
            .ok()
            .filter(|&i| i < n)
            .unwrap_or(n - 1),
        _ => {
            return Err(EvalError::invalid(
                what,
                "branch selector must be pred[] or s32[]",
            ))
        }
    };
    ev.call(branches[k], vec![vals[k + 1].clone()])
}

/// `async-start`: evaluates the wrapped computation now; the value is
/// `((operands), result, context...)` as XLA's shape says.
pub(crate) fn async_start(
    ev: &mut Evaluator<'_>,
    instr: &Instruction,
    vals: &[&Literal],
) -> Result<Literal, EvalError> {
    let what = instr.name();
    let comp = instr
        .calls()
        .ok_or_else(|| EvalError::invalid(what, "missing calls="))?;
    let args: Vec<Literal> = vals.iter().map(|&v| v.clone()).collect();
    let result = ev.call(comp, args.clone())?;
    let mut parts = vec![Literal::Tuple(args), result];
    for s in instr.shape().tuple_shapes().iter().skip(2) {
        parts.push(zeros(s, what)?);
    }
    Ok(Literal::Tuple(parts))
}

/// Element `i` of a tuple operand.
pub(crate) fn tuple_part(vals: &[&Literal], i: usize, what: &str) -> Result<Literal, EvalError> {
    match vals.first() {
        Some(Literal::Tuple(t)) => t
            .get(i)
            .cloned()
            .ok_or_else(|| EvalError::invalid(what, "tuple operand is too short")),
        _ => Err(EvalError::invalid(what, "expected a tuple operand")),
    }
}

/// A literal of `shape` with every element zero (tokens stay tokens).
pub(crate) fn zeros(shape: &Shape, what: &str) -> Result<Literal, EvalError> {
    match shape {
        Shape::Tuple(t) => Ok(Literal::Tuple(
            t.iter().map(|s| zeros(s, what)).collect::<Result<_, _>>()?,
        )),
        Shape::Array(a) => {
            let ty = a.element_type();
            let Some(empty) = ArrayData::new(ty) else {
                return Ok(Literal::Elided(shape.clone()));
            };
            let n = shape
                .element_count()
                .map_err(|e| EvalError::invalid(what, e.to_string()))? as usize;
            let data = super::data::map_data!(&empty, _v => vec![Default::default(); n]);
            make(shape, data, what)
        }
    }
}
