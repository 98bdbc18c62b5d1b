//! A scan's input-to-output maps, inverted from its exact output-to-input maps.
//!
//! Where `scan_body` gives the exact relation from every output to the operand (a stacked
//! output reads its own slice and what its carries gathered), the relation read the other
//! way is exact too. The per-op table (`ops/scan.rs`) cannot look into the body: from an
//! input element it reaches every element of the later slices, so an element of row `i` of
//! a row-wise running sum along the columns reached every row. Inverting the exact maps
//! keeps only row `i`.
//!
//! A map inverts when each of its results is a constant or `±v + c` for a variable `v` (a
//! dimension or a range variable) no other result reads, and it has no runtime variables:
//! `v` is then `±(e_j - c)` of the operand's index `e_j` (within `v`'s interval), a constant
//! result `c` constrains `e_j` to `c`, and every other variable of the map becomes a range
//! variable of the inverse over its own interval. The constraints
//! carry over, renamed. Any other map (a sum, a division) leaves the table's supersets.

use affine::linear::Linear;
use affine::{Expr, IndexingMap, Interval, MapForm, VarKind};
use hlo::InstrRef;

use crate::ops::util::output_count;
use crate::{IndexedMap, IndexingError, OperandIndexing};

/// The maps from operand `operand` of the scan `instr` to each of its outputs, or `None`
/// where some output's map to that operand is not exact or does not invert.
pub(crate) fn in_to_out(
    instr: &InstrRef<'_>,
    operand: usize,
) -> Result<Option<Vec<OperandIndexing>>, IndexingError> {
    let i = instr.instr();
    let Some(&op) = i.operands().get(operand) else {
        return Ok(None);
    };
    let shape = instr.computation().instr(op).shape();
    if shape.is_tuple() {
        return Ok(None);
    }
    let operand_dims = shape.dims().to_vec();
    let mut out = Vec::new();
    for k in 0..output_count(i) {
        let Some(sets) = crate::scan_body::through_body(instr, k)? else {
            return Ok(None);
        };
        let Some(OperandIndexing::Maps(maps)) = sets.get(operand) else {
            return Ok(None);
        };
        let mut inverse = OperandIndexing::none();
        for m in maps.values() {
            if !m.runtime.is_empty() {
                return Ok(None);
            }
            match invert(&m.map, &operand_dims)? {
                Some(inv) => inverse.insert(IndexedMap::plain(inv)),
                None => return Ok(None),
            }
        }
        out.push(inverse);
    }
    Ok(Some(out))
}

/// The inverse of `m` (see the module documentation) over an operand of dimensions
/// `operand_dims`, or `None` where it does not invert.
pub(crate) fn invert(
    m: &IndexingMap,
    operand_dims: &[i64],
) -> Result<Option<IndexingMap>, IndexingError> {
    match m.form() {
        MapForm::Normal => {}
        MapForm::KnownEmpty => {
            // Reads nothing: reached from nothing.
            return Ok(Some(IndexingMap::known_empty()));
        }
        MapForm::Undefined => return Ok(None),
    }
    if !m.runtimes().is_empty() || m.results().len() != operand_dims.len() {
        return Ok(None);
    }
    // The expression of the operand's indices standing for each dimension / range variable
    // of `m` that a result reads.
    let mut dim_of: Vec<Option<Expr>> = vec![None; m.dims().len()];
    let mut range_of: Vec<Option<Expr>> = vec![None; m.ranges().len()];
    let mut constraints: Vec<(Expr, Interval)> = Vec::new();
    for (j, &r) in m.results().iter().enumerate() {
        let e = Expr::dim(j as u32);
        let Some(lin) = Linear::of(r) else {
            return Ok(None);
        };
        let c = lin.constant;
        let (v, a) = match lin.terms.as_slice() {
            [] => {
                constraints.push((e, Interval::new(c, c)));
                continue;
            }
            [(atom, a)] if a.abs() == 1 => match atom.as_var() {
                Some(v) => (v, *a),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        let (slot, bound) = match v.kind {
            VarKind::Dim => (&mut dim_of[v.index as usize], m.dims()[v.index as usize]),
            VarKind::Range => (
                &mut range_of[v.index as usize],
                m.ranges()[v.index as usize],
            ),
            VarKind::Runtime => return Ok(None),
        };
        if slot.is_some() {
            return Ok(None);
        }
        // `e = a * v + c` with `a = ±1`: `v = a * (e - c)`.
        let value = if a == 1 {
            e - Expr::constant(c)
        } else {
            Expr::constant(c) - e
        };
        *slot = Some(value);
        if value != e || bound != Interval::new(0, operand_dims[j] - 1) {
            constraints.push((value, bound));
        }
    }
    // Every variable of `m` no result stands for: a range variable of the inverse.
    let mut ranges = Vec::new();
    let mut fresh = |b: Interval| {
        ranges.push(b);
        Expr::range(ranges.len() as u32 - 1)
    };
    let dim_expr: Vec<Expr> = dim_of
        .iter()
        .zip(m.dims())
        .map(|(v, &b)| v.unwrap_or_else(|| fresh(b)))
        .collect();
    let range_expr: Vec<Expr> = range_of
        .iter()
        .zip(m.ranges())
        .map(|(v, &b)| v.unwrap_or_else(|| fresh(b)))
        .collect();
    let mut rename = |v: affine::Var| match v.kind {
        VarKind::Dim => dim_expr.get(v.index as usize).copied(),
        VarKind::Range => range_expr.get(v.index as usize).copied(),
        VarKind::Runtime => None,
    };
    for c in m.constraints() {
        constraints.push((c.expr.substitute(&mut rename), c.interval));
    }
    let dims = operand_dims
        .iter()
        .map(|&n| Interval::new(0, n - 1))
        .collect();
    let inverse = IndexingMap::new(dims, ranges, vec![], dim_expr, constraints)?;
    Ok(Some(inverse))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverts_a_row_wise_prefix_and_refuses_a_sum() {
        // (d0, d1)[s0] -> (d0, s0), d1 - s0 in [0, 7]: a row-wise running sum along d1.
        let m = IndexingMap::new(
            vec![Interval::new(0, 3), Interval::new(0, 7)],
            vec![Interval::new(0, 7)],
            vec![],
            vec![Expr::dim(0), Expr::range(0)],
            vec![(Expr::dim(1) - Expr::range(0), Interval::new(0, 7))],
        )
        .unwrap();
        let inv = invert(&m, &[4, 8]).unwrap().unwrap();
        assert_eq!(inv.results(), &[Expr::dim(0), Expr::range(0)]);
        assert_eq!(inv.ranges(), &[Interval::new(0, 7)]);
        assert_eq!(inv.constraints().len(), 1);
        assert_eq!(inv.constraints()[0].expr, Expr::range(0) - Expr::dim(1));
        // A sum of two indices does not invert.
        let sum = IndexingMap::new(
            vec![Interval::new(0, 3)],
            vec![Interval::new(0, 2)],
            vec![],
            vec![Expr::dim(0) + Expr::range(0)],
            vec![],
        )
        .unwrap();
        assert!(invert(&sum, &[6]).unwrap().is_none());
    }
}
