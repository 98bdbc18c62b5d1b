//! `batch-norm-training`, `batch-norm-inference` and `batch-norm-grad` (TensorFlow emits
//! them; XLA expands them into reductions and elementwise ops). Statistics are computed
//! in `f64` with two passes over each feature and rounded once to the result type, so
//! results agree with XLA's `f32` expansion (`E[x^2] - E[x]^2`) to its rounding.

use super::util::{dim, dims_of, operand, result_part, strides};
use super::widen::{load, store, Buf, Domain};
use super::KernelError;
use hlo::{Instruction, Literal};

/// An operand's values in `f64`, with the feature index of every element.
struct Features {
    values: Vec<f64>,
    feature_of: Vec<usize>,
    features: usize,
    per_feature: usize,
}

fn features(
    instr: &Instruction,
    operands: &[&Literal],
    what: &str,
) -> Result<Features, KernelError> {
    let x = operand(operands, 0, what)?;
    if x.element_type().is_complex() || !x.element_type().is_float() {
        return Err(KernelError::Invalid(format!(
            "{what}: operand must be floating point"
        )));
    }
    let dims = dims_of(x.shape(), what)?;
    let fi = instr
        .feature_index()
        .ok_or_else(|| KernelError::Invalid(format!("{what}: missing feature_index")))?;
    let fi = dim(fi, dims.len(), what)?;
    let values = real(x, what)?;
    let st = strides(&dims)[fi];
    let features = dims[fi];
    let feature_of = (0..values.len()).map(|i| (i / st) % features).collect();
    let per_feature = values.len().checked_div(features).unwrap_or(0);
    Ok(Features {
        values,
        feature_of,
        features,
        per_feature,
    })
}

fn real(a: &hlo::literal::ArrayLiteral, what: &str) -> Result<Vec<f64>, KernelError> {
    match load(Domain::F64, a, what)? {
        Buf::F64(v) => Ok(v),
        _ => Err(KernelError::Invalid(format!(
            "{what}: expected real values"
        ))),
    }
}

/// A per-feature operand (scale, offset, mean, variance) of length `n`.
fn per_feature(
    operands: &[&Literal],
    i: usize,
    n: usize,
    what: &str,
) -> Result<Vec<f64>, KernelError> {
    let a = operand(operands, i, what)?;
    let v = real(a, what)?;
    if v.len() != n {
        return Err(KernelError::Invalid(format!(
            "{what}: operand {i} has {} values for {n} features",
            v.len()
        )));
    }
    Ok(v)
}

fn epsilon(instr: &Instruction) -> f64 {
    f64::from(instr.epsilon().unwrap_or(0.0))
}

/// Per-feature mean and biased variance.
fn moments(f: &Features) -> (Vec<f64>, Vec<f64>) {
    let n = f.per_feature.max(1) as f64;
    let mut mean = vec![0.0; f.features];
    for (v, &c) in f.values.iter().zip(&f.feature_of) {
        mean[c] += v;
    }
    mean.iter_mut().for_each(|m| *m /= n);
    let mut var = vec![0.0; f.features];
    for (v, &c) in f.values.iter().zip(&f.feature_of) {
        var[c] += (v - mean[c]) * (v - mean[c]);
    }
    var.iter_mut().for_each(|s| *s /= n);
    (mean, var)
}

fn normalize(
    f: &Features,
    mean: &[f64],
    var: &[f64],
    scale: &[f64],
    offset: &[f64],
    eps: f64,
) -> Vec<f64> {
    f.values
        .iter()
        .zip(&f.feature_of)
        .map(|(&v, &c)| (v - mean[c]) / (var[c] + eps).sqrt() * scale[c] + offset[c])
        .collect()
}

/// Evaluates `batch-norm-training`: `(normalized, batch mean, batch variance)`.
pub(crate) fn training(instr: &Instruction, operands: &[&Literal]) -> Result<Literal, KernelError> {
    const W: &str = "batch-norm-training";
    let f = features(instr, operands, W)?;
    let scale = per_feature(operands, 1, f.features, W)?;
    let offset = per_feature(operands, 2, f.features, W)?;
    let (mean, var) = moments(&f);
    let out = normalize(&f, &mean, &var, &scale, &offset, epsilon(instr));
    Ok(Literal::Tuple(vec![
        store(Buf::F64(out), result_part(instr.shape(), 0, W)?, W)?,
        store(Buf::F64(mean), result_part(instr.shape(), 1, W)?, W)?,
        store(Buf::F64(var), result_part(instr.shape(), 2, W)?, W)?,
    ]))
}

/// Evaluates `batch-norm-inference` with the given mean and variance.
pub(crate) fn inference(
    instr: &Instruction,
    operands: &[&Literal],
) -> Result<Literal, KernelError> {
    const W: &str = "batch-norm-inference";
    let f = features(instr, operands, W)?;
    let scale = per_feature(operands, 1, f.features, W)?;
    let offset = per_feature(operands, 2, f.features, W)?;
    let mean = per_feature(operands, 3, f.features, W)?;
    let var = per_feature(operands, 4, f.features, W)?;
    let out = normalize(&f, &mean, &var, &scale, &offset, epsilon(instr));
    store(Buf::F64(out), instr.shape(), W)
}

/// Evaluates `batch-norm-grad`: `(grad operand, grad scale, grad offset)`.
pub(crate) fn grad(instr: &Instruction, operands: &[&Literal]) -> Result<Literal, KernelError> {
    const W: &str = "batch-norm-grad";
    let f = features(instr, operands, W)?;
    let scale = per_feature(operands, 1, f.features, W)?;
    let mean = per_feature(operands, 2, f.features, W)?;
    let var = per_feature(operands, 3, f.features, W)?;
    let dy = real(operand(operands, 4, W)?, W)?;
    if dy.len() != f.values.len() {
        return Err(KernelError::Invalid(format!(
            "{W}: grad_output differs in size from the operand"
        )));
    }
    let eps = epsilon(instr);
    let n = f.per_feature.max(1) as f64;
    let mut sum_dy = vec![0.0; f.features];
    let mut sum_dy_xc = vec![0.0; f.features];
    for ((&x, &g), &c) in f.values.iter().zip(&dy).zip(&f.feature_of) {
        sum_dy[c] += g;
        sum_dy_xc[c] += g * (x - mean[c]);
    }
    let inv_std: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
    let grad_x: Vec<f64> = f
        .values
        .iter()
        .zip(&dy)
        .zip(&f.feature_of)
        .map(|((&x, &g), &c)| {
            scale[c]
                * inv_std[c]
                * (g - sum_dy[c] / n - (x - mean[c]) * sum_dy_xc[c] / n * inv_std[c] * inv_std[c])
        })
        .collect();
    let grad_scale: Vec<f64> = (0..f.features).map(|c| sum_dy_xc[c] * inv_std[c]).collect();
    Ok(Literal::Tuple(vec![
        store(Buf::F64(grad_x), result_part(instr.shape(), 0, W)?, W)?,
        store(Buf::F64(grad_scale), result_part(instr.shape(), 1, W)?, W)?,
        store(Buf::F64(sum_dy), result_part(instr.shape(), 2, W)?, W)?,
    ]))
}
