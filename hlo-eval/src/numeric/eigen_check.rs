//! `--check-reference` for the vectors of `eigh` (`syevd`) and `svd` (`gesdd`): they are
//! unique only up to sign (and rotation within a repeated value), so a backend's vectors
//! are checked by reconstruction against the call's input instead of element by element:
//! eigenvectors `V` by `V^T V = I` and `A V = V diag(w)`, `U` by `U^T U = I` and
//! `U^T A A^T U = diag(s^2)`, `V^T` by `V^T V = I` and `V A^T A V^T = diag(s^2)` (each fixes
//! the vectors up to that freedom, `w` and `s` being the reference's values). Every other
//! output, values included, is compared element-wise ([`compare_report`]).
//!
//! Only a module output that is such a vector result (through copies, bitcasts and the
//! `select` JAX wraps around it for `info != 0`) of an entry-computation call evaluated
//! once is checked this way; vectors that flow into further arithmetic are compared
//! element-wise, which may report a sign difference as a mismatch.

use super::eigen::symmetric;
use super::eigen_call::{record, Decomposition};
use super::widen::{load, Buf, Domain};
use crate::report::{compare_report, OutputReport};
use crate::tolerance::Tolerance;
use crate::EvalError;
use hlo::literal::ArrayLiteral;
use hlo::shape::ElementType;
use hlo::{Literal, Module, Opcode};

/// The reference evaluation of `module` on `args` with the `syevd` / `gesdd` calls it
/// evaluated (the input of [`output_report`]).
pub fn evaluate_recording(
    module: &Module,
    args: &[Literal],
) -> Result<(Literal, Vec<Decomposition>), EvalError> {
    let (out, calls) = record(|| crate::evaluate(module, args));
    Ok((out?, calls))
}

/// Output `i` (`got` from a backend, `want` from the reference) compared by reconstruction
/// when it is an eigen- or singular-vector result (see the module docs), else element-wise.
pub fn output_report(
    module: &Module,
    calls: &[Decomposition],
    i: usize,
    got: &ArrayLiteral,
    want: &ArrayLiteral,
    precision: Option<ElementType>,
) -> OutputReport {
    let elementwise = || compare_report(got, want, precision);
    let Some((name, part)) = vector_output(module, i) else {
        return elementwise();
    };
    let mut found = calls.iter().filter(|d| d.name == name);
    let (Some(d), None) = (found.next(), found.next()) else {
        return elementwise();
    };
    let eps = match (want.element_type(), got.element_type()) {
        (ElementType::F32, ElementType::F32) => f64::from(f32::EPSILON),
        (ElementType::F64, ElementType::F64) => f64::EPSILON,
        _ => return elementwise(),
    };
    if got.shape().dims() != want.shape().dims() {
        return elementwise();
    }
    let Ok(Buf::F64(v)) = load(Domain::F64, got, "eigen check") else {
        return elementwise();
    };
    let dims = got.shape().dims();
    let (r, c) = match dims.len() {
        l if l >= 2 => (dims[l - 2] as usize, dims[l - 1] as usize),
        _ => return elementwise(),
    };
    // Non-finite vectors (a failed call, `info != 0`) are compared as values.
    if r * c == 0 || v.len() != d.batch * r * c || v.iter().any(|x| !x.is_finite()) {
        return elementwise();
    }
    let residual = match (d.eigen, part) {
        (Some(lower), 0) if r == d.n && c == d.n => eigen_residual(d, lower, &v),
        (None, 2) if r == d.m => svd_residual(d, &v, c, true),
        (None, 3) if c == d.n => svd_residual(d, &v, r, false),
        _ => return elementwise(),
    };
    let tol = 16.0 * (d.m.max(d.n) + 1) as f64 * eps;
    let ok = residual <= tol;
    let elements = v.len();
    OutputReport {
        matches: ok,
        elements,
        mismatches: if ok { 0 } else { elements },
        max_abs_error: residual,
        max_rel_error: residual,
        first_mismatch: (!ok).then(|| {
            (
                vec![],
                format!("reconstruction residual {residual:.3e}"),
                format!("at most {tol:.3e} (vectors checked up to sign)"),
            )
        }),
        inf_vs_nan: 0,
        tolerance: Some(Tolerance {
            rtol: 0.0,
            atol: tol,
        }),
    }
}

