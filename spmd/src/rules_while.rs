//! Propagation of `while`: the loop keeps its carry split. The carry's tiling `T` starts
//! as the init's; the body is partitioned with its parameter tiled `T`, and where its
//! result comes out tiled otherwise, `T` becomes that (a value the body splits is carried
//! split, one it gathers is gathered once before the loop instead of every trip), up to a
//! few rounds. Whatever `T` ends as, the init is resharded to it and the body's result
//! too, so the carry is `T` at every trip boundary; the condition is partitioned with its
//! parameter tiled `T` (its scalar result is the same on every device). A body may hold
//! manual regions (a scan over a `shard_map`): they are partitioned as in the entry, and
//! a per-device value that reaches the carry outside one is named unsupported. A carry
//! that is not a flat tuple of arrays, or a condition that holds per-device ops, takes
//! the replicated fallback instead (which names per-device ops unsupported).

use hlo::Instruction;

use crate::context::Ctx;
use crate::decision::{Called, Decision, ValueTiling};
use crate::error::SpmdError;

/// Rounds of carry refinement before the loop's tiling is fixed.
const ROUNDS: usize = 4;

/// The decision for while `instr`, `None` where the fallback takes it.
pub(crate) fn while_loop(
    ctx: &Ctx<'_>,
    instr: &Instruction,
) -> Option<Result<Decision, SpmdError>> {
    let (cond, body) = (instr.while_condition()?, instr.while_body()?);
    let shape = instr.shape();
    if !shape.is_tuple() || !shape.tuple_shapes().iter().all(hlo::Shape::is_array) {
        return None;
    }
    let ValueTiling::Tuple(init) = ctx.operand(instr, 0).ok()? else {
        return None;
    };
    if crate::rules_fallback::check_called(ctx.module, cond, instr, 0).is_err() {
        return None;
    }
    // The body may hold manual regions (a scan over a shard_map): it is partitioned as
    // the entry is, regions kept per device.
    if crate::rules_fallback::check_called_ops(ctx.module, body, instr, 0, true).is_err() {
        return None;
    }
    Some(decide(ctx, init.clone(), cond, body))
}

/// The carry's tiling and the partitioned condition and body, from `init`.
fn decide(
    ctx: &Ctx<'_>,
    init: Vec<crate::tiling::Tiling>,
    cond: hlo::CompId,
    body: hlo::CompId,
) -> Result<Decision, SpmdError> {
    let body_comp = ctx.module.computation(body);
    let partition_body = |carry: &[crate::tiling::Tiling]| {
        (ctx.propagate)(
            ctx.module,
            body_comp,
            ctx.devices,
            vec![ValueTiling::Tuple(carry.to_vec())],
        )
    };
    let mut carry = init.clone();
    let mut body_decisions = partition_body(&carry)?;
    let mut rounds = 1;
    while rounds < ROUNDS {
        match body_decisions.get(body_comp.root()).map(|r| &r.out) {
            Some(ValueTiling::Tuple(ts)) if ts.len() == carry.len() && *ts != carry => {
                carry = ts.clone();
                body_decisions = partition_body(&carry)?;
                rounds += 1;
            }
            _ => break,
        }
    }
    if !matches!(
        body_decisions.get(body_comp.root()).map(|r| &r.out),
        Some(ValueTiling::Tuple(_))
    ) {
        // A per-device value outside any region reaching the carry has no global
        // meaning to carry.
        return Err(SpmdError::Unsupported {
            opcode: "while".into(),
            instr: body_comp.name().to_string(),
            detail: "the loop body's result holds a per-device value (an id or collective outside a manual region)".into(),
        });
    }
    let cond_decisions = (ctx.propagate)(
        ctx.module,
        ctx.module.computation(cond),
        ctx.devices,
        vec![ValueTiling::Tuple(carry.clone())],
    )?;
    let value = ValueTiling::Tuple(carry.clone());
    let moved = init != carry;
    let why = format!(
        "while: carry {}{} (body partitioned with it, {} round(s))",
        value.text(),
        if moved {
            ", init resharded to it"
        } else {
            " as the init"
        },
        rounds
    );
    Ok(Decision {
        out: value.clone(),
        local: value.clone(),
        operands: vec![None],
        tuple_operands: vec![moved.then_some(carry)],
        partial: None,
        window: None,
        halos: Vec::new(),
        called: vec![
            Called {
                comp: cond,
                decisions: cond_decisions,
                root: None,
            },
            Called {
                comp: body,
                decisions: body_decisions,
                root: Some(value),
            },
        ],
        why,
    })
}
