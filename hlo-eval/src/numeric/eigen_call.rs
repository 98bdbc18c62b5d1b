//! The `lapack_{s,d}syevd_ffi` (`eigh`) and `lapack_{s,d}gesdd_ffi` (`svd`) custom calls
//! on the Jacobi kernels of `eigen.rs`: operands and results as XLA:CPU's FFI handlers
//! define them (`syevd`: vectors, values, info; `gesdd`: the overwritten input, values,
//! `U`, `V^T`, info). Complex (`heevd`, `cgesdd`) is not implemented.

use super::eigen::{svd, symmetric_eigen};
use super::linalg::{load_mat, matrix_dims, s32_array, store_mat, uplo_lower, Mat};
use super::util::{dims_of, operand, result_part};
use super::KernelError;
use hlo::{Instruction, Literal};
use std::cell::RefCell;

/// One evaluated `syevd` / `gesdd` call: its input matrices and the reference values, kept
/// so that `--check-reference` can check a backend's vectors by reconstruction
/// (`eigen_check.rs`), since vectors are unique only up to sign and rotation.
#[derive(Clone, Debug)]
pub struct Decomposition {
    /// The custom call's instruction name.
    pub name: String,
    /// `Some(lower)` for `syevd` (the lower triangle read when `lower`), `None` for `gesdd`.
    pub eigen: Option<bool>,
    /// Matrices in the batch.
    pub batch: usize,
    /// Rows of each matrix.
    pub m: usize,
    /// Columns of each matrix.
    pub n: usize,
    /// The operand matrices, row-major, `batch * m * n`.
    pub a: Vec<f64>,
    /// Eigenvalues (`batch * n`) or singular values (`batch * min(m, n)`).
    pub values: Vec<f64>,
}

thread_local! {
    /// `Some` while [`record`] collects the calls this thread evaluates.
    static RECORD: RefCell<Option<Vec<Decomposition>>> = const { RefCell::new(None) };
}

/// Runs `f` collecting every `syevd` / `gesdd` call it evaluates on this thread.
pub fn record<T>(f: impl FnOnce() -> T) -> (T, Vec<Decomposition>) {
    let outer = RECORD.with(|r| r.borrow_mut().replace(Vec::new()));
    let out = f();
    let calls = RECORD.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer));
    (out, calls.unwrap_or_default())
}

fn remember(d: Decomposition) {
    RECORD.with(|r| {
        if let Some(v) = r.borrow_mut().as_mut() {
            v.push(d);
        }
    });
}

/// Evaluates a `syevd` or `gesdd` custom call.
pub(crate) fn evaluate(
    target: &str,
    instr: &Instruction,
    operands: &[&Literal],
) -> Result<Literal, KernelError> {
    let what = target;
    let a = operand(operands, 0, what)?;
    let (batch, m, n) = matrix_dims(a.shape(), what)?;
    let Mat::Real(values) = load_mat(a, what)? else {
        return Err(KernelError::Unsupported(format!(
            "{what}: complex matrices (heevd / complex gesdd)"
        )));
    };
    let part = |i| result_part(instr.shape(), i, what);
    if target.ends_with("syevd_ffi") {
        if m != n {
            return Err(KernelError::Invalid(format!(
                "{what}: matrix is not square"
            )));
        }
        let lower = uplo_lower(instr, what)?;
        let (mut vectors, mut w, mut info) = (Vec::new(), Vec::new(), Vec::new());
        for mat in (0..batch).map(|b| &values[b * n * n..(b + 1) * n * n]) {
            match symmetric_eigen(mat, n, lower) {
                Some((wj, vj)) => {
                    w.extend(wj);
                    vectors.extend(vj);
                    info.push(0);
                }
                None => {
                    w.extend(std::iter::repeat_n(f64::NAN, n));
                    vectors.extend(std::iter::repeat_n(f64::NAN, n * n));
                    info.push(1);
                }
            }
        }
        remember(Decomposition {
            name: instr.name().to_string(),
            eigen: Some(lower),
            batch,
            m,
            n,
            a: values.clone(),
            values: w.clone(),
        });
        return Ok(Literal::Tuple(vec![
            store_mat(Mat::Real(vectors), part(0)?, what)?,
            store_mat(Mat::Real(w), part(1)?, what)?,
            s32_array(part(2)?, info, what)?,
        ]));
    }
    // gesdd: U is m x m (full), m x min(m, n) (thin) or absent (values only).
    let k = m.min(n);
    let trailing = |i| -> Result<(usize, usize), KernelError> {
        let d = dims_of(part(i)?, what)?;
        match d.len() {
            0 | 1 => Ok((0, 0)),
            l => Ok((d[l - 2], d[l - 1])),
        }
    };
    let (ur, uc) = trailing(2)?;
    let (vr, vc) = trailing(3)?;
    let full = uc == m && vr == n;
    let thin = uc == k && vr == k;
    let none = uc * ur == 0 && vr * vc == 0;
    if !(full || thin || none) || (!none && (ur != m || vc != n)) {
        return Err(KernelError::Invalid(format!(
            "{what}: U {ur}x{uc} and V^T {vr}x{vc} fit neither a full nor a thin SVD of {m}x{n}"
        )));
    }
    let (mut s, mut u, mut vt, mut info) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for mat in (0..batch).map(|b| &values[b * m * n..(b + 1) * m * n]) {
        match svd(mat, m, n, full) {
            Some((sj, uj, vtj)) => {
                s.extend(sj);
                if !none {
                    u.extend(uj);
                    vt.extend(vtj);
                }
                info.push(0);
            }
            None => {
                s.extend(std::iter::repeat_n(f64::NAN, k));
                u.extend(std::iter::repeat_n(f64::NAN, ur * uc));
                vt.extend(std::iter::repeat_n(f64::NAN, vr * vc));
                info.push(1);
            }
        }
    }
    remember(Decomposition {
        name: instr.name().to_string(),
        eigen: None,
        batch,
        m,
        n,
        a: values.clone(),
        values: s.clone(),
    });
    Ok(Literal::Tuple(vec![
        // LAPACK destroys the input; XLA's result 0 is that workspace, which JAX drops.
        store_mat(Mat::Real(values), part(0)?, what)?,
        store_mat(Mat::Real(s), part(1)?, what)?,
        store_mat(Mat::Real(u), part(2)?, what)?,
        store_mat(Mat::Real(vt), part(3)?, what)?,
        s32_array(part(4)?, info, what)?,
    ]))
}
