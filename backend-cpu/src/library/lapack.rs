//! The LAPACK custom calls JAX emits on the CPU (`lapack_{s,d}potrf_ffi`,
//! `lapack_{s,d}trsm_ffi`, `lapack_{s,d}getrf_ffi`, QR's `lapack_{s,d}geqrf_ffi` and
//! `lapack_{s,d}orgqr_ffi` (Householder reflectors with LAPACK's signs, computed in `f64`
//! by the evaluator's routines so that `Q` and `R` agree with XLA's), and
//! `lapack_{s,d}syevd_ffi` and `lapack_{s,d}gesdd_ffi` (eigenvalues nondecreasing and
//! singular values nonincreasing, as LAPACK orders them; eigen- and singular vectors are
//! unique up to sign only, and their signs may differ from LAPACK's), the others with
//! `faer`, with LAPACK's
//! output conventions: `potrf` leaves the other triangle as it was and reports `info`
//! per matrix (0, or the 1-based order of the first non-positive minor, the matrix then
//! left as it was); `getrf` returns the factors packed in one matrix, 1-based pivot rows
//! as the sequence of row swaps, and `info` (the 1-based first zero pivot, or 0). The
//! matrices are the last two dimensions; leading dimensions are a batch.

use codegen::kir::ScalarType;
use faer::linalg::triangular_solve as tri;
use faer::{Mat, MatMut, MatRef, Par, Side};
use plan::LapackCall;

use super::arrays::{for_each_index, Arr};
use crate::error::BackendError;

fn bad(what: &str) -> BackendError {
    BackendError::Internal(format!("lapack: {what}"))
}

/// Batch dimensions and matrix size `(rows, cols)` of an array of rank >= 2.
fn split(a: &Arr) -> Result<(Vec<usize>, usize, usize), BackendError> {
    let r = a.dims.len();
    if r < 2 {
        return Err(bad("operand of rank < 2"));
    }
    Ok((a.dims[..r - 2].to_vec(), a.dims[r - 2], a.dims[r - 1]))
}

fn at(batch: &[usize], i: usize, j: usize) -> Vec<usize> {
    let mut v = batch.to_vec();
    v.push(i);
    v.push(j);
    v
}

