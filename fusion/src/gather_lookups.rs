//! Gathers in XLA's canonical form, for targets whose fusions XLA:CPU must compile.
//!
//! XLA:CPU's emitters take a gather inside a fusion only in XLA's canonical form
//! ([`crate::xla_cpu`]): indices `[N, k]` with the index vector last, the operand's first
//! `k` dimensions indexed in order, every slice dimension kept. JAX writes lookups
//! otherwise (`table[idx]` of a vector, an embedding `table[ids]` with `[B, S]` ids: the
//! index vector implicit, the looked-up dimension collapsed), so they would stay kernels of
//! their own. Where the gather's batch dimensions come first and its offset dimensions
//! last, the same lookup is: the indices as `[N, k]` (a reshape the gather's hero search
//! never reaches), the canonical gather, a one-element reduction over the dimensions of
//! size 1 the gather's result lacks ([`crate::unit_reshapes`]: it drops them, and XLA's
//! emitters take a reduction anywhere in a fusion), and, for several batch dimensions
//! larger than 1, a reshape back to them. Exact.

use std::collections::HashMap;

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::edit::NameGen;
use hlo::pass::PassError;
use hlo::shape::{ElementType, Shape};
use hlo::{CompId, InstrId, Instruction, Module, Opcode};

use crate::unit_reshapes::{identity, reducer};

const PASS: &str = "priority-fusion";

/// How a gather becomes canonical: its batch dimensions, index vector length (counting
/// the batching dimensions' indices), slice sizes and collapsed dimensions (the batching
/// ones included), the dimensions of the indices along which an iota supplies each
/// batching dimension's index (first in the index vector), and the operand dimensions the
/// index vector then indexes.
struct Plan {
    batch: Vec<i64>,
    k: i64,
    slice_sizes: Vec<i64>,
    collapsed: Vec<i64>,
    iotas: Vec<i64>,
    start_index_map: Vec<i64>,
}

/// The plan for gather `g` of `comp`, where it is not canonical and can be made so
/// without moving data: the index vector last or implicit, the operand's leading
/// dimensions indexed in order (its batching dimensions first: `take_along_axis` of one
/// row per batch element, as cross entropy with integer labels reads), batch dimensions
/// before offset ones.
fn plan(comp: &hlo::Computation, g: InstrId) -> Option<Plan> {
    let i = comp.instr(g);
    let dn = i.gather_dimension_numbers()?;
    let slice_sizes = i.gather_slice_sizes()?.to_vec();
    let [x, idx] = i.operands() else {
        return None;
    };
    let (x_rank, idx_dims) = (
        comp.instr(*x).shape().dims().len(),
        comp.instr(*idx).shape().dims(),
    );
    if dn.is_xla_canonical(idx_dims.len()) {
        return None;
    }
    let ivd = usize::try_from(dn.index_vector_dim).ok()?;
    let (batch, k) = if ivd == idx_dims.len() {
        (idx_dims.to_vec(), 1)
    } else if ivd + 1 == idx_dims.len() {
        (idx_dims[..ivd].to_vec(), idx_dims[ivd])
    } else {
        return None;
    };
    // Batching dimensions become indexed ones, their indices iotas along the matching
    // dimensions of the indices.
    let start_index_map: Vec<i64> = dn
        .operand_batching_dims
        .iter()
        .chain(&dn.start_index_map)
        .copied()
        .collect();
    let in_order = dn.start_index_map.len() as i64 == k
        && start_index_map
            .iter()
            .enumerate()
            .all(|(j, &d)| d == j as i64);
    let b = batch.len() as i64;
    let offsets_last = dn
        .offset_dims
        .iter()
        .enumerate()
        .all(|(j, &d)| d == b + j as i64);
    let mut collapsed: Vec<i64> = dn
        .collapsed_slice_dims
        .iter()
        .chain(&dn.operand_batching_dims)
        .copied()
        .collect();
    collapsed.sort_unstable();
    let kept = x_rank - collapsed.len();
    if !in_order || !offsets_last || dn.offset_dims.len() != kept || slice_sizes.len() != x_rank {
        return None;
    }
    let iotas = dn.start_indices_batching_dims.clone();
    if iotas.len() != dn.operand_batching_dims.len() || iotas.iter().any(|&d| d >= b) {
        return None;
    }
    // With batching dimensions the indices are built (iotas and a concatenate); they
    // become `[N, k]` without a reshape of their own only if one batch dimension at most
    // is larger than 1 (dropping dimensions of size 1 is a one-element reduction).
    if !iotas.is_empty() && batch.iter().filter(|&&n| n != 1).count() > 1 {
        return None;
    }
    Some(Plan {
        batch,
        k: k + iotas.len() as i64,
        slice_sizes,
        collapsed,
        iotas,
        start_index_map,
    })
}

