//! Concatenates as pads and selects, for targets whose fusions XLA:CPU must compile.
//!
//! XLA:CPU emits a fusion whose hero is a concatenate with its concatenate emitter, which
//! computes each operand as a function of its own and needs their layouts, which fused
//! values lack ([`crate::xla_cpu`]): a concatenate of fused slices, reverses or
//! elementwise results would be a kernel per operand plus one for itself. The same values
//! as `select(iota < offset, pad(a), pad(b))` (each operand padded with zeros to the
//! result's extent, the one in range chosen) are elementwise work over pads, which any loop
//! fusion holds. Exact: every result element is one operand element, moved.

use hlo::attrs::{AttrName, AttrValue, ComparisonDirection, PaddingConfig, PaddingDim};
use hlo::ir::edit::NameGen;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::pass::PassError;
use hlo::shape::{ElementType, Shape};
use hlo::{CompId, InstrId, Instruction, Literal, Module, Opcode};

const PASS: &str = "priority-fusion";

/// Most operands a concatenate may have to be rewritten (each result element evaluates a
/// select per operand).
const MAX_OPERANDS: usize = 4;

/// A scalar zero (false) of `ty`, or `None` for types without one.
fn zero(ty: ElementType) -> Option<Literal> {
    let mut d = ArrayData::new(ty)?;
    let ok = if ty.is_pred() {
        d.push_bool(ty, false).is_ok()
    } else if ty.is_integral() {
        d.push_int(ty, 0).is_ok()
    } else if ty.is_complex() {
        d.push_complex(ty, [0.0, 0.0], "0").is_ok()
    } else if ty.is_float() {
        d.push_float(ty, 0.0, None, "0").is_ok()
    } else {
        false
    };
    ok.then(|| ArrayLiteral::new(Shape::scalar(ty), d).map(Literal::Array))?
}

/// Rewrites the concatenates of computation `cid` of at most [`MAX_OPERANDS`] array
/// operands; returns how many.
pub fn rewrite(module: &mut Module, cid: CompId, names: &mut NameGen) -> Result<usize, PassError> {
    let ids: Vec<InstrId> = module
        .computation(cid)
        .instructions()
        .filter(|(_, i)| {
            i.opcode() == Opcode::Concatenate
                && (2..=MAX_OPERANDS).contains(&i.operands().len())
                && i.shape().is_array()
        })
        .map(|(id, _)| id)
        .collect();
    let mut done = 0;
    for id in ids {
        if rewrite_one(module, cid, id, names)? {
            done += 1;
        }
    }
    Ok(done)
}

fn rewrite_one(
    module: &mut Module,
    cid: CompId,
    id: InstrId,
    names: &mut NameGen,
) -> Result<bool, PassError> {
    let c = module.computation_mut(cid);
    let instr = c.instr(id).clone();
    let Some(&[d]) = instr.dimensions() else {
        return Ok(false);
    };
    let Ok(d) = usize::try_from(d) else {
        return Ok(false);
    };
    let shape = instr.shape().clone();
    let (Some(ty), dims) = (shape.element_type(), shape.dims().to_vec()) else {
        return Ok(false);
    };
    let (Some(zero), Some(&total)) = (zero(ty), dims.get(d)) else {
        return Ok(false);
    };
    let err = |e| PassError::ir(PASS, e);
    let add = |c: &mut hlo::Computation, i: Instruction| c.add_instruction_before(i, id);
    let base = instr.name().to_string();
    let z = add(
        c,
        Instruction::constant(names.fresh(&base), Shape::scalar(ty), zero),
    )
    .map_err(err)?;
    let rank = dims.len();
    let mut offset = 0;
    let mut padded = Vec::new();
    for &o in instr.operands() {
        let size = c.instr(o).shape().dims().get(d).copied().unwrap_or(0);
        let config = PaddingConfig {
            dims: (0..rank)
                .map(|k| PaddingDim {
                    low: if k == d { offset } else { 0 },
                    high: if k == d { total - offset - size } else { 0 },
                    interior: 0,
                })
                .collect(),
        };
        let p = Instruction::new(names.fresh(&base), Opcode::Pad, shape.clone(), vec![o, z])
            .with_attr(AttrName::Padding, AttrValue::Padding(config));
        padded.push((add(c, p).map_err(err)?, offset));
        offset += size;
    }
    let s32 = ElementType::S32;
    let iota = Instruction::new(
        names.fresh(&base),
        Opcode::Iota,
        Shape::array(s32, dims.clone()),
        Vec::new(),
    )
    .with_attr(AttrName::IotaDimension, AttrValue::Int(d as i64));
    let iota = add(c, iota).map_err(err)?;
    let pred = Shape::array(ElementType::Pred, dims.clone());
    let mut result = padded.last().map(|&(p, _)| p).unwrap_or(z);
    for k in (0..padded.len() - 1).rev() {
        // Below the next operand's offset, this operand's (or an earlier one's) value.
        let next = padded[k + 1].1;
        let lit = {
            let mut data = ArrayData::new(s32).ok_or_else(|| PassError::invalid(PASS, "s32"))?;
            data.push_int(s32, i128::from(next))
                .map_err(|e| PassError::invalid(PASS, e.to_string()))?;
            ArrayLiteral::new(Shape::scalar(s32), data)
                .map(Literal::Array)
                .ok_or_else(|| PassError::invalid(PASS, "offset literal"))?
        };
        let bound = add(
            c,
            Instruction::constant(names.fresh(&base), Shape::scalar(s32), lit),
        )
        .map_err(err)?;
        let bound = add(
            c,
            Instruction::new(
                names.fresh(&base),
                Opcode::Broadcast,
                Shape::array(s32, dims.clone()),
                vec![bound],
            )
            .with_attr(AttrName::Dimensions, AttrValue::IntList(Vec::new())),
        )
        .map_err(err)?;
        let below = add(
            c,
            Instruction::new(
                names.fresh(&base),
                Opcode::Compare,
                pred.clone(),
                vec![iota, bound],
            )
            .with_attr(
                AttrName::Direction,
                AttrValue::ComparisonDirection(ComparisonDirection::Lt),
            ),
        )
        .map_err(err)?;
        result = add(
            c,
            Instruction::new(
                names.fresh(&base),
                Opcode::Select,
                shape.clone(),
                vec![below, padded[k].0, result],
            ),
        )
        .map_err(err)?;
    }
    c.replace_all_uses(id, result).map_err(err)?;
    Ok(true)
}
