//! The batch-norm ops, exactly: every output element reads its own feature's per-feature
//! operands (scale, offset, mean, variance at the index along `feature_index`) and, where
//! statistics over the batch are computed (`batch-norm-training`, `batch-norm-grad`), every
//! operand element of its feature. Exact when a feature has at least two elements (with
//! one, the normalized value is 0 whatever the operand: a superset then).

use affine::Expr;

use super::util::{dims_of, map, OpView};
use crate::{IndexingError, OperandIndexing};

/// The operand's shape and the feature dimension.
fn geometry<'a>(v: &OpView<'a>) -> Result<(&'a [i64], usize), IndexingError> {
    let dims = v.operand_dims(0)?;
    let f = v
        .instr
        .feature_index()
        .and_then(|f| usize::try_from(f).ok())
        .filter(|&f| f < dims.len())
        .ok_or_else(|| v.malformed("missing or bad feature_index"))?;
    Ok((dims, f))
}

/// From an element of the operand's shape to its feature: `(d...) -> (d_f)`.
fn to_feature(dims: &[i64], f: usize) -> Result<OperandIndexing, IndexingError> {
    Ok(OperandIndexing::map(map(
        dims,
        &[],
        vec![Expr::dim(f as u32)],
        vec![],
    )?))
}

/// From feature `d0` to every element of the operand's shape with that feature:
/// `(d0)[s...] -> (s_0, ..., d0, ...)`.
fn feature_elements(dims: &[i64], f: usize) -> Result<OperandIndexing, IndexingError> {
    let mut ranges = Vec::new();
    let results = (0..dims.len())
        .map(|i| {
            if i == f {
                Expr::dim(0)
            } else {
                ranges.push(dims[i]);
                Expr::range(ranges.len() as u32 - 1)
            }
        })
        .collect();
    Ok(OperandIndexing::map(map(
        &dims[f..=f],
        &ranges,
        results,
        vec![],
    )?))
}

/// From an element of the operand's shape to every element with the same feature:
/// `(d...)[s...] -> (s_0, ..., d_f, ...)`.
fn same_feature(dims: &[i64], f: usize) -> Result<OperandIndexing, IndexingError> {
    let mut ranges = Vec::new();
    let results = (0..dims.len())
        .map(|i| {
            if i == f {
                Expr::dim(f as u32)
            } else {
                ranges.push(dims[i]);
                Expr::range(ranges.len() as u32 - 1)
            }
        })
        .collect();
    Ok(OperandIndexing::map(map(dims, &ranges, results, vec![])?))
}

/// The identity on the operand's shape.
fn identity(dims: &[i64]) -> Result<OperandIndexing, IndexingError> {
    Ok(OperandIndexing::map(map(
        dims,
        &[],
        dims_of(dims.len()),
        vec![],
    )?))
}

/// What output `k` reads of operand `j`, the same relation for both directions.
#[derive(Clone, Copy, PartialEq)]
enum Reads {
    /// Nothing.
    None,
    /// The same element (both operand-shaped).
    Same,
    /// Every element of the feature (both operand-shaped).
    Feature,
    /// A per-feature value: operand-shaped output, per-feature operand.
    OwnFeature,
    /// Per-feature output, operand-shaped operand: every element of the feature.
    AllOfFeature,
    /// Per-feature output and operand: the same feature.
    SameFeature,
}

/// The relation of output `k` of `v` to operand `j`.
fn reads(v: &OpView<'_>, k: usize, j: usize) -> Result<Reads, IndexingError> {
    use hlo::Opcode::*;
    use Reads::*;
    Ok(match (v.instr.opcode(), k, j) {
        // batch-norm-inference(operand, scale, offset, mean, variance) -> output.
        (BatchNormInference, 0, 0) => Same,
        (BatchNormInference, 0, _) => OwnFeature,
        // batch-norm-training(operand, scale, offset) -> (output, mean, variance).
        (BatchNormTraining, 0, 0) => Feature,
        (BatchNormTraining, 0, _) => OwnFeature,
        (BatchNormTraining, _, 0) => AllOfFeature,
        (BatchNormTraining, _, _) => None,
        // batch-norm-grad(operand, scale, mean, variance, grad_output)
        //   -> (grad_operand, grad_scale, grad_offset).
        (BatchNormGrad, 0, 0 | 4) => Feature,
        (BatchNormGrad, 0, _) => OwnFeature,
        (BatchNormGrad, 1, 0 | 4) => AllOfFeature,
        (BatchNormGrad, 1, 2 | 3) => SameFeature,
        (BatchNormGrad, 2, 4) => AllOfFeature,
        (BatchNormGrad, _, _) => None,
        _ => return Err(v.malformed("not a batch-norm op")),
    })
}

fn outputs(v: &OpView<'_>) -> usize {
    if v.instr.opcode() == hlo::Opcode::BatchNormInference {
        1
    } else {
        3
    }
}

fn check_arity(v: &OpView<'_>) -> Result<(), IndexingError> {
    let want = match v.instr.opcode() {
        hlo::Opcode::BatchNormTraining => 3,
        _ => 5,
    };
    if v.arity() != want {
        return Err(v.malformed(format!("expected {want} operands")));
    }
    Ok(())
}

/// Output `k` to each operand.
pub(crate) fn out_to_in(v: &OpView<'_>, k: usize) -> Result<Vec<OperandIndexing>, IndexingError> {
    check_arity(v)?;
    let (dims, f) = geometry(v)?;
    let features = [dims[f]];
    (0..v.arity())
        .map(|j| match reads(v, k, j)? {
            Reads::None => Ok(OperandIndexing::none()),
            Reads::Same => identity(dims),
            Reads::Feature => same_feature(dims, f),
            Reads::OwnFeature => to_feature(dims, f),
            Reads::AllOfFeature => feature_elements(dims, f),
            Reads::SameFeature => identity(&features),
        })
        .collect()
}

/// Operand `j` to each output.
pub(crate) fn in_to_out(v: &OpView<'_>, j: usize) -> Result<Vec<OperandIndexing>, IndexingError> {
    check_arity(v)?;
    let (dims, f) = geometry(v)?;
    let features = [dims[f]];
    (0..outputs(v))
        .map(|k| match reads(v, k, j)? {
            Reads::None => Ok(OperandIndexing::none()),
            Reads::Same => identity(dims),
            Reads::Feature => same_feature(dims, f),
            // The inverse relations: a per-feature operand reaches every output element of
            // its feature; an operand element reaches its feature's per-feature output.
            Reads::OwnFeature => feature_elements(dims, f),
            Reads::AllOfFeature => to_feature(dims, f),
            Reads::SameFeature => identity(&features),
        })
        .collect()
}
