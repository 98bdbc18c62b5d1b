//! Sharding propagation: backward first (`backward.rs`: what each value's users want, from
//! the annotations after it), then forward through the entry computation (operands before
//! users), from the parameters' annotations and the `with_sharding_constraint` custom
//! calls; each op's rule picks its sharding from its operands'. An annotation on any other
//! instruction is honoured: the local result is resharded to it.
//!
//! Priority, highest first: an annotation (parameter, constraint, intermediate, root);
//! the forward rule where an operand is split; the users' hint where every operand is
//! whole (the op then runs on slices of its whole operands, which costs no communication,
//! instead of whole and resharded later); replicated. An unannotated parameter takes its
//! users' hint (the runner splits the global input that way), else is replicated.

use hlo::{Computation, InstrId, Instruction, Module, Opcode};

use crate::backward::{backward, operand_hints};
use crate::context::{simple as simple_decision, text, Ctx};
use crate::decision::{Decision, Decisions, ValueTiling};
use crate::error::SpmdError;
use crate::rules_simple as simple;
use crate::tiling::Tiling;

/// Every instruction's decision for `module` (calls already inlined) on `devices`
/// devices.
pub fn propagate(module: &Module, devices: usize) -> Result<Decisions, SpmdError> {
    if devices == 0 {
        return Err(SpmdError::invalid(
            "module",
            "partitioning needs at least one device",
        ));
    }
    propagate_in(module, module.entry(), devices, Vec::new())
}

/// Every instruction's decision in `comp`, its parameters sharded `params` (empty: by
/// their annotations, as the entry's).
pub(crate) fn propagate_in(
    module: &Module,
    comp: &Computation,
    devices: usize,
    params: Vec<ValueTiling>,
) -> Result<Decisions, SpmdError> {
    let mut ctx = Ctx {
        module,
        comp,
        devices,
        decisions: Decisions {
            by_id: vec![None; comp.instrs.len()],
            partial: vec![None; comp.instrs.len()],
        },
        hints: backward(comp, devices),
        assume: Vec::new(),
        params,
        propagate: propagate_in,
    };
    for &id in comp.def_before_use_order().iter() {
        let instr = comp.instr(id);
        let mut d = decide(&ctx, instr)?;
        if let Some(b) = from_users(&mut ctx, id, &d)? {
            d = b;
        }
        annotate(&ctx, instr, &mut d)?;
        let keys = crate::rules_partial::partial_keys(&ctx, instr, &d);
        ctx.decisions.partial[id.index()] = keys;
        ctx.decisions.by_id[id.index()] = Some(d);
    }
    Ok(ctx.decisions)
}

/// The decision the users' hint gives `id` where forward propagation leaves it whole: an
/// unannotated parameter takes the hint; an op whose operands are all whole runs on their
/// slices (the operands' hints, `backward::operand_hints`) when its rule then gives a
/// split result without partial sums.
fn from_users(
    ctx: &mut Ctx<'_>,
    id: InstrId,
    forward: &Decision,
) -> Result<Option<Decision>, SpmdError> {
    let instr = ctx.comp.instr(id);
    let Some(hint) = ctx.hints.array(id).cloned() else {
        return Ok(None);
    };
    let whole = forward.out.array().is_some_and(Tiling::is_replicated);
    if !whole || hint.tiling.is_replicated() || instr.sharding().is_some() {
        return Ok(None);
    }
    if instr.opcode() == Opcode::Parameter {
        let why = format!(
            "parameter without a sharding: {} backward from {}",
            text(&hint.tiling),
            hint.origin
        );
        return Ok(Some(simple_decision(hint.tiling, vec![], why)));
    }
    let takes = matches!(
        instr.opcode(),
        Opcode::Broadcast
            | Opcode::Transpose
            | Opcode::Reshape
            | Opcode::Reduce
            | Opcode::Dot
            | Opcode::Convolution
            | Opcode::Slice
            | Opcode::Pad
            | Opcode::Concatenate
            | Opcode::Reverse
            | Opcode::DynamicSlice
            | Opcode::DynamicUpdateSlice
            | Opcode::ReduceWindow
            | Opcode::Gather
    ) || simple::is_elementwise(instr.opcode());
    if !takes {
        return Ok(None);
    }
    let mut assume: Vec<(InstrId, ValueTiling)> = Vec::new();
    for ((op, _), t) in operand_hints(ctx.comp, instr, 0, &hint.tiling) {
        let now = ctx.decided(op)?;
        if !now.array().is_some_and(Tiling::is_replicated) {
            return Ok(None);
        }
        let t = ValueTiling::Array(t);
        match assume.iter().find(|(a, _)| *a == op) {
            Some((_, other)) if *other != t => return Ok(None),
            Some(_) => {}
            None => assume.push((op, t)),
        }
    }
    ctx.assume = assume;
    let tried = decide(ctx, instr);
    let assumed = std::mem::take(&mut ctx.assume);
    let mut d = tried?;
    let split = d.out.array().is_some_and(|t| !t.is_replicated());
    if !split || d.partial.is_some() {
        return Ok(None);
    }
    for (i, op) in instr.operands().iter().enumerate() {
        let Some((_, ValueTiling::Array(t))) = assumed.iter().find(|(a, _)| a == op) else {
            continue;
        };
        if let Some(slot) = d.operands.get_mut(i) {
            if slot.is_none() {
                *slot = Some(t.clone());
            }
        }
    }
    d.why = format!(
        "backward from {}: whole operands sliced; {}",
        hint.origin, d.why
    );
    Ok(Some(d))
}

