//! Scan, without looking into its body: a stacked output at position `t` of the scanned
//! dimension may read every input slice up to `t` (from `t` on for a reverse scan) and
//! every initial carry; a final carry may read every element of every operand. Supersets:
//! the body may read less. `indexing::output_to_input` first looks into the body
//! (`crate::scan_body`): where every carry an output reads is fresh or accumulating, the
//! output gets the exact maps (its own slice, the earlier slices its carries gathered).

use affine::{Expr, Interval};

use super::structural::{whole_operands, whole_outputs};
use super::util::{map, OpView};
use crate::{IndexingError, OperandIndexing};

/// The shape facts of a scan: the scanned dimension, its length, how many operands are
/// inputs (the rest are initial carries) and how many outputs are stacked (the rest are
/// final carries).
struct Scan {
    dim: usize,
    length: i64,
    inputs: usize,
    stacked: usize,
    reverse: bool,
}

fn scan_facts(v: &OpView<'_>) -> Result<Scan, IndexingError> {
    let dim = v
        .instr
        .scan_dimension()
        .and_then(|d| usize::try_from(d).ok())
        .ok_or_else(|| v.malformed("scan needs dimensions={d}"))?;
    let carries = usize::try_from(v.instr.scan_num_carries())
        .ok()
        .filter(|&n| n < v.arity())
        .ok_or_else(|| v.malformed("num_carries= is out of range"))?;
    let inputs = v.arity() - carries;
    if (0..v.arity()).any(|i| v.operand_shape(i).is_ok_and(|s| s.is_tuple())) {
        return Err(v.malformed("scan operands must be arrays"));
    }
    let outputs = super::util::output_count(v.instr);
    let stacked = outputs
        .checked_sub(carries)
        .ok_or_else(|| v.malformed("the result has fewer elements than num_carries="))?;
    let mut length = None;
    for i in 0..inputs {
        let d = v.operand_dims(i)?;
        let n = *d
            .get(dim)
            .ok_or_else(|| v.malformed(format!("input {i} has no dimension {dim}")))?;
        if length.is_some_and(|l| l != n) {
            return Err(v.malformed("scan inputs differ in length along the scanned dimension"));
        }
        length = Some(n);
    }
    let length = length.unwrap_or(0);
    for k in 0..stacked {
        if v.out_dims(k)?.get(dim) != Some(&length) {
            return Err(v.malformed(format!(
                "output {k} does not have the scan's length along dimension {dim}"
            )));
        }
    }
    Ok(Scan {
        dim,
        length,
        inputs,
        stacked,
        reverse: v.instr.scan_is_reverse(),
    })
}

/// `t - s` for a forward scan, `s - t` for a reverse one, constrained to `[0, L - 1]`:
/// the input position `s` comes at or before the output position `t` in scan order.
fn order(s: &Scan, t: Expr, pos: Expr) -> (Expr, Interval) {
    let diff = if s.reverse { pos - t } else { t - pos };
    (diff, Interval::new(0, s.length - 1))
}

/// From every element of `from` (rank with the scanned dimension) to every element of
/// `to` whose scanned position comes at or after (`from_is_output`: before) in scan order:
/// `(d...)[s...] -> (s...)` with the order constraint on the scanned dimension.
fn ordered_box(
    s: &Scan,
    from: &[i64],
    to: &[i64],
    from_is_output: bool,
) -> Result<OperandIndexing, IndexingError> {
    let results: Vec<Expr> = (0..to.len() as u32).map(Expr::range).collect();
    let (d_from, d_to) = (Expr::dim(s.dim as u32), Expr::range(s.dim as u32));
    let constraint = if from_is_output {
        order(s, d_from, d_to)
    } else {
        order(s, d_to, d_from)
    };
    Ok(OperandIndexing::map(map(
        from,
        to,
        results,
        vec![constraint],
    )?))
}

/// Maps from output `k` of a scan to each operand: a stacked output reads input slices
/// up to its position in scan order and every initial carry; a final carry every
/// element of every operand.
pub(crate) fn scan_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let s = scan_facts(v)?;
    if k >= s.stacked {
        return whole_operands(v, k);
    }
    let out = v.out_dims(k)?;
    let mut maps = whole_operands(v, k)?;
    for (i, m) in maps.iter_mut().enumerate().take(s.inputs) {
        *m = ordered_box(&s, out, v.operand_dims(i)?, true)?;
    }
    Ok(maps)
}

/// Maps from operand `operand` of a scan to each output: an input element reaches the
/// stacked outputs from its position on in scan order and every element of the final
/// carries; an initial carry every element of every output.
pub(crate) fn scan_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let s = scan_facts(v)?;
    let mut maps = whole_outputs(v, operand)?;
    if operand < s.inputs {
        let from = v.operand_dims(operand)?;
        for (k, m) in maps.iter_mut().enumerate().take(s.stacked) {
            *m = ordered_box(&s, from, v.out_dims(k)?, false)?;
        }
    }
    Ok(maps)
}