/// The indices of a batching gather with the batching dimensions' indices first in the
/// index vector: iotas along the indices' batching dimensions, concatenated before the
/// indices (given an explicit index vector dimension of their own when it is implicit).
fn with_batch_indices(
    c: &mut hlo::Computation,
    names: &mut NameGen,
    base: &str,
    before: InstrId,
    idx: InstrId,
    plan: &Plan,
) -> Result<InstrId, hlo::ir::IrError> {
    let ity = c
        .instr(idx)
        .shape()
        .element_type()
        .unwrap_or(ElementType::S32);
    let column: Vec<i64> = plan.batch.iter().copied().chain([1]).collect();
    let mut explicit = idx;
    if c.instr(idx).shape().dims().len() == plan.batch.len() {
        let r = Instruction::new(
            names.fresh(base),
            Opcode::Reshape,
            Shape::array(ity, column.clone()),
            vec![idx],
        );
        explicit = c.add_instruction_before(r, before)?;
    }
    let mut parts = Vec::with_capacity(plan.iotas.len() + 1);
    for &d in &plan.iotas {
        let iota = Instruction::new(
            names.fresh(base),
            Opcode::Iota,
            Shape::array(ity, column.clone()),
            Vec::new(),
        )
        .with_attr(AttrName::IotaDimension, AttrValue::Int(d));
        parts.push(c.add_instruction_before(iota, before)?);
    }
    parts.push(explicit);
    let mut dims = plan.batch.clone();
    dims.push(plan.k);
    let cat = Instruction::new(
        names.fresh(base),
        Opcode::Concatenate,
        Shape::array(ity, dims),
        parts,
    )
    .with_attr(
        AttrName::Dimensions,
        AttrValue::IntList(vec![plan.batch.len() as i64]),
    );
    c.add_instruction_before(cat, before)
}

/// Dimensions of size 1 of `from` whose removal leaves `to` (sizes in order), when there
/// are such: dimensions of size 1 are interchangeable, as they do not change where an
/// element lies.
fn unit_dims_to_drop(from: &[i64], to: &[i64]) -> Option<Vec<i64>> {
    let mut drop = Vec::new();
    let mut t = to.iter().peekable();
    for (d, &n) in from.iter().enumerate() {
        if t.peek() == Some(&&n) {
            t.next();
        } else if n == 1 {
            drop.push(d as i64);
        } else {
            return None;
        }
    }
    t.next().is_none().then_some(drop)
}