/// The `syevd` / `gesdd` call (name) and result index output `i` of the entry is, when it
/// is an eigenvector (`syevd` 0) or singular-vector (`gesdd` 2, 3) result.
fn vector_output(module: &Module, i: usize) -> Option<(String, usize)> {
    let c = module.entry();
    let root = c.root();
    let mut id = if c.instr(root).opcode() == Opcode::Tuple {
        let ops = c.operands(root);
        // Flattened leaves are numbered like the root's operands only without nesting.
        if ops.iter().any(|&o| c.instr(o).shape().is_tuple()) {
            return None;
        }
        *ops.get(i)?
    } else if i == 0 {
        root
    } else {
        return None;
    };
    loop {
        let ins = c.instr(id);
        match ins.opcode() {
            Opcode::Copy | Opcode::Bitcast => id = *c.operands(id).first()?,
            // JAX: select(info == 0, vectors, NaN).
            Opcode::Select => id = *c.operands(id).get(1)?,
            Opcode::GetTupleElement => {
                let call = c.instr(*c.operands(id).first()?);
                let target = call.custom_call_target()?;
                let part = usize::try_from(ins.tuple_index()?).ok()?;
                let vectors = (target.ends_with("syevd_ffi") && part == 0)
                    || (target.ends_with("gesdd_ffi") && (part == 2 || part == 3));
                return vectors.then(|| (call.name().to_string(), part));
            }
            _ => return None,
        }
    }
}

/// Largest relative residual of eigenvectors `v` (`batch` row-major `n x n`, column `j`
/// for value `j`) over the batch.
fn eigen_residual(d: &Decomposition, lower: bool, v: &[f64]) -> f64 {
    let n = d.n;
    let mut worst = 0.0f64;
    for b in 0..d.batch {
        let s = symmetric(&d.a[b * n * n..(b + 1) * n * n], n, lower);
        let (v, w) = (
            &v[b * n * n..(b + 1) * n * n],
            &d.values[b * n..(b + 1) * n],
        );
        let scale = frobenius(&s).max(f64::MIN_POSITIVE);
        worst = worst.max(gram_error(v, n, n, true, &vec![1.0; n], 1.0));
        for i in 0..n {
            for j in 0..n {
                let sv: f64 = (0..n).map(|k| s[i * n + k] * v[k * n + j]).sum();
                worst = worst.max((sv - v[i * n + j] * w[j]).abs() / scale);
            }
        }
    }
    nan_is_worst(worst)
}

/// Largest relative residual of `U` (`left`: `batch` row-major `m x cols`) or `V^T`
/// (`batch` row-major `cols x n`): orthonormality, and `P P^T = diag(s^2)` for the
/// projections `P = U^T A` or `P = V^T A^T`, the values past `min(m, n)` being 0.
fn svd_residual(d: &Decomposition, x: &[f64], cols: usize, left: bool) -> f64 {
    let (m, n, k) = (d.m, d.n, d.m.min(d.n));
    let mut worst = 0.0f64;
    for b in 0..d.batch {
        let a = &d.a[b * m * n..(b + 1) * m * n];
        let s = &d.values[b * k..(b + 1) * k];
        let q = &x[b * (if left { m } else { n }) * cols..][..(if left { m } else { n }) * cols];
        let scale = (frobenius(a) * frobenius(a)).max(f64::MIN_POSITIVE);
        let s2: Vec<f64> = (0..cols).map(|j| s.get(j).map_or(0.0, |v| v * v)).collect();
        // Projections P (cols x other): U^T A (left) or V^T A^T = (A V)^T.
        let other = if left { n } else { m };
        let mut p = vec![0.0; cols * other];
        for j in 0..cols {
            for o in 0..other {
                p[j * other + o] = if left {
                    (0..m).map(|i| q[i * cols + j] * a[i * n + o]).sum()
                } else {
                    (0..n).map(|i| q[j * n + i] * a[o * n + i]).sum()
                };
            }
        }
        if left {
            worst = worst.max(gram_error(q, m, cols, true, &vec![1.0; cols], 1.0));
        } else {
            worst = worst.max(gram_error(q, cols, n, false, &vec![1.0; cols], 1.0));
        }
        worst = worst.max(gram_error(&p, cols, other, false, &s2, scale));
    }
    nan_is_worst(worst)
}

