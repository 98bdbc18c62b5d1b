//! Reshapes that only drop dimensions of size 1 as one-element reductions, for targets
//! whose fusions XLA:CPU must compile.
//!
//! `x[k]` and `x[..., k]` in JAX are a slice and a reshape that drops the sliced dimension
//! of size 1. XLA:CPU tests a reshape on a fusion's elementwise path for being a bitcast,
//! which needs layouts fused values lack ([`crate::xla_cpu`]), so such a reshape would stay
//! a kernel of its own between the ops around it. A reduction over the dimensions of size
//! 1 drops them without moving a value, and XLA's emitters take a reduction anywhere in a
//! fusion. (A reshape that adds dimensions of size 1 stays: XLA:CPU tests the broadcast
//! that would add them for a bitcast too, and aborts without the layouts.) Exact: the
//! reduction adds its one element to `-0` (floats: `-0 + x` is `x` for every `x`, `-0`
//! and NaN included), to `0` (integers), or ors it with `false` (pred).

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

/// The two-parameter scalar computation applying `op` on `ty`, added to `module` once per
/// `made` map (named `scalar_read`).
pub(crate) fn reducer(
    module: &mut Module,
    made: &mut HashMap<ElementType, CompId>,
    names: &mut NameGen,
    ty: ElementType,
    op: Opcode,
) -> Result<CompId, PassError> {
    Ok(scalar_computation(
        module,
        made,
        names,
        ty,
        op,
        "scalar_read",
    ))
}

/// The two-parameter scalar computation applying `op` on `ty` named after `name`, added to
/// `module` the first time `made` is asked for `ty`.
pub(crate) fn scalar_computation(
    module: &mut Module,
    made: &mut HashMap<ElementType, CompId>,
    names: &mut NameGen,
    ty: ElementType,
    op: Opcode,
    name: &str,
) -> CompId {
    *made.entry(ty).or_insert_with(|| {
        hlo::ir::edit::add_scalar_binary_computation(module, names, name, op, ty)
    })
}

/// The dimensions other than those of size 1.
fn non_unit(dims: &[i64]) -> Vec<i64> {
    dims.iter().copied().filter(|&d| d != 1).collect()
}

/// Whether reshape `i` only drops dimensions of size 1 (of a non-empty array).
fn drops_unit_dims_only(c: &hlo::Computation, i: &Instruction) -> bool {
    let Some(&x) = i.operands().first() else {
        return false;
    };
    let (from, to) = (c.instr(x).shape().dims(), i.shape().dims());
    i.opcode() == Opcode::Reshape
        && from != to
        && !from.contains(&0)
        && i.shape().element_type().is_some()
        && non_unit(to) == to
        && non_unit(from) == to
}

/// Rewrites the reshapes of computation `cid` that only drop dimensions of size 1 as
/// one-element reductions over them; returns how many.
pub fn rewrite(
    module: &mut Module,
    cid: CompId,
    names: &mut NameGen,
    made: &mut HashMap<ElementType, CompId>,
) -> Result<usize, PassError> {
    let c = module.computation(cid);
    let found: Vec<InstrId> = c
        .instructions()
        .filter(|(_, i)| drops_unit_dims_only(c, i))
        .map(|(id, _)| id)
        .collect();
    let mut done = 0;
    for id in found {
        let c = module.computation(cid);
        let (x, shape) = (c.instr(id).operands()[0], c.instr(id).shape().clone());
        let Some(ty) = shape.element_type() else {
            continue;
        };
        let from = c.instr(x).shape().dims().to_vec();
        let units: Vec<i64> = (0..from.len() as i64)
            .filter(|&d| from[d as usize] == 1)
            .collect();
        let Some((init, op)) = identity(ty) else {
            continue;
        };
        let to_apply = reducer(module, made, names, ty, op)?;
        let c = module.computation_mut(cid);
        let base = c.instr(id).name().to_string();
        let err = |e| PassError::ir(PASS, e);
        let z = Instruction::constant(names.fresh(&base), Shape::scalar(ty), init);
        let z = c.add_instruction_before(z, id).map_err(err)?;
        let r = Instruction::new(names.fresh(&base), Opcode::Reduce, shape, vec![x, z])
            .with_attr(AttrName::Dimensions, AttrValue::IntList(units))
            .with_attr(AttrName::ToApply, AttrValue::Computation(to_apply));
        let out = c.add_instruction_before(r, id).map_err(err)?;
        c.replace_all_uses(id, out).map_err(err)?;
        done += 1;
    }
    Ok(done)
}
