//! Dot decomposition into XLA's canonical form: every dot becomes
//! `reshape(dot(reshape(transpose(lhs)), reshape(transpose(rhs))))` where the lhs is
//! `[batch..., non-contracting, contracting]` and the rhs `[batch..., contracting,
//! non-contracting]` (non-contracting and contracting dimensions each collapsed into
//! one, of size 1 when there are none). Dots already in that form are left alone. Exact:
//! the same products are summed (the summation order of a backend may differ).

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::Shape;
use hlo::Opcode;

/// The pass (`dot-decomposer`).
#[derive(Debug, Default)]
pub struct DotDecomposer;

impl Pass for DotDecomposer {
    fn name(&self) -> &str {
        "dot-decomposer"
    }

    fn description(&self) -> &str {
        "rewrites dots to the canonical [batch, non-contracting, contracting] form"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let comp = &mut module.computations[ci];
            let dots: Vec<InstrId> = comp
                .instructions()
                .filter(|(_, i)| i.opcode == Opcode::Dot && i.operands.len() == 2)
                .map(|(id, _)| id)
                .collect();
            for d in dots {
                if let Some(new) = decompose(comp, d, &mut names) {
                    edit::replace_uses(comp, d, new);
                    edit::remove_instructions(comp, &std::iter::once(d).collect());
                    changed = true;
                }
            }
            if changed {
                edit::repair_order(comp);
            }
        }
        Ok(changed)
    }
}

fn product(dims: &[i64], which: &[usize]) -> Option<i64> {
    which
        .iter()
        .try_fold(1i64, |acc, &d| acc.checked_mul(*dims.get(d)?))
}

fn to_usize(v: &[i64]) -> Option<Vec<usize>> {
    v.iter().map(|&x| usize::try_from(x).ok()).collect()
}

/// Adds `op(x)` with `attrs` named after `base`.
fn add(
    comp: &mut Computation,
    names: &mut NameGen,
    base: &str,
    op: Opcode,
    shape: Shape,
    operands: Vec<InstrId>,
    attrs: Vec<(AttrName, AttrValue)>,
) -> InstrId {
    let mut i = Instruction::new(names.fresh(base), op, shape, operands);
    for (n, v) in attrs {
        i.set_attr(n, v);
    }
    edit::add(comp, i)
}

/// Transposes `x` into `order` (if not already) and reshapes to `dims` (if needed).
fn arrange(
    comp: &mut Computation,
    names: &mut NameGen,
    base: &str,
    x: InstrId,
    order: &[usize],
    dims: Vec<i64>,
) -> Option<InstrId> {
    let s = comp.instr(x).shape.clone();
    let ty = s.element_type()?;
    let mut cur = x;
    if order.iter().enumerate().any(|(i, &o)| i != o) {
        let tdims: Vec<i64> = order.iter().map(|&o| s.dims()[o]).collect();
        let perm: Vec<i64> = order.iter().map(|&o| o as i64).collect();
        cur = add(
            comp,
            names,
            base,
            Opcode::Transpose,
            Shape::array(ty, tdims),
            vec![cur],
            vec![(AttrName::Dimensions, AttrValue::IntList(perm))],
        );
    }
    if comp.instr(cur).shape.dims() != dims.as_slice() {
        cur = add(
            comp,
            names,
            base,
            Opcode::Reshape,
            Shape::array(ty, dims),
            vec![cur],
            Vec::new(),
        );
    }
    Some(cur)
}

fn decompose(comp: &mut Computation, d: InstrId, names: &mut NameGen) -> Option<InstrId> {
    let dot = comp.instr(d).clone();
    let dn = dot.dot_dimension_numbers();
    let (l, r) = (dot.operands[0], dot.operands[1]);
    let ld = comp.instr(l).shape.dims().to_vec();
    let rd = comp.instr(r).shape.dims().to_vec();
    let (lb, lc) = (
        to_usize(&dn.lhs_batch_dims)?,
        to_usize(&dn.lhs_contracting_dims)?,
    );
    let (rb, rc) = (
        to_usize(&dn.rhs_batch_dims)?,
        to_usize(&dn.rhs_contracting_dims)?,
    );
    let lnc: Vec<usize> = (0..ld.len())
        .filter(|x| !lb.contains(x) && !lc.contains(x))
        .collect();
    let rnc: Vec<usize> = (0..rd.len())
        .filter(|x| !rb.contains(x) && !rc.contains(x))
        .collect();
    let nb = lb.len();
    let canonical = ld.len() == nb + 2
        && rd.len() == nb + 2
        && lb.iter().enumerate().all(|(i, &b)| b == i)
        && rb.iter().enumerate().all(|(i, &b)| b == i)
        && lc == [nb + 1]
        && rc == [nb];
    if canonical {
        return None;
    }
    let batch_sizes: Vec<i64> = lb.iter().map(|&b| ld[b]).collect();
    let (lnc_n, c_n, rnc_n) = (product(&ld, &lnc)?, product(&ld, &lc)?, product(&rd, &rnc)?);
    let base = dot.name.clone();
    let lorder: Vec<usize> = lb.iter().chain(&lnc).chain(&lc).copied().collect();
    let mut ldims = batch_sizes.clone();
    ldims.extend([lnc_n, c_n]);
    let new_l = arrange(comp, names, &base, l, &lorder, ldims)?;
    let rorder: Vec<usize> = rb.iter().chain(&rc).chain(&rnc).copied().collect();
    let mut rdims = batch_sizes.clone();
    rdims.extend([c_n, rnc_n]);
    let new_r = arrange(comp, names, &base, r, &rorder, rdims)?;
    let ty = dot.shape.element_type()?;
    let mut odims = batch_sizes;
    odims.extend([lnc_n, rnc_n]);
    let batch: Vec<i64> = (0..nb as i64).collect();
    let mut nd = dot.clone();
    nd.users.clear();
    nd.name = names.fresh(&base);
    nd.operands = vec![new_l, new_r];
    nd.set_shape(Shape::array(ty, odims.clone()));
    nd.set_attr(
        AttrName::LhsContractingDims,
        AttrValue::IntList(vec![nb as i64 + 1]),
    );
    nd.set_attr(
        AttrName::RhsContractingDims,
        AttrValue::IntList(vec![nb as i64]),
    );
    if nb > 0 {
        nd.set_attr(AttrName::LhsBatchDims, AttrValue::IntList(batch.clone()));
        nd.set_attr(AttrName::RhsBatchDims, AttrValue::IntList(batch));
    }
    let new_dot = edit::add(comp, nd);
    if odims.as_slice() == dot.shape.dims() {
        return Some(new_dot);
    }
    Some(add(
        comp,
        names,
        &base,
        Opcode::Reshape,
        (*dot.shape).clone(),
        vec![new_dot],
        Vec::new(),
    ))
}
