//! Dots that are products of broadcasts, for targets whose fusions XLA:CPU must compile.
//!
//! A dot without contracting dimensions (an outer product) is one multiply per output
//! element, and a dot one of whose operands has only batch and contracting dimensions (a
//! matrix-vector or vector-vector product, batched or not) is a multiply and a reduction
//! over the contracting dimensions. XLA:CPU's simplifier makes these rewrites itself
//! before fusion, so its modules hold them as loop fusions with their neighbours, where a
//! dot would stay a library call of its own. Done here before priority fusion, on the
//! xla_cpu target only (hloc's own runtime calls its GEMM for them). The products are
//! exact; the sum runs in another order than a GEMM's, as XLA's rewrite does.

use std::collections::HashMap;

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::NameGen;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::pass::PassError;
use hlo::shape::{ElementType, Shape};
use hlo::{CompId, InstrId, Instruction, Literal, Module, Opcode};

const PASS: &str = "priority-fusion";

/// Where each operand's dimensions go in the product's iteration space (output
/// dimensions, then the contracting ones), for a dot this rewrite applies to.
struct Plan {
    lhs: Vec<i64>,
    rhs: Vec<i64>,
    space: Vec<i64>,
    contracting: usize,
}

/// The free dimensions of an operand of rank `rank`: neither batch nor contracting.
fn free(rank: usize, batch: &[i64], contracting: &[i64]) -> Vec<i64> {
    (0..rank as i64)
        .filter(|d| !batch.contains(d) && !contracting.contains(d))
        .collect()
}

/// The plan for dot `d` of `comp`, where it is an outer product or one operand has only
/// batch and contracting dimensions, and each operand's dimensions land in order (a
/// broadcast, no transpose).
fn plan(comp: &hlo::Computation, d: InstrId) -> Option<Plan> {
    let i = comp.instr(d);
    let [l, r] = i.operands() else {
        return None;
    };
    let (ls, rs) = (comp.instr(*l).shape().dims(), comp.instr(*r).shape().dims());
    let out = i.shape().dims();
    let dn = i.dot_dimension_numbers();
    let lf = free(ls.len(), &dn.lhs_batch_dims, &dn.lhs_contracting_dims);
    let rf = free(rs.len(), &dn.rhs_batch_dims, &dn.rhs_contracting_dims);
    if !(dn.lhs_contracting_dims.is_empty() || lf.is_empty() || rf.is_empty()) {
        return None;
    }
    let (b, o) = (dn.lhs_batch_dims.len(), out.len());
    if o != b + lf.len() + rf.len() || dn.lhs_batch_dims.len() != dn.rhs_batch_dims.len() {
        return None;
    }
    let place = |rank: usize, batch: &[i64], contracting: &[i64], free: &[i64], at: usize| {
        (0..rank as i64)
            .map(|dim| {
                if let Some(k) = batch.iter().position(|&x| x == dim) {
                    k as i64
                } else if let Some(k) = contracting.iter().position(|&x| x == dim) {
                    (o + k) as i64
                } else {
                    (at + free.iter().position(|&x| x == dim).unwrap_or(0)) as i64
                }
            })
            .collect::<Vec<i64>>()
    };
    let lhs = place(
        ls.len(),
        &dn.lhs_batch_dims,
        &dn.lhs_contracting_dims,
        &lf,
        b,
    );
    let rhs = place(
        rs.len(),
        &dn.rhs_batch_dims,
        &dn.rhs_contracting_dims,
        &rf,
        b + lf.len(),
    );
    let increasing = |v: &[i64]| v.windows(2).all(|w| w[0] < w[1]);
    if !increasing(&lhs) || !increasing(&rhs) {
        return None;
    }
    let mut space = out.to_vec();
    for &c in &dn.lhs_contracting_dims {
        space.push(*ls.get(usize::try_from(c).ok()?)?);
    }
    Some(Plan {
        lhs,
        rhs,
        space,
        contracting: dn.lhs_contracting_dims.len(),
    })
}

/// Zero of `ty` (a sum's initial value, as a GEMM's accumulator starts).
fn zero(ty: ElementType) -> Option<Literal> {
    let mut d = ArrayData::new(ty)?;
    if ty.is_complex() {
        d.push_complex(ty, [0.0, 0.0], "0").ok()?;
    } else if ty.is_float() {
        d.push_float(ty, 0.0, None, "0").ok()?;
    } else if ty.is_integral() {
        d.push_int(ty, 0).ok()?;
    } else {
        return None;
    }
    Some(Literal::Array(ArrayLiteral::new(Shape::scalar(ty), d)?))
}

/// Rewrites the dots of computation `cid` that [`plan`] accepts; returns how many.
pub fn rewrite(
    module: &mut Module,
    cid: CompId,
    names: &mut NameGen,
    adders: &mut HashMap<ElementType, CompId>,
) -> Result<usize, PassError> {
    let c = module.computation(cid);
    let found: Vec<(InstrId, Plan)> = c
        .instructions()
        .filter(|(_, i)| i.opcode() == Opcode::Dot)
        .filter_map(|(id, _)| Some((id, plan(c, id)?)))
        .collect();
    let mut done = 0;
    for (d, plan) in found {
        let c = module.computation(cid);
        let di = c.instr(d).clone();
        let Some(ty) = di.shape().element_type() else {
            continue;
        };
        let Some(init) = zero(ty) else {
            continue;
        };
        let to_apply = (plan.contracting > 0).then(|| {
            crate::unit_reshapes::scalar_computation(
                module,
                adders,
                names,
                ty,
                Opcode::Add,
                "dot_sum",
            )
        });
        let c = module.computation_mut(cid);
        let err = |e| PassError::ir(PASS, e);
        let base = di.name().to_string();
        let space = Shape::array(ty, plan.space.clone());
        let mut spread = Vec::with_capacity(2);
        for (&x, dims) in di.operands().iter().zip([&plan.lhs, &plan.rhs]) {
            let mut x = x;
            let xs = c.instr(x).shape().clone();
            if xs.element_type() != Some(ty) {
                let cv = Instruction::new(
                    names.fresh(&base),
                    Opcode::Convert,
                    Shape::array(ty, xs.dims().to_vec()),
                    vec![x],
                );
                x = c.add_instruction_before(cv, d).map_err(err)?;
            }
            if xs.dims() == space.dims() {
                spread.push(x);
                continue;
            }
            let b = Instruction::new(
                names.fresh(&base),
                Opcode::Broadcast,
                space.clone(),
                vec![x],
            )
            .with_attr(AttrName::Dimensions, AttrValue::IntList(dims.clone()));
            spread.push(c.add_instruction_before(b, d).map_err(err)?);
        }
        let m = Instruction::new(names.fresh(&base), Opcode::Multiply, space, spread);
        let mut out = c.add_instruction_before(m, d).map_err(err)?;
        if let Some(to_apply) = to_apply {
            let z = Instruction::constant(names.fresh(&base), Shape::scalar(ty), init);
            let z = c.add_instruction_before(z, d).map_err(err)?;
            let o = di.shape().dims().len();
            let over: Vec<i64> = (o..o + plan.contracting).map(|k| k as i64).collect();
            let r = Instruction::new(
                names.fresh(&base),
                Opcode::Reduce,
                di.shape().clone(),
                vec![out, z],
            )
            .with_attr(AttrName::Dimensions, AttrValue::IntList(over))
            .with_attr(AttrName::ToApply, AttrValue::Computation(to_apply));
            out = c.add_instruction_before(r, d).map_err(err)?;
        }
        c.replace_all_uses(d, out).map_err(err)?;
        done += 1;
    }
    Ok(done)
}
