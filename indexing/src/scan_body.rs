//! A scan's stacked outputs, looking into its body: where the body's output `k` reads no
//! carry, the scan's output `k` at position `t` of the scanned dimension reads only the input
//! slices at `t`, through the body's own maps (the exact relation, where the per-op table
//! gives every slice up to `t`). Outputs that read a carry, final carries and bodies whose
//! maps are not plain keep the per-op table's supersets.

use affine::{Expr, IndexingMap, Interval, Var, VarKind};
use hlo::{InstrRef, Opcode};

use crate::compose::through_computation;
use crate::{IndexingError, OperandIndexing};

/// The maps of stacked output `k` of a scan to each of its operands through the body (see
/// the module documentation), or `None` where the per-op table's supersets stand.
pub(crate) fn stacked_out_to_in(
    instr: &InstrRef<'_>,
    k: usize,
) -> Result<Option<Vec<OperandIndexing>>, IndexingError> {
    let i = instr.instr();
    if instr.opcode() != Opcode::Scan {
        return Ok(None);
    }
    let (Some(body), Some(d)) = (
        i.to_apply(),
        i.scan_dimension().and_then(|d| usize::try_from(d).ok()),
    ) else {
        return Ok(None);
    };
    let arity = i.operands().len();
    let Some(inputs) = usize::try_from(i.scan_num_carries())
        .ok()
        .and_then(|c| arity.checked_sub(c))
    else {
        return Ok(None);
    };
    let shape = i.shape();
    let outputs = if shape.is_tuple() {
        shape.tuple_shapes().len()
    } else {
        1
    };
    let stacked = outputs.saturating_sub(arity - inputs);
    let out = match (shape.is_tuple(), k < stacked) {
        (true, true) => shape.tuple_shapes()[k].dims(),
        (false, true) => shape.dims(),
        _ => return Ok(None),
    };
    if d >= out.len() {
        return Ok(None);
    }
    let body_maps = through_computation(instr.module(), body)?;
    let Some(g) = body_maps.get(k) else {
        return Ok(None);
    };
    if g.operands.len() != arity {
        return Ok(None);
    }
    // A carry read (or not known to be unread) keeps the supersets.
    let reads_carry = g.operands[inputs..].iter().any(|s| match s {
        OperandIndexing::Undefined(_) => true,
        OperandIndexing::Maps(m) => !m.is_empty(),
    });
    if reads_carry {
        return Ok(None);
    }
    let mut result = Vec::with_capacity(arity);
    for set in &g.operands[..inputs] {
        let OperandIndexing::Maps(maps) = set else {
            return Ok(None);
        };
        let mut lifted = OperandIndexing::none();
        for m in maps.values() {
            match lift(&m.map, out, d) {
                Some(l) if m.runtime.is_empty() => lifted.insert(crate::IndexedMap::plain(l)),
                _ => return Ok(None),
            }
        }
        result.push(lifted);
    }
    result.extend((inputs..arity).map(|_| OperandIndexing::none()));
    Ok(Some(result))
}

/// A body map (from a step's output to a step's input slice) as a map from the stacked
/// output: dimension `d` inserted into the domain (`[0, out[d] - 1]`) and into the results
/// (position `d` read at the same position), the other dimensions renumbered.
fn lift(m: &IndexingMap, out: &[i64], d: usize) -> Option<IndexingMap> {
    if !m.runtimes().is_empty() || m.dims().len() + 1 != out.len() {
        return None;
    }
    let shift = |e: Expr| {
        e.substitute(&mut |v: Var| {
            (v.kind == VarKind::Dim && v.index as usize >= d).then(|| Expr::dim(v.index + 1))
        })
    };
    let mut dims = m.dims().to_vec();
    dims.insert(d, Interval::new(0, out[d] - 1));
    let mut results: Vec<Expr> = m.results().iter().map(|&e| shift(e)).collect();
    if d > results.len() {
        return None;
    }
    results.insert(d, Expr::dim(d as u32));
    let constraints = m
        .constraints()
        .iter()
        .map(|c| (shift(c.expr), c.interval))
        .collect();
    IndexingMap::new(dims, m.ranges().to_vec(), vec![], results, constraints).ok()
}