/// The rule of `instr`'s opcode.
fn decide(ctx: &Ctx<'_>, instr: &Instruction) -> Result<Decision, SpmdError> {
    if instr.shape().is_array()
        && instr
            .shape()
            .as_array()
            .is_some_and(|a| (0..a.dims().len()).any(|i| a.is_dynamic_dim(i)))
    {
        return Err(SpmdError::unsupported(instr, "dynamic dimensions"));
    }
    if let Some(d) = crate::rules_manual::decide(ctx, instr) {
        return d;
    }
    match instr.opcode() {
        Opcode::Parameter => simple::parameter(ctx, instr),
        Opcode::Constant | Opcode::Iota => Ok(simple::everywhere(ctx, instr)),
        op if simple::is_elementwise(op) => simple::elementwise(ctx, instr),
        Opcode::Broadcast => simple::broadcast(ctx, instr),
        Opcode::Reshape => simple::reshape(ctx, instr),
        Opcode::Transpose => simple::transpose(ctx, instr),
        Opcode::Tuple => simple::tuple(ctx, instr),
        Opcode::GetTupleElement => simple::get_tuple_element(ctx, instr),
        Opcode::Reduce => crate::rules_reduce::reduce(ctx, instr),
        Opcode::Dot => crate::rules_dot::dot(ctx, instr),
        Opcode::Convolution => crate::rules_conv::convolution(ctx, instr),
        Opcode::Conditional => match crate::rules_conditional::conditional(ctx, instr) {
            Some(d) => d,
            None => crate::rules_fallback::replicated(ctx, instr),
        },
        Opcode::While => match crate::rules_while::while_loop(ctx, instr) {
            Some(d) => d,
            None => crate::rules_fallback::replicated(ctx, instr),
        },
        Opcode::CustomCall if instr.custom_call_target() == Some("Sharding") => {
            simple::sharding_call(ctx, instr)
        }
        _ => match crate::rules_window::decide(ctx, instr) {
            Some(d) => d,
            None => crate::rules_fallback::replicated(ctx, instr),
        },
    }
}

/// Honours `sharding=` on an instruction whose rule does not read it already.
fn annotate(ctx: &Ctx<'_>, instr: &Instruction, d: &mut Decision) -> Result<(), SpmdError> {
    if matches!(instr.opcode(), Opcode::Parameter | Opcode::CustomCall)
        || d.out == ValueTiling::Manual
    {
        return Ok(());
    }
    if instr.opcode() == Opcode::Tuple {
        return annotate_tuple(ctx, instr, d);
    }
    if !instr.shape().is_array() {
        // A tuple-shaped op's sharding (a loop's, a sort's) only echoes its elements'.
        return Ok(());
    }
    let Some(want) = simple::annotation(ctx, instr)? else {
        return Ok(());
    };
    let want = ValueTiling::Array(want);
    if want != d.out {
        if let ValueTiling::Array(t) = &want {
            d.why = format!("{}; annotated {}: resharded", d.why, text(t));
        }
        d.out = want;
    }
    Ok(())
}

/// A tuple sharding on a `tuple` (JAX's `out_shardings` on the root): each element is
/// resharded to its part before the tuple is made.
fn annotate_tuple(ctx: &Ctx<'_>, instr: &Instruction, d: &mut Decision) -> Result<(), SpmdError> {
    let Some(s) = instr.sharding() else {
        return Ok(());
    };
    let parts: Vec<&hlo::sharding::Sharding> = match &s.kind {
        hlo::sharding::ShardingKind::Tuple(parts) => parts.iter().collect(),
        hlo::sharding::ShardingKind::Unknown => return Ok(()),
        _ => vec![s; instr.operands().len()],
    };
    if parts.len() != instr.operands().len() {
        return Err(SpmdError::invalid(
            instr.name(),
            format!(
                "a tuple sharding of {} parts on a tuple of {}",
                parts.len(),
                instr.operands().len()
            ),
        ));
    }
    let mut tilings = Vec::with_capacity(parts.len());
    let mut moved = 0;
    for (i, part) in parts.into_iter().enumerate() {
        let rank = ctx.operand_dims(instr, i).len();
        let want = Tiling::from_sharding(part, rank, ctx.devices)
            .map_err(|e| SpmdError::unsupported(instr, e))?;
        if *ctx.operand_array(instr, i)? != want {
            d.operands[i] = Some(want.clone());
            moved += 1;
        }
        tilings.push(want);
    }
    d.out = ValueTiling::Tuple(tilings.clone());
    d.local = ValueTiling::Tuple(tilings);
    if moved > 0 {
        d.why = format!(
            "{}; annotated {}: {moved} element(s) resharded",
            d.why,
            d.out.text()
        );
    }
    Ok(())
}
