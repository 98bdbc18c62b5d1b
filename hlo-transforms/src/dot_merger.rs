//! Dot merging: two independent dots that share an operand (`dot(A, B1)`, `dot(A, B2)`,
//! or the shared operand on the right) become one dot over the other operands
//! concatenated along their non-contracting dimension, and two slices of its result.
//! Conditions: same dimension numbers and attributes, the concatenated operands have one
//! free (non-batch, non-contracting) dimension and equal other dimensions,
//! neither dot depends on the other (no cycle is created), and the merged operand stays
//! under [`DotMerger::max_bytes`]. Exact: every output element is the same sum.

use std::collections::HashSet;

use hlo::attrs::{AttrName, AttrValue, SliceDim};
use hlo::ir::edit::{self, NameGen};
use hlo::ir::{Computation, InstrId, Instruction, Module};
use hlo::pass::{Pass, PassError};
use hlo::shape::Shape;
use hlo::Opcode;

/// The pass (`dot-merger`).
#[derive(Debug)]
pub struct DotMerger {
    /// Largest concatenated operand, in bytes.
    pub max_bytes: i64,
}

impl Default for DotMerger {
    fn default() -> DotMerger {
        DotMerger {
            max_bytes: 16 << 20,
        }
    }
}

impl Pass for DotMerger {
    fn name(&self) -> &str {
        "dot-merger"
    }

    fn description(&self) -> &str {
        "merges two independent dots sharing an operand into one dot and two slices"
    }

    fn run(&mut self, module: &mut Module) -> Result<bool, PassError> {
        let mut names = NameGen::new(module);
        let mut changed = false;
        for ci in 0..module.computations.len() {
            let comp = &mut module.computations[ci];
            while let Some((d1, d2, side)) = find_pair(comp, self.max_bytes) {
                merge(comp, d1, d2, side, &mut names);
                changed = true;
            }
            if changed {
                edit::repair_order(comp);
            }
        }
        Ok(changed)
    }
}

/// Attributes that must match, as text (dimension numbers, precision, ...).
fn attr_key(i: &Instruction) -> String {
    i.attrs
        .iter()
        .filter(|a| a.name != AttrName::Metadata)
        .map(|a| format!("{}={:?}", a.name.as_str(), a.value))
        .collect::<Vec<_>>()
        .join(",")
}

/// True when `to` is reachable from `from` through operands.
fn depends_on(comp: &Computation, from: InstrId, to: InstrId) -> bool {
    let mut seen = HashSet::new();
    let mut stack = vec![from];
    while let Some(x) = stack.pop() {
        if x == to {
            return true;
        }
        if seen.insert(x) {
            stack.extend(comp.instr(x).operands.iter().copied());
        }
    }
    false
}

/// The single free (neither batch nor contracting) dimension of operand `side` of `dot`,
/// if it has exactly one.
fn single_non_contracting(comp: &Computation, dot: InstrId, side: usize) -> Option<usize> {
    let i = comp.instr(dot);
    let dn = i.dot_dimension_numbers();
    let (c, b) = if side == 0 {
        (dn.lhs_contracting_dims, dn.lhs_batch_dims)
    } else {
        (dn.rhs_contracting_dims, dn.rhs_batch_dims)
    };
    let rank = comp.instr(i.operands[side]).shape.rank();
    let nc: Vec<usize> = (0..rank)
        .filter(|&d| !c.contains(&(d as i64)) && !b.contains(&(d as i64)))
        .collect();
    match nc.as_slice() {
        [d] => Some(*d),
        _ => None,
    }
}