macro_rules! real_impl {
    ($modname:ident, $t:ty) => {
        mod $modname {
            use super::*;

            fn get(a: &Arr, e: usize) -> $t {
                const W: usize = std::mem::size_of::<$t>();
                let b = &a.bytes()[e * W..(e + 1) * W];
                <$t>::from_ne_bytes(b.try_into().unwrap_or([0; W]))
            }

            fn set(a: &mut Arr, e: usize, v: $t) {
                const W: usize = std::mem::size_of::<$t>();
                a.bytes_mut()[e * W..(e + 1) * W].copy_from_slice(&v.to_ne_bytes());
            }

            fn load(a: &Arr, batch: &[usize], m: usize, n: usize) -> Mat<$t> {
                Mat::from_fn(m, n, |i, j| get(a, a.offset(&at(batch, i, j))))
            }

            fn store(a: &mut Arr, batch: &[usize], m: MatRef<'_, $t>) {
                for i in 0..m.nrows() {
                    for j in 0..m.ncols() {
                        let e = a.offset(&at(batch, i, j));
                        set(a, e, m[(i, j)]);
                    }
                }
            }

            /// One matrix as row-major `f64`.
            fn wide(a: &Arr, batch: &[usize], m: usize, n: usize) -> Vec<f64> {
                let mut v = Vec::with_capacity(m * n);
                for i in 0..m {
                    for j in 0..n {
                        v.push(get(a, a.offset(&at(batch, i, j))) as f64);
                    }
                }
                v
            }

            /// Stores row-major `f64` values into one matrix, rounded to the element type.
            fn store_wide(a: &mut Arr, batch: &[usize], m: usize, n: usize, v: &[f64]) {
                for i in 0..m {
                    for j in 0..n {
                        let e = a.offset(&at(batch, i, j));
                        set(a, e, v[i * n + j] as $t);
                    }
                }
            }

            /// Stores `len` values, `value(j)` for each `j`, as a batch's vector (the last
            /// dimension of `a`).
            fn store_vector(a: &mut Arr, batch: &[usize], len: usize, value: impl Fn(usize) -> $t) {
                let mut idx = batch.to_vec();
                let last = idx.len();
                idx.push(0);
                for j in 0..len {
                    idx[last] = j;
                    let e = a.offset(&idx);
                    set(a, e, value(j));
                }
            }

            fn solve(t: MatRef<'_, $t>, lower: bool, unit: bool, rhs: MatMut<'_, $t>) {
                match (lower, unit) {
                    (true, false) => tri::solve_lower_triangular_in_place(t, rhs, Par::Seq),
                    (true, true) => tri::solve_unit_lower_triangular_in_place(t, rhs, Par::Seq),
                    (false, false) => tri::solve_upper_triangular_in_place(t, rhs, Par::Seq),
                    (false, true) => tri::solve_unit_upper_triangular_in_place(t, rhs, Par::Seq),
                }
            }

            pub(super) fn run(
                call: LapackCall,
                ins: &[Arr],
                outs: &mut [Arr],
            ) -> Result<(), BackendError> {
                let a = ins.first().ok_or_else(|| bad("no operand"))?;
                let (bdims, m, n) = split(a)?;
                match call {
                    LapackCall::Potrf { lower } => {
                        let [factor, info] = outs else {
                            return Err(bad("potrf results"));
                        };
                        if m != n || factor.dims != a.dims || info.count() != bdims.iter().product::<usize>() {
                            return Err(bad("potrf shapes"));
                        }
                        let mut bi = 0usize;
                        for_each_index(&bdims, |batch| {
                            let mat = load(a, batch, n, n);
                            let side = if lower { Side::Lower } else { Side::Upper };
                            let mut out = mat.clone();
                            let code = match mat.as_ref().llt(side) {
                                Ok(llt) => {
                                    let l = llt.L();
                                    for i in 0..n {
                                        for j in 0..=i {
                                            // Upper: U = L^T.
                                            let (r, c) = if lower { (i, j) } else { (j, i) };
                                            out[(r, c)] = l[(i, j)];
                                        }
                                    }
                                    0
                                }
                                Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) => {
                                    index as i64 + 1
                                }
                            };
                            store(factor, batch, out.as_ref());
                            set_info(info, batch, code);
                            bi += 1;
                            Ok(())
                        })
                    }
                    LapackCall::Trsm {
                        left,
                        lower,
                        transpose,
                        unit_diagonal,
                    } => {
                        let b = ins.get(1).ok_or_else(|| bad("trsm without b"))?;
                        let [x] = outs else {
                            return Err(bad("trsm results"));
                        };
                        let (_, rows, cols) = split(b)?;
                        let k = if left { rows } else { cols };
                        if m != k || n != k || x.dims != b.dims || b.dims.len() != a.dims.len() {
                            return Err(bad("trsm shapes"));
                        }
                        let alpha = match ins.get(2) {
                            Some(s) if s.count() == 1 => get(s, 0),
                            Some(_) => return Err(bad("trsm alpha is not a scalar")),
                            None => 1.0,
                        };
                        for_each_index(&bdims, |batch| {
                            let am = load(a, batch, k, k);
                            let mut bm = load(b, batch, rows, cols);
                            if alpha != 1.0 {
                                for i in 0..rows {
                                    for j in 0..cols {
                                        bm[(i, j)] *= alpha;
                                    }
                                }
                            }
                            // op(A) and which triangle of it holds the data.
                            let opa = if transpose { am.transpose() } else { am.as_ref() };
                            let op_lower = lower != transpose;
                            if left {
                                solve(opa, op_lower, unit_diagonal, bm.as_mut());
                            } else {
                                // X op(A) = B  <=>  op(A)^T X^T = B^T.
                                solve(opa.transpose(), !op_lower, unit_diagonal, bm.as_mut().transpose_mut());
                            }
                            store(x, batch, bm.as_ref());
                            Ok(())
                        })
                    }
                    LapackCall::Geqrf => {
                        let [qr, tau] = outs else {
                            return Err(bad("geqrf results"));
                        };
                        let kmin = m.min(n);
                        let count: usize = bdims.iter().product();
                        if qr.dims != a.dims || tau.count() != count * kmin {
                            return Err(bad("geqrf shapes"));
                        }
                        for_each_index(&bdims, |batch| {
                            let mut v = wide(a, batch, m, n);
                            let taus = hlo_eval::numeric::geqrf_f64(&mut v, m, n);
                            store_wide(qr, batch, m, n, &v);
                            store_vector(tau, batch, taus.len(), |j| taus[j] as $t);
                            Ok(())
                        })
                    }
                    LapackCall::Orgqr => {
                        let t = ins.get(1).ok_or_else(|| bad("orgqr without tau"))?;
                        let [q] = outs else {
                            return Err(bad("orgqr results"));
                        };
                        let count: usize = bdims.iter().product::<usize>().max(1);
                        let k = t.count() / count;
                        if q.dims != a.dims || t.count() != count * k || k > m.min(n) {
                            return Err(bad("orgqr shapes"));
                        }
                        for_each_index(&bdims, |batch| {
                            let mut v = wide(a, batch, m, n);
                            let taus: Vec<f64> = (0..k)
                                .map(|j| {
                                    let mut idx = batch.to_vec();
                                    idx.push(j);
                                    get(t, t.offset(&idx)) as f64
                                })
                                .collect();
                            hlo_eval::numeric::orgqr_f64(&mut v, m, n, &taus);
                            store_wide(q, batch, m, n, &v);
                            Ok(())
                        })
                    }
                    LapackCall::Syevd { lower } => {
                        let [vectors, values, info] = outs else {
                            return Err(bad("syevd results"));
                        };
                        let count: usize = bdims.iter().product();
                        if m != n
                            || vectors.dims != a.dims
                            || values.count() != count * n
                            || info.count() != count
                        {
                            return Err(bad("syevd shapes"));
                        }
                        for_each_index(&bdims, |batch| {
                            // LAPACK reads the one triangle `uplo` names.
                            let mat = load(a, batch, n, n);
                            let side = if lower { Side::Lower } else { Side::Upper };
                            let code = match mat.as_ref().self_adjoint_eigen(side) {
                                Ok(evd) => {
                                    store(vectors, batch, evd.U());
                                    let s = evd.S().column_vector();
                                    store_vector(values, batch, n, |j| s[j]);
                                    0
                                }
                                // Did not converge: LAPACK's info > 0.
                                Err(_) => 1,
                            };
                            set_info(info, batch, code);
                            Ok(())
                        })
                    }
                    LapackCall::Gesdd => {
                        let [kept, values, u, vt, info] = outs else {
                            return Err(bad("gesdd results"));
                        };
                        let kmin = m.min(n);
                        let count: usize = bdims.iter().product();
                        let (_, ur, uc) = split(u)?;
                        let (_, vr, vc) = split(vt)?;
                        let full = uc == m && vr == n;
                        let thin = uc == kmin && vr == kmin;
                        if kept.dims != a.dims
                            || values.count() != count * kmin
                            || info.count() != count
                            || ur != m
                            || vc != n
                            || !(full || thin)
                        {
                            return Err(bad("gesdd shapes"));
                        }
                        for_each_index(&bdims, |batch| {
                            let mat = load(a, batch, m, n);
                            store(kept, batch, mat.as_ref());
                            let svd = if full {
                                mat.as_ref().svd()
                            } else {
                                mat.as_ref().thin_svd()
                            };
                            let code = match svd {
                                Ok(svd) => {
                                    store(u, batch, svd.U());
                                    store(vt, batch, svd.V().transpose());
                                    let s = svd.S().column_vector();
                                    store_vector(values, batch, kmin, |j| s[j]);
                                    0
                                }
                                Err(_) => 1,
                            };
                            set_info(info, batch, code);
                            Ok(())
                        })
                    }
                    LapackCall::Getrf => {
                        let [lu, piv, info] = outs else {
                            return Err(bad("getrf results"));
                        };
                        let kmin = m.min(n);
                        let count: usize = bdims.iter().product();
                        if lu.dims != a.dims || piv.count() != count * kmin || info.count() != count {
                            return Err(bad("getrf shapes"));
                        }
                        for_each_index(&bdims, |batch| {
                            let mat = load(a, batch, m, n);
                            let f = mat.as_ref().partial_piv_lu();
                            let (l, u) = (f.L(), f.U());
                            let packed = Mat::<$t>::from_fn(m, n, |i, j| if i > j { l[(i, j)] } else { u[(i, j)] });
                            store(lu, batch, packed.as_ref());
                            // The permutation as LAPACK's sequence of row swaps.
                            let fwd = f.P().arrays().0;
                            let mut cur: Vec<usize> = (0..m).collect();
                            let mut wh: Vec<usize> = (0..m).collect();
                            let mut code = 0i64;
                            for j in 0..kmin {
                                let q = wh[fwd[j]];
                                let mut pidx = batch.to_vec();
                                pidx.push(j);
                                let e = piv.offset(&pidx);
                                piv.set_int(e, q as i64 + 1);
                                cur.swap(j, q);
                                wh[cur[j]] = j;
                                wh[cur[q]] = q;
                                if code == 0 && u[(j, j)] == 0.0 {
                                    code = j as i64 + 1;
                                }
                            }
                            set_info(info, batch, code);
                            Ok(())
                        })
                    }
                }
            }
        }
    };
}

/// Sets a batch's `info` (a scalar when there is no batch).
fn set_info(info: &mut Arr, batch: &[usize], code: i64) {
    let idx = if info.dims.is_empty() {
        vec![]
    } else {
        batch.to_vec()
    };
    let e = info.offset(&idx);
    info.set_int(e, code);
}

real_impl!(f32_impl, f32);
real_impl!(f64_impl, f64);

/// Runs a LAPACK call on `f32` or `f64` matrices.
pub(crate) fn run(call: LapackCall, ins: &[Arr], outs: &mut [Arr]) -> Result<(), BackendError> {
    match ins.first().map(|a| a.ty) {
        Some(ScalarType::F32) => f32_impl::run(call, ins, outs),
        Some(ScalarType::F64) => f64_impl::run(call, ins, outs),
        _ => Err(bad("element type other than f32/f64")),
    }
}
