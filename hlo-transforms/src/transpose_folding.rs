//! Transpose folding: `dot(transpose(A), B)` becomes `dot(A, B)` with the dimension
//! numbers mapped through the permutation (same for the rhs), when that keeps the order
//! of the operand's non-contracting dimensions (they give the order of the result's
//! dimensions, which must not change). `convolution(transpose(A), K)` becomes
//! `convolution(A, K)` with the input's `dim_labels` mapped through the permutation (same
//! for the kernel): a convolution reads its operands only through their labelled
//! dimensions, so any permutation folds. Exact: the same products are summed.

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit;
use hlo::ir::{InstrId, Module};
use hlo::pass::{Pass, PassError};
use hlo::Opcode;

/// The pass (`transpose-folding`).
#[derive(Debug, Default)]
pub struct TransposeFolding;

impl Pass for TransposeFolding {
    fn name(&self) -> &str {
        "transpose-folding"
    }

    fn description(&self) -> &str {
        "folds transposes of dot and convolution operands into their dimension numbers"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let targets: Vec<(InstrId, Opcode)> = module.computations[ci]
                .instructions()
                .filter(|(_, i)| matches!(i.opcode, Opcode::Dot | Opcode::Convolution))
                .map(|(id, i)| (id, i.opcode))
                .collect();
            for (d, op) in targets {
                for side in 0..2 {
                    let comp = &mut module.computations[ci];
                    changed |= if op == Opcode::Dot {
                        fold(comp, d, side)
                    } else {
                        fold_into_convolution(comp, d, side)
                    };
                }
            }
        }
        if changed {
            edit::remove_dead_code_in_every_computation(module);
        }
        Ok(changed)
    }
}

fn fold(comp: &mut hlo::ir::Computation, d: InstrId, side: usize) -> bool {
    let dot = comp.instr(d);
    let t = dot.operands[side];
    let ti = comp.instr(t);
    if ti.opcode != Opcode::Transpose {
        return false;
    }
    let Some(perm) = ti.dimensions().map(<[i64]>::to_vec) else {
        return false;
    };
    let src = ti.operands[0];
    let dn = dot.dot_dimension_numbers();
    let (contracting, batch) = if side == 0 {
        (dn.lhs_contracting_dims, dn.lhs_batch_dims)
    } else {
        (dn.rhs_contracting_dims, dn.rhs_batch_dims)
    };
    let map = |v: &[i64]| -> Option<Vec<i64>> {
        v.iter()
            .map(|&x| usize::try_from(x).ok().and_then(|x| perm.get(x)).copied())
            .collect()
    };
    let (Some(new_c), Some(new_b)) = (map(&contracting), map(&batch)) else {
        return false;
    };
    let non_contracting: Vec<i64> = (0..perm.len() as i64)
        .filter(|x| !contracting.contains(x) && !batch.contains(x))
        .collect();
    let Some(mapped_nc) = map(&non_contracting) else {
        return false;
    };
    if mapped_nc.windows(2).any(|w| w[0] > w[1]) {
        return false;
    }
    let (cn, bn) = if side == 0 {
        (AttrName::LhsContractingDims, AttrName::LhsBatchDims)
    } else {
        (AttrName::RhsContractingDims, AttrName::RhsBatchDims)
    };
    let di = comp.instr_mut(d);
    di.operands[side] = src;
    di.set_attr(cn, AttrValue::IntList(new_c));
    if !new_b.is_empty() || di.attr(&bn).is_some() {
        di.set_attr(bn, AttrValue::IntList(new_b));
    }
    comp.recompute_users();
    true
}

/// Folds a transpose feeding operand `side` (0: input, 1: kernel) of convolution `c` into
/// its `dim_labels`: the dimension labelled `x` in the transposed value is dimension
/// `perm[x]` of the transpose's operand.
fn fold_into_convolution(comp: &mut hlo::ir::Computation, c: InstrId, side: usize) -> bool {
    let conv = comp.instr(c);
    let t = conv.operands[side];
    let ti = comp.instr(t);
    if ti.opcode != Opcode::Transpose {
        return false;
    }
    let (Some(perm), Some(dn)) = (ti.dimensions(), conv.conv_dimension_numbers()) else {
        return false;
    };
    let through = |x: i64| usize::try_from(x).ok().and_then(|x| perm.get(x)).copied();
    let all = |v: &[i64]| -> Option<Vec<i64>> { v.iter().map(|&x| through(x)).collect() };
    let mut dn = dn.clone();
    let mapped = if side == 0 {
        through(dn.input_batch_dimension)
            .zip(through(dn.input_feature_dimension))
            .zip(all(&dn.input_spatial_dimensions))
            .map(|((b, f), sp)| {
                dn.input_batch_dimension = b;
                dn.input_feature_dimension = f;
                dn.input_spatial_dimensions = sp;
            })
    } else {
        through(dn.kernel_input_feature_dimension)
            .zip(through(dn.kernel_output_feature_dimension))
            .zip(all(&dn.kernel_spatial_dimensions))
            .map(|((i, o), sp)| {
                dn.kernel_input_feature_dimension = i;
                dn.kernel_output_feature_dimension = o;
                dn.kernel_spatial_dimensions = sp;
            })
    };
    if mapped.is_none() {
        return false;
    }
    let src = ti.operands[0];
    let ci = comp.instr_mut(c);
    ci.operands[side] = src;
    ci.set_attr(AttrName::DimLabels, AttrValue::ConvDims(Box::new(dn)));
    comp.recompute_users();
    true
}
