//! The output→operand maps the tiling uses: the indexing analysis's, except for a
//! `ragged-dot`, which it leaves undefined (the group a row belongs to depends on the data).
//!
//! For tiling, a ragged dot reads like a dot whose group-dependent dimension (and the
//! group-sizes operand) is read whole, in its three forms:
//! - ragged non-contracting lhs dimension, rhs group dimension: a tile of the output reads
//!   the lhs and rhs as the dot would, every group of the rhs, and every group size;
//! - ragged contracting dimension (no rhs group dimension): the output leads with one
//!   dimension per group; output group `i` contracts over its own range of the contracting
//!   dimension, read whole here (the contracting dimension is tiled as a dot's);
//! - ragged batch dimension: a dot, plus every group size.
//!
//! Which elements a group reads depends on the group sizes, so these maps cover what any
//! data reads (propagation narrows the contracting and non-contracting forms with runtime
//! values the group sizes hold: `propagate/ragged_steps.rs`, `propagate/ragged_rows.rs`;
//! or, in group steps, relative to the step's group: `propagate/ragged_groups.rs`; no
//! element outside them), and the tiles they give are exact for the maps: the
//! reads of a tile whose rows fall in several groups are a subset of its tile, never more.
//! Output dimensions: the contracting form's group dimension, the batch dimensions, the
//! lhs's free dimensions, then the rhs's free dimensions (neither batch, contracting nor
//! group), as the evaluator computes them.

use std::collections::BTreeMap;

use affine::{Expr, IndexingMap, Interval};
use hlo::{AttrName, InstrRef, Opcode};
use indexing::{GroupedIndexing, IndexedMap, IndexingError, OperandIndexing};

/// `indexing::output_to_input`, with a ragged dot's maps (see the module documentation)
/// and an all-gather's per-participant maps (`collective`): the output→operand maps every
/// tiling form of this crate uses.
pub fn output_to_input(instr: &InstrRef<'_>) -> Result<Vec<GroupedIndexing>, IndexingError> {
    if let Some(g) = crate::collective::all_gather(instr) {
        return Ok(g);
    }
    if instr.opcode() == Opcode::RaggedDot {
        if let Some(g) = ragged_dot(instr) {
            return Ok(vec![g]);
        }
    }
    indexing::output_to_input(instr)
}

fn ints(instr: &hlo::Instruction, name: AttrName) -> Vec<usize> {
    match instr.attr(&name) {
        Some(hlo::AttrValue::IntList(v)) => {
            v.iter().filter_map(|&d| usize::try_from(d).ok()).collect()
        }
        _ => Vec::new(),
    }
}

fn plain(map: IndexingMap) -> OperandIndexing {
    let m = IndexedMap::plain(map);
    OperandIndexing::Maps(BTreeMap::from([(m.key(), m)]))
}

/// The maps of `ragged-dot(lhs, rhs, group_sizes)` with the group-dependent dimension read
/// whole (see the module documentation); `None` for a form the evaluator does not describe
/// (not one ragged dimension, more than one group dimension, group sizes of rank other than
/// 1, an output of another rank).
fn ragged_dot(instr: &InstrRef<'_>) -> Option<GroupedIndexing> {
    let i = instr.instr();
    let comp = instr.computation();
    let shape = |j: usize| -> Option<Vec<i64>> {
        Some(comp.instr(*i.operands().get(j)?).shape().dims().to_vec())
    };
    let (lhs, rhs, groups) = (shape(0)?, shape(1)?, shape(2)?);
    let out = i.shape().dims().to_vec();
    let dn = i.dot_dimension_numbers();
    let us =
        |v: &[i64]| -> Vec<usize> { v.iter().filter_map(|&d| usize::try_from(d).ok()).collect() };
    let (lb, rb) = (us(&dn.lhs_batch_dims), us(&dn.rhs_batch_dims));
    let (lc, rc) = (us(&dn.lhs_contracting_dims), us(&dn.rhs_contracting_dims));
    let group = ints(i, AttrName::RhsGroupDims);
    let ragged = ints(i, AttrName::LhsRaggedDims);
    if group.len() > 1
        || ragged.len() != 1
        || groups.len() != 1
        || lc.len() != rc.len()
        || lb.len() != rb.len()
    {
        return None;
    }
    // The rhs group dimension (the non-contracting form), or none (contracting, batch).
    let g = group.first().copied();
    // The contracting form's output leads with one dimension per group.
    let shift = usize::from(g.is_none() && lc.contains(&ragged[0]));
    let lhs_free: Vec<usize> = (0..lhs.len())
        .filter(|d| !lb.contains(d) && !lc.contains(d))
        .collect();
    let rhs_free: Vec<usize> = (0..rhs.len())
        .filter(|d| !rb.contains(d) && !rc.contains(d) && Some(*d) != g)
        .collect();
    if shift + lb.len() + lhs_free.len() + rhs_free.len() != out.len()
        || (shift == 1 && out.first() != groups.first())
    {
        return None;
    }
    let dims: Vec<Interval> = out.iter().map(|&d| Interval::new(0, d - 1)).collect();
    // Range variables: the contracting dimensions, then the group.
    let mut ranges: Vec<Interval> = lc.iter().map(|&d| Interval::new(0, lhs[d] - 1)).collect();
    ranges.push(Interval::new(0, groups[0] - 1));
    if let Some(g) = g {
        if rhs.get(g) != groups.first() {
            return None;
        }
    }
    let od = |k: usize| Expr::dim((shift + k) as u32);
    let group_var = Expr::range(lc.len() as u32);
    let lhs_results: Vec<Expr> = (0..lhs.len())
        .map(|d| {
            if let Some(b) = lb.iter().position(|&x| x == d) {
                od(b)
            } else if let Some(c) = lc.iter().position(|&x| x == d) {
                Expr::range(c as u32)
            } else {
                let f = lhs_free.iter().position(|&x| x == d).unwrap_or(0);
                od(lb.len() + f)
            }
        })
        .collect();
    let rhs_results: Vec<Expr> = (0..rhs.len())
        .map(|d| {
            if let Some(b) = rb.iter().position(|&x| x == d) {
                od(b)
            } else if let Some(c) = rc.iter().position(|&x| x == d) {
                Expr::range(c as u32)
            } else if Some(d) == g {
                group_var
            } else {
                let f = rhs_free.iter().position(|&x| x == d).unwrap_or(0);
                od(lb.len() + lhs_free.len() + f)
            }
        })
        .collect();
    let map = |results: Vec<Expr>| {
        IndexingMap::new(dims.clone(), ranges.clone(), vec![], results, vec![]).ok()
    };
    Some(GroupedIndexing {
        operands: vec![
            plain(map(lhs_results)?),
            plain(map(rhs_results)?),
            plain(map(vec![group_var])?),
        ],
    })
}
