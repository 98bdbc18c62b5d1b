//! Sharding propagation: forward through the entry computation (operands before users),
//! from the parameters' annotations (replicated where there is none) and the
//! `with_sharding_constraint` custom calls; each op's rule picks its sharding from its
//! operands'. An annotation on any other instruction is honoured: the local result is
//! resharded to it. Unannotated outputs keep what propagation chose.

use hlo::{Instruction, Module, Opcode};

use crate::context::{text, Ctx};
use crate::decision::{Decision, Decisions, ValueTiling};
use crate::error::SpmdError;
use crate::rules_simple as simple;

/// Every instruction's decision for `module` (calls already inlined) on `devices`
/// devices.
pub fn propagate(module: &Module, devices: usize) -> Result<Decisions, SpmdError> {
    if devices == 0 {
        return Err(SpmdError::invalid(
            "module",
            "partitioning needs at least one device",
        ));
    }
    let comp = module.entry();
    let mut ctx = Ctx {
        module,
        comp,
        devices,
        decisions: Decisions {
            by_id: vec![None; comp.instrs.len()],
        },
    };
    for &id in comp.def_before_use_order().iter() {
        let instr = comp.instr(id);
        let mut d = decide(&ctx, instr)?;
        annotate(&ctx, instr, &mut d)?;
        ctx.decisions.by_id[id.index()] = Some(d);
    }
    Ok(ctx.decisions)
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
        Opcode::CustomCall if instr.custom_call_target() == Some("Sharding") => {
            simple::sharding_call(ctx, instr)
        }
        Opcode::CustomCall => Err(SpmdError::Unsupported {
            opcode: format!(
                "custom-call \"{}\"",
                instr.custom_call_target().unwrap_or("?")
            ),
            instr: instr.name().to_string(),
            detail: "the partitioner does not handle this custom call yet".into(),
        }),
        _ => Err(SpmdError::unsupported(
            instr,
            "the partitioner does not handle this op yet",
        )),
    }
}

/// Honours `sharding=` on an instruction whose rule does not read it already.
fn annotate(ctx: &Ctx<'_>, instr: &Instruction, d: &mut Decision) -> Result<(), SpmdError> {
    if matches!(instr.opcode(), Opcode::Parameter | Opcode::CustomCall) {
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