/// Rewrites the gathers of computation `cid` that [`plan`] makes canonical; returns how
/// many.
pub fn rewrite(
    module: &mut Module,
    cid: CompId,
    names: &mut NameGen,
    made: &mut HashMap<ElementType, CompId>,
) -> Result<usize, PassError> {
    let c = module.computation(cid);
    let found: Vec<(InstrId, Plan)> = c
        .instructions()
        .filter(|(_, i)| i.opcode() == Opcode::Gather)
        .filter_map(|(id, _)| Some((id, plan(c, id)?)))
        .collect();
    let mut done = 0;
    for (g, plan) in found {
        let c = module.computation(cid);
        let gi = c.instr(g).clone();
        let Some(ty) = gi.shape().element_type() else {
            continue;
        };
        let n: i64 = plan.batch.iter().product();
        let canonical: Vec<i64> = std::iter::once(n)
            .chain(plan.slice_sizes.iter().copied())
            .collect();
        let over = match unit_dims_to_drop(&canonical, gi.shape().dims()) {
            Some(over) => over,
            // Several batch dimensions larger than 1: drop the collapsed dimensions, then
            // reshape.
            None => plan.collapsed.iter().map(|&d| d + 1).collect(),
        };
        let reduction = match identity(ty) {
            Some((init, op)) if !over.is_empty() => {
                Some((init, reducer(module, made, names, ty, op)?))
            }
            Some(_) => None,
            None => continue,
        };
        let c = module.computation_mut(cid);
        let (x, idx) = (gi.operands()[0], gi.operands()[1]);
        let Some(ity) = c.instr(idx).shape().element_type() else {
            continue;
        };
        let err = |e| PassError::ir(PASS, e);
        let base = gi.name().to_string();
        let add = |c: &mut hlo::Computation, i: Instruction| c.add_instruction_before(i, g);
        let idx = if plan.iotas.is_empty() {
            idx
        } else {
            with_batch_indices(c, names, &base, g, idx, &plan).map_err(err)?
        };
        let column = if c.instr(idx).shape().dims() == [n, plan.k] {
            idx
        } else {
            let r = Instruction::new(
                names.fresh(&base),
                Opcode::Reshape,
                Shape::array(ity, vec![n, plan.k]),
                vec![idx],
            );
            add(c, r).map_err(err)?
        };
        let rank = plan.slice_sizes.len() as i64;
        let mut canon = gi.clone();
        canon.users.clear();
        canon.name = names.fresh(&base);
        canon.operands = vec![x, column];
        canon.set_shape(Shape::array(ty, canonical.clone()));
        canon.set_attr(
            AttrName::OffsetDims,
            AttrValue::IntList((1..=rank).collect()),
        );
        canon.set_attr(AttrName::CollapsedSliceDims, AttrValue::IntList(Vec::new()));
        canon.set_attr(AttrName::IndexVectorDim, AttrValue::Int(1));
        canon.set_attr(
            AttrName::StartIndexMap,
            AttrValue::IntList(plan.start_index_map.clone()),
        );
        canon.remove_attr(&AttrName::OperandBatchingDims);
        canon.remove_attr(&AttrName::StartIndicesBatchingDims);
        let mut out = add(c, canon).map_err(err)?;
        if let Some((init, to_apply)) = reduction {
            let z = Instruction::constant(names.fresh(&base), Shape::scalar(ty), init);
            let z = add(c, z).map_err(err)?;
            let kept: Vec<i64> = canonical
                .iter()
                .enumerate()
                .filter(|&(d, _)| !over.contains(&(d as i64)))
                .map(|(_, &s)| s)
                .collect();
            let r = Instruction::new(
                names.fresh(&base),
                Opcode::Reduce,
                Shape::array(ty, kept),
                vec![out, z],
            )
            .with_attr(AttrName::Dimensions, AttrValue::IntList(over))
            .with_attr(AttrName::ToApply, AttrValue::Computation(to_apply));
            out = add(c, r).map_err(err)?;
        }
        if c.instr(out).shape().dims() != gi.shape().dims() {
            let r = Instruction::new(
                names.fresh(&base),
                Opcode::Reshape,
                gi.shape().clone(),
                vec![out],
            );
            out = add(c, r).map_err(err)?;
        }
        c.replace_all_uses(g, out).map_err(err)?;
        done += 1;
    }
    Ok(done)
}
