//! Scalars read out of arrays as one-element reductions, for targets whose fusions
//! XLA:CPU must compile.
//!
//! `x[k]` in JAX is a slice and a reshape to rank 0. XLA:CPU tests a reshape on a fusion's
//! elementwise path for being a bitcast, which needs layouts fused values lack
//! ([`crate::xla_cpu`]), so such a reshape would stay a kernel of its own between the slice
//! and the scalar arithmetic that reads it. A reduction over the one element is the same
//! value, and XLA's emitters take a reduction anywhere in a fusion. Exact: the reduction
//! adds its one element to `-0` (floats: `-0 + x` is `x` for every `x`, `-0` and NaN
//! included), to `0` (integers), or ors it with `false` (pred).

use std::collections::HashMap;

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::NameGen;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::pass::PassError;
use hlo::shape::{ElementType, Shape};
use hlo::{CompId, InstrId, Instruction, Literal, Module, Opcode};

const PASS: &str = "priority-fusion";

/// The reduction's identity of `ty` and the opcode that combines (`None`: not rewritten).
pub(crate) fn identity(ty: ElementType) -> Option<(Literal, Opcode)> {
    let mut d = ArrayData::new(ty)?;
    let op = if ty.is_pred() {
        d.push_bool(ty, false).ok()?;
        Opcode::Or
    } else if ty.is_integral() {
        d.push_int(ty, 0).ok()?;
        Opcode::Add
    } else if ty.is_complex() {
        d.push_complex(ty, [-0.0, -0.0], "-0").ok()?;
        Opcode::Add
    } else if ty.is_float() {
        d.push_float(ty, -0.0, None, "-0").ok()?;
        Opcode::Add
    } else {
        return None;
    };
    Some((Literal::Array(ArrayLiteral::new(Shape::scalar(ty), d)?), op))
}

/// The two-parameter scalar computation applying `op` on `ty`, added to `module` once.
pub(crate) fn reducer(
    module: &mut Module,
    made: &mut HashMap<ElementType, CompId>,
    names: &mut NameGen,
    ty: ElementType,
    op: Opcode,
) -> Result<CompId, PassError> {
    if let Some(&c) = made.get(&ty) {
        return Ok(c);
    }
    let id = hlo::ir::edit::add_scalar_binary_computation(module, names, "scalar_read", op, ty);
    made.insert(ty, id);
    Ok(id)
}

/// Rewrites the reshapes to rank 0 of one-element arrays in computation `cid`; returns how
/// many.
pub fn rewrite(
    module: &mut Module,
    cid: CompId,
    names: &mut NameGen,
    made: &mut HashMap<ElementType, CompId>,
) -> Result<usize, PassError> {
    let c = module.computation(cid);
    let found: Vec<(InstrId, InstrId, ElementType)> = c
        .instructions()
        .filter(|(_, i)| i.opcode() == Opcode::Reshape && i.shape().dims().is_empty())
        .filter_map(|(id, i)| {
            let x = *i.operands().first()?;
            let xi = c.instr(x);
            let one = xi.shape().element_count().ok()? == 1 && !xi.shape().dims().is_empty();
            one.then_some((id, x, i.shape().element_type()?))
        })
        .collect();
    let mut done = 0;
    for (id, x, ty) in found {
        let Some((init, op)) = identity(ty) else {
            continue;
        };
        let to_apply = reducer(module, made, names, ty, op)?;
        let c = module.computation_mut(cid);
        let rank = c.instr(x).shape().dims().len() as i64;
        let base = c.instr(id).name().to_string();
        let err = |e| PassError::ir(PASS, e);
        let z = Instruction::constant(names.fresh(&base), Shape::scalar(ty), init);
        let z = c.add_instruction_before(z, id).map_err(err)?;
        let r = Instruction::new(
            names.fresh(&base),
            Opcode::Reduce,
            Shape::scalar(ty),
            vec![x, z],
        )
        .with_attr(
            AttrName::Dimensions,
            AttrValue::IntList((0..rank).collect()),
        )
        .with_attr(AttrName::ToApply, AttrValue::Computation(to_apply));
        let r = c.add_instruction_before(r, id).map_err(err)?;
        c.replace_all_uses(id, r).map_err(err)?;
        done += 1;
    }
    Ok(done)
}