/// Two dots to merge and the side of the operand they do not share.
fn find_pair(comp: &Computation, max_bytes: i64) -> Option<(InstrId, InstrId, usize)> {
    let dots: Vec<InstrId> = comp
        .instructions()
        .filter(|(_, i)| i.opcode == Opcode::Dot && i.operands.len() == 2)
        .map(|(id, _)| id)
        .collect();
    for (k, &a) in dots.iter().enumerate() {
        for &b in &dots[k + 1..] {
            let (ia, ib) = (comp.instr(a), comp.instr(b));
            if attr_key(ia) != attr_key(ib) || ia.shape.element_type() != ib.shape.element_type() {
                continue;
            }
            for shared in 0..2 {
                let other = 1 - shared;
                if ia.operands[shared] != ib.operands[shared]
                    || ia.operands[other] == ib.operands[other]
                {
                    continue;
                }
                let (Some(da), Some(db)) = (
                    single_non_contracting(comp, a, other),
                    single_non_contracting(comp, b, other),
                ) else {
                    continue;
                };
                let (sa, sb) = (
                    &comp.instr(ia.operands[other]).shape,
                    &comp.instr(ib.operands[other]).shape,
                );
                let same_rest = da == db
                    && sa.rank() == sb.rank()
                    && sa.element_type() == sb.element_type()
                    && (0..sa.rank()).all(|d| d == da || sa.dims()[d] == sb.dims()[d]);
                let bytes = sa
                    .byte_size()
                    .unwrap_or(i64::MAX)
                    .saturating_add(sb.byte_size().unwrap_or(i64::MAX));
                if same_rest
                    && bytes <= max_bytes
                    && !depends_on(comp, a, b)
                    && !depends_on(comp, b, a)
                {
                    return Some((a, b, other));
                }
            }
        }
    }
    None
}

fn merge(comp: &mut Computation, a: InstrId, b: InstrId, side: usize, names: &mut NameGen) {
    let (ia, ib) = (comp.instr(a).clone(), comp.instr(b).clone());
    let (oa, ob) = (ia.operands[side], ib.operands[side]);
    let d = single_non_contracting(comp, a, side).unwrap_or(0);
    let sa = (*comp.instr(oa).shape).clone();
    let sb = (*comp.instr(ob).shape).clone();
    let ty = sa.element_type().unwrap_or(hlo::shape::ElementType::F32);
    let mut cdims = sa.dims().to_vec();
    cdims[d] += sb.dims()[d];
    let concat = Instruction::new(
        names.fresh(&ia.name),
        Opcode::Concatenate,
        Shape::array(ty, cdims),
        vec![oa, ob],
    )
    .with_attr(AttrName::Dimensions, AttrValue::IntList(vec![d as i64]));
    let concat = edit::add(comp, concat);
    // The merged dimension's place in the result: batch dimensions come first, then the
    // lhs's free dimensions (here just the merged one), then the rhs's (the merged one last).
    let out_rank = ia.shape.rank();
    let batch = ia.dot_dimension_numbers().lhs_batch_dims.len();
    let out_dim = if side == 0 { batch } else { out_rank - 1 };
    let mut odims = ia.shape.dims().to_vec();
    odims[out_dim] += ib.shape.dims()[out_dim];
    let out_ty = ia.shape.element_type().unwrap_or(ty);
    let mut merged = ia.clone();
    merged.users.clear();
    merged.name = names.fresh(&ia.name);
    merged.operands[side] = concat;
    merged.set_shape(Shape::array(out_ty, odims.clone()));
    let merged = edit::add(comp, merged);
    let n1 = ia.shape.dims()[out_dim];
    for (old, start, limit) in [(a, 0, n1), (b, n1, odims[out_dim])] {
        let shape = (*comp.instr(old).shape).clone();
        let slice: Vec<SliceDim> = odims
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                if k == out_dim {
                    SliceDim {
                        start,
                        limit,
                        stride: 1,
                    }
                } else {
                    SliceDim {
                        start: 0,
                        limit: n,
                        stride: 1,
                    }
                }
            })
            .collect();
        let name = names.fresh(&comp.instr(old).name);
        let s = Instruction::new(name, Opcode::Slice, shape, vec![merged])
            .with_attr(AttrName::Slice, AttrValue::Slice(slice));
        let s = edit::add(comp, s);
        edit::replace_uses(comp, old, s);
    }
    edit::remove_instructions(comp, &[a, b].into_iter().collect());
}
