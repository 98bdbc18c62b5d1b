//! Tuples, get-tuple-element, collectives, FFT, linear algebra, and the opcodes whose
//! accesses cannot be described (UNDEFINED with the reason).

use affine::Expr;

use super::util::{dims_of, from_scalar, identity, map, to_scalar, OpView};
use crate::{IndexingError, OperandIndexing};

/// Output `k` of a tuple is operand `k`; other operands are not read.
pub(crate) fn tuple_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(k)?;
    Ok((0..v.arity())
        .map(|j| {
            if j == k {
                identity(out)
            } else {
                OperandIndexing::none()
            }
        })
        .collect())
}

pub(crate) fn tuple_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let n = v.instr.shape().tuple_shapes().len();
    (0..n)
        .map(|k| {
            Ok(if k == operand {
                identity(v.out_dims(k)?)
            } else {
                OperandIndexing::none()
            })
        })
        .collect()
}

/// The identity from output `k` to operand `k` (same-shape collectives, barriers).
pub(crate) fn per_output_identity(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(k)?;
    Ok((0..v.arity())
        .map(|j| {
            if j == k || v.arity() == 1 {
                identity(out)
            } else {
                OperandIndexing::none()
            }
        })
        .collect())
}

/// all-gather: output index `i` along the gathered dimension holds element `i mod n` of
/// some participant's operand (superset: the participant is not known statically).
pub(crate) fn all_gather_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(k)?;
    let dims = v.dimensions()?;
    let &[dim] = dims else {
        return Err(v.malformed("all-gather needs one dimension"));
    };
    let dim = dim as usize;
    (0..v.arity())
        .map(|j| {
            if j != k && v.arity() > 1 {
                return Ok(OperandIndexing::none());
            }
            let od = v.operand_dims(j)?;
            let n = *od
                .get(dim)
                .ok_or_else(|| v.malformed("bad all-gather dimension"))?;
            let mut r = dims_of(out.len());
            r[dim] = r[dim].modulo(Expr::constant(n));
            Ok(OperandIndexing::map(map(out, &[], r, vec![])?))
        })
        .collect()
}

/// reduce-scatter: output index `i` reduces element `s * n + i` of the operand of every
/// participant, for the participant's shard `s` (superset over `s`).
pub(crate) fn reduce_scatter_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(k)?;
    let dims = v.dimensions()?;
    let &[dim] = dims else {
        return Err(v.malformed("reduce-scatter needs one dimension"));
    };
    let dim = dim as usize;
    (0..v.arity())
        .map(|j| {
            if j != k && v.arity() > 1 {
                return Ok(OperandIndexing::none());
            }
            let od = v.operand_dims(j)?;
            let (n_in, n_out) = (od[dim], out[dim]);
            if n_out <= 0 || n_in % n_out != 0 {
                return Err(v.malformed("reduce-scatter sizes do not divide"));
            }
            let mut r = dims_of(out.len());
            r[dim] = Expr::range(0) * n_out + r[dim];
            Ok(OperandIndexing::map(map(out, &[n_in / n_out], r, vec![])?))
        })
        .collect()
}

/// FFT: every output element reads the whole transformed dimensions (the last
/// `fft_length` ones) of its batch.
pub(crate) fn fft_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    let input = v.operand_dims(0)?;
    let l = v.instr.fft_length().map_or(0, <[i64]>::len);
    if l > input.len() || input.len() != out.len() {
        return Err(v.malformed("fft_length does not fit the operand"));
    }
    let batch = input.len() - l;
    let mut r = dims_of(batch);
    r.extend((0..l as u32).map(Expr::range));
    Ok(vec![OperandIndexing::map(map(
        out,
        &input[batch..],
        r,
        vec![],
    )?)])
}

/// Cholesky and triangular-solve: each output element reads (a superset: the whole) matrix
/// of its batch from every operand.
pub(crate) fn matrix_out_to_in(v: &OpView<'_>) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(0)?;
    (0..v.arity())
        .map(|j| {
            let od = v.operand_dims(j)?;
            if od.len() < 2 || od.len() != out.len() {
                return Err(v.malformed("operands must be batches of matrices"));
            }
            let batch = od.len() - 2;
            let mut r = dims_of(batch);
            r.extend([Expr::range(0), Expr::range(1)]);
            Ok(OperandIndexing::map(map(out, &od[batch..], r, vec![])?))
        })
        .collect()
}

/// rng-bit-generator and rng: every output element may depend on every element of every
/// operand (superset).
pub(crate) fn whole_operands(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let out = v.out_dims(k)?;
    (0..v.arity())
        .map(|j| {
            let od = v.operand_dims(j)?;
            if od.is_empty() {
                return to_scalar(out);
            }
            let r = (0..od.len() as u32).map(Expr::range).collect();
            Ok(OperandIndexing::map(map(out, od, r, vec![])?))
        })
        .collect()
}

/// In-to-out superset: every operand element may reach every output element.
pub(crate) fn whole_outputs(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let od = v.operand_dims(operand)?;
    (0..v.instr.shape().leaf_count().max(1))
        .map(|k| {
            let out = v.out_dims(k)?;
            if od.is_empty() {
                return from_scalar(out);
            }
            let r = (0..out.len() as u32).map(Expr::range).collect();
            Ok(OperandIndexing::map(map(od, out, r, vec![])?))
        })
        .collect()
}