/// `max |G - diag(want)| / scale` for the Gram matrix `G` of the columns (`by_columns`) or
/// rows of the row-major `rows x cols` matrix `x`.
fn gram_error(
    x: &[f64],
    rows: usize,
    cols: usize,
    by_columns: bool,
    want: &[f64],
    scale: f64,
) -> f64 {
    let (count, len) = if by_columns {
        (cols, rows)
    } else {
        (rows, cols)
    };
    let at = |v: usize, e: usize| {
        if by_columns {
            x[e * cols + v]
        } else {
            x[v * cols + e]
        }
    };
    let mut worst = 0.0f64;
    for (i, &diagonal) in want.iter().enumerate().take(count) {
        for j in 0..count {
            let g: f64 = (0..len).map(|e| at(i, e) * at(j, e)).sum();
            let target = if i == j { diagonal } else { 0.0 };
            worst = worst.max((g - target).abs() / scale);
        }
    }
    nan_is_worst(worst)
}

fn frobenius(a: &[f64]) -> f64 {
    a.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `f64::max` drops NaN; a NaN residual must fail the check.
fn nan_is_worst(x: f64) -> f64 {
    if x.is_nan() {
        f64::INFINITY
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlo::literal::ArrayData;

    const EIGH: &str = "HloModule m\nENTRY e {\n  a = f64[3,3] parameter(0)\n  ev = (f64[3,3], f64[3], s32[]) custom-call(a), custom_call_target=\"lapack_dsyevd_ffi\", backend_config={mode = 86 : ui8, uplo = 76 : ui8}\n  v = f64[3,3] get-tuple-element(ev), index=0\n  w = f64[3] get-tuple-element(ev), index=1\n  ROOT t = (f64[3], f64[3,3]) tuple(w, v)\n}\n";

    fn array(dims: &[i64], v: Vec<f64>) -> ArrayLiteral {
        let shape = hlo::shape::Shape::array(ElementType::F64, dims.to_vec());
        ArrayLiteral::new(shape, ArrayData::F64(v)).expect("array")
    }

    #[test]
    fn vectors_are_checked_up_to_sign_not_element_wise() {
        let m = hlo::parse_module(EIGH).expect("parses");
        let a = [4.0, 1.0, -2.0, 1.0, 3.0, 0.5, -2.0, 0.5, 1.0];
        let input = Literal::Array(array(&[3, 3], a.to_vec()));
        let (out, calls) = evaluate_recording(&m, &[input]).expect("evaluates");
        let Literal::Tuple(parts) = out else {
            panic!("tuple")
        };
        let want = parts[1].as_array().expect("array").clone();
        let Buf::F64(v) = load(Domain::F64, &want, "t").expect("f64") else {
            panic!("f64")
        };
        let report =
            |got: Vec<f64>| output_report(&m, &calls, 1, &array(&[3, 3], got), &want, None);
        assert!(report(v.clone()).matches);
        // Column 1 negated: element-wise it differs, by reconstruction it matches.
        let flipped: Vec<f64> = (0..9)
            .map(|k| if k % 3 == 1 { -v[k] } else { v[k] })
            .collect();
        assert!(!compare_report(&array(&[3, 3], flipped.clone()), &want, None).matches);
        assert!(report(flipped).matches);
        // Columns 0 and 2 swapped: orthonormal but not eigenvectors of their values.
        let swapped: Vec<f64> = (0..9).map(|k| v[k - k % 3 + 2 - k % 3]).collect();
        let r = report(swapped);
        assert!(!r.matches && r.max_abs_error > 0.1, "{r:?}");
        // The values (output 0) are still compared element-wise.
        let w = parts[0].as_array().expect("array");
        let mut off = load(Domain::F64, w, "t")
            .map(|b| match b {
                Buf::F64(x) => x,
                _ => vec![],
            })
            .expect("f64");
        off[0] += 1e-3;
        assert!(!output_report(&m, &calls, 0, &array(&[3], off), w, None).matches);
    }
}
