//! The output→operand maps of an `all-gather` for tiling: exact per participant.
//!
//! The indexing analysis gives an all-gather the superset `(.., d, ..) -> (.., d mod n, ..)`
//! (the participant holding a row is not part of the map). For tiling, the participant is
//! a runtime value `rt` in `[0, p - 1]` (its position in the replica group, `p` = the output
//! extent over the operand's `n` along the gathered dimension): output index `d` is element
//! `d - n * rt` of participant `rt`'s operand, for `d - n * rt in [0, n - 1]`. A tile
//! propagated through this map reads, on participant `rt`, exactly the elements of its
//! shard (the constraint masks the others), so tiles that straddle shards stay exact.

use std::collections::BTreeMap;

use affine::{Expr, IndexingMap, Interval};
use hlo::{InstrRef, Opcode};
use indexing::{GroupedIndexing, IndexedMap, OperandIndexing, RuntimeVar};

/// The maps of an all-gather (see the module documentation), one [`GroupedIndexing`] per
/// output; `None` for a form the verifier does not describe (not one gathered dimension,
/// operand and output shapes that do not agree).
pub(crate) fn all_gather(instr: &InstrRef<'_>) -> Option<Vec<GroupedIndexing>> {
    if instr.opcode() != Opcode::AllGather {
        return None;
    }
    let i = instr.instr();
    let comp = instr.computation();
    let &[dim] = i.dimensions()? else {
        return None;
    };
    let dim = usize::try_from(dim).ok()?;
    let arity = i.operands().len();
    let shape = i.shape();
    let outputs: Vec<Vec<i64>> = if shape.is_tuple() {
        shape
            .tuple_shapes()
            .iter()
            .map(|s| (!s.is_tuple()).then(|| s.dims().to_vec()))
            .collect::<Option<_>>()?
    } else {
        vec![shape.dims().to_vec()]
    };
    if outputs.len() != arity {
        return None;
    }
    outputs
        .iter()
        .enumerate()
        .map(|(k, out)| {
            let op = comp.instr(*i.operands().get(k)?).shape();
            if op.is_tuple() || op.dims().len() != out.len() {
                return None;
            }
            let n = *op.dims().get(dim)?;
            let total = *out.get(dim)?;
            if n < 1 || total % n != 0 {
                return None;
            }
            let rt = Expr::runtime(0);
            let mut results: Vec<Expr> = (0..out.len() as u32).map(Expr::dim).collect();
            results[dim] = Expr::dim(dim as u32) - rt * n;
            let dims: Vec<Interval> = out.iter().map(|&e| Interval::new(0, e - 1)).collect();
            let runtimes = vec![Interval::new(0, total / n - 1)];
            let map = IndexingMap::new(
                dims.clone(),
                vec![],
                runtimes.clone(),
                results.clone(),
                vec![(results[dim], Interval::new(0, n - 1))],
            )
            .ok()?;
            // The participant: a value of the all-gather itself, at no element.
            let participant = IndexingMap::new(dims, vec![], runtimes, vec![], vec![]).ok()?;
            let m = IndexedMap {
                map,
                runtime: vec![RuntimeVar {
                    computation: instr.comp_id(),
                    producer: instr.id(),
                    producer_name: format!("{} (participant)", instr.name()),
                    map: participant,
                }],
            };
            let operands = (0..arity)
                .map(|j| {
                    if j == k {
                        OperandIndexing::Maps(BTreeMap::from([(m.key(), m.clone())]))
                    } else {
                        OperandIndexing::none()
                    }
                })
                .collect();
            Some(GroupedIndexing { operands })
        })
        .collect()
}
