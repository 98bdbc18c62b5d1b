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
//! as LAPACK's unblocked `potf2` leaves it: earlier columns factored, the failing
//! pivot on the diagonal, the rest as it was); `getrf` returns the factors packed in one matrix, 1-based pivot rows
//! as the sequence of row swaps, and `info` (the 1-based first zero pivot, or 0). The
//! matrices are the last two dimensions; leading dimensions are a batch.
//!
//! `potrf`, `trsm` and `getrf` run on `faer` views over the executor's memory, in place
//! where the plan lets them ([`super::lapack_direct`]). The others here work on copies:
//! each matrix is copied into (and its results out of) a dense `faer` matrix with direct
//! strided reads and writes (the array's strides are resolved once per call, see
//! [`Layout`]). A batch of two or more matrices runs its matrices in parallel on rayon,
//! each factorization single-threaded; a single matrix runs with `faer`'s own
//! parallelism. The results are computed first and then stored in batch order.

use codegen::kir::ScalarType;
use faer::{Mat, MatRef, Par, Side};
use plan::LapackCall;
use rayon::prelude::*;

use super::arrays::Arr;
use super::lapack_mem::{bad, Layout};
use crate::error::BackendError;

/// Batch dimensions and matrix size `(rows, cols)` of an array of rank >= 2.
fn split(a: &Arr) -> Result<(Vec<usize>, usize, usize), BackendError> {
    let r = a.dims.len();
    if r < 2 {
        return Err(bad("operand of rank < 2"));
    }
    Ok((a.dims[..r - 2].to_vec(), a.dims[r - 2], a.dims[r - 1]))
}

/// Runs `f(b, par)` for every batch member `b` of `count`, in parallel (each with
/// `Par::Seq`) when there are two or more, and returns the results in batch order. A
/// single member gets all of rayon's threads.
fn per_matrix<R: Send>(count: usize, f: impl Fn(usize, Par) -> R + Sync) -> Vec<R> {
    if count >= 2 {
        (0..count).into_par_iter().map(|b| f(b, Par::Seq)).collect()
    } else {
        (0..count).map(|b| f(b, Par::rayon(0))).collect()
    }
}

/// Sets batch member `b`'s integer (`info`, a pivot) at element `(0, j)` of `l`.
fn set_int(a: &mut Arr, l: &Layout, b: usize, j: usize, v: i64) {
    let e = l.at(b, 0, j);
    a.set_int(e, v);
}

macro_rules! real_impl {
    ($modname:ident, $t:ty) => {
        mod $modname {
            use super::*;

            /// The elements of `a` (in physical order).
            fn data(a: &Arr) -> &[$t] {
                bytemuck::cast_slice(&a.words)
            }

            /// The elements of `a`, writable.
            fn data_mut(a: &mut Arr) -> &mut [$t] {
                bytemuck::cast_slice_mut(&mut a.words)
            }

            /// Batch member `b` of `a` (laid out as `l`) as a dense matrix.
            fn load(d: &[$t], l: &Layout, b: usize) -> Mat<$t> {
                let base = l.bases[b];
                let (rs, cs) = (l.rs, l.cs);
                Mat::from_fn(l.rows, l.cols, |i, j| d[base + i * rs + j * cs])
            }

            /// Stores `m` as batch member `b` of an array laid out as `l`.
            fn store(d: &mut [$t], l: &Layout, b: usize, m: MatRef<'_, $t>) {
                let base = l.bases[b];
                let (rs, cs) = (l.rs, l.cs);
                if cs <= rs {
                    for i in 0..m.nrows() {
                        for j in 0..m.ncols() {
                            d[base + i * rs + j * cs] = m[(i, j)];
                        }
                    }
                } else {
                    for j in 0..m.ncols() {
                        for i in 0..m.nrows() {
                            d[base + i * rs + j * cs] = m[(i, j)];
                        }
                    }
                }
            }

            /// Batch member `b` as row-major `f64`.
            fn wide(d: &[$t], l: &Layout, b: usize) -> Vec<f64> {
                let mut v = Vec::with_capacity(l.rows * l.cols);
                for i in 0..l.rows {
                    for j in 0..l.cols {
                        v.push(d[l.at(b, i, j)] as f64);
                    }
                }
                v
            }

            /// Stores row-major `f64` values as batch member `b`, rounded to the element
            /// type.
            fn store_wide(d: &mut [$t], l: &Layout, b: usize, v: &[f64]) {
                for i in 0..l.rows {
                    for j in 0..l.cols {
                        d[l.at(b, i, j)] = v[i * l.cols + j] as $t;
                    }
                }
            }

            /// Stores `values` as batch member `b`'s vector (the last dimension).
            fn store_vector(d: &mut [$t], l: &Layout, b: usize, values: &[$t]) {
                for (j, &v) in values.iter().enumerate() {
                    d[l.at(b, 0, j)] = v;
                }
            }

            pub(super) fn run(
                call: LapackCall,
                ins: &[Arr],
                outs: &mut [Arr],
            ) -> Result<(), BackendError> {
                let a = ins.first().ok_or_else(|| bad("no operand"))?;
                let (bdims, m, n) = split(a)?;
                let count: usize = bdims.iter().product();
                if count == 0 {
                    // An empty batch: the results are empty too.
                    return Ok(());
                }
                let la = Layout::new(a, 2)?;
                let da = data(a);
                match call {
                    LapackCall::Geqrf => {
                        let [qr, tau] = outs else {
                            return Err(bad("geqrf results"));
                        };
                        let kmin = m.min(n);
                        if qr.dims != a.dims || tau.count() != count * kmin {
                            return Err(bad("geqrf shapes"));
                        }
                        let lq = Layout::expect(qr, 2, count, m, n)?;
                        let lt = Layout::expect(tau, 1, count, 1, kmin)?;
                        let results = per_matrix(count, |b, _| {
                            let mut v = wide(da, &la, b);
                            let taus = hlo_eval::numeric::geqrf_f64(&mut v, m, n);
                            (v, taus)
                        });
                        let dq = data_mut(qr);
                        for (b, (v, _)) in results.iter().enumerate() {
                            store_wide(dq, &lq, b, v);
                        }
                        let dt = data_mut(tau);
                        for (b, (_, taus)) in results.iter().enumerate() {
                            let taus: Vec<$t> = taus.iter().map(|&t| t as $t).collect();
                            store_vector(dt, &lt, b, &taus);
                        }
                        Ok(())
                    }
                    LapackCall::Orgqr => {
                        let t = ins.get(1).ok_or_else(|| bad("orgqr without tau"))?;
                        let [q] = outs else {
                            return Err(bad("orgqr results"));
                        };
                        let k = t.count() / count.max(1);
                        if q.dims != a.dims || t.count() != count.max(1) * k || k > m.min(n) {
                            return Err(bad("orgqr shapes"));
                        }
                        let lq = Layout::expect(q, 2, count, m, n)?;
                        let lt = Layout::expect(t, 1, count, 1, k)?;
                        let dt = data(t);
                        let results = per_matrix(count, |b, _| {
                            let mut v = wide(da, &la, b);
                            let taus: Vec<f64> =
                                (0..k).map(|j| dt[lt.at(b, 0, j)] as f64).collect();
                            hlo_eval::numeric::orgqr_f64(&mut v, m, n, &taus);
                            v
                        });
                        let dq = data_mut(q);
                        for (b, v) in results.iter().enumerate() {
                            store_wide(dq, &lq, b, v);
                        }
                        Ok(())
                    }
                    LapackCall::Syevd { lower } => {
                        let [vectors, values, info] = outs else {
                            return Err(bad("syevd results"));
                        };
                        if m != n
                            || vectors.dims != a.dims
                            || values.count() != count * n
                            || info.count() != count
                        {
                            return Err(bad("syevd shapes"));
                        }
                        let lv = Layout::expect(vectors, 2, count, n, n)?;
                        let lw = Layout::expect(values, 1, count, 1, n)?;
                        let li = Layout::expect(info, 0, count, 1, 1)?;
                        let results = per_matrix(count, |b, _| {
                            // LAPACK reads the one triangle `uplo` names.
                            let mat = load(da, &la, b);
                            let side = if lower { Side::Lower } else { Side::Upper };
                            match mat.as_ref().self_adjoint_eigen(side) {
                                Ok(evd) => {
                                    let s = evd.S().column_vector();
                                    let s: Vec<$t> = (0..n).map(|j| s[j]).collect();
                                    Some((evd.U().to_owned(), s))
                                }
                                // Did not converge: LAPACK's info > 0.
                                Err(_) => None,
                            }
                        });
                        for (b, r) in results.iter().enumerate() {
                            if let Some((u, s)) = r {
                                store(data_mut(vectors), &lv, b, u.as_ref());
                                store_vector(data_mut(values), &lw, b, s);
                            }
                            set_int(info, &li, b, 0, if r.is_some() { 0 } else { 1 });
                        }
                        Ok(())
                    }
                    LapackCall::Gesdd => {
                        let [kept, values, u, vt, info] = outs else {
                            return Err(bad("gesdd results"));
                        };
                        let kmin = m.min(n);
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
                        let lk = Layout::expect(kept, 2, count, m, n)?;
                        let lw = Layout::expect(values, 1, count, 1, kmin)?;
                        let lu = Layout::expect(u, 2, count, ur, uc)?;
                        let lvt = Layout::expect(vt, 2, count, vr, vc)?;
                        let li = Layout::expect(info, 0, count, 1, 1)?;
                        let results = per_matrix(count, |b, _| {
                            let mat = load(da, &la, b);
                            let svd = if full {
                                mat.as_ref().svd()
                            } else {
                                mat.as_ref().thin_svd()
                            };
                            let r = match svd {
                                Ok(svd) => {
                                    let s = svd.S().column_vector();
                                    let s: Vec<$t> = (0..kmin).map(|j| s[j]).collect();
                                    Some((svd.U().to_owned(), svd.V().transpose().to_owned(), s))
                                }
                                Err(_) => None,
                            };
                            (mat, r)
                        });
                        for (b, (mat, r)) in results.iter().enumerate() {
                            store(data_mut(kept), &lk, b, mat.as_ref());
                            if let Some((um, vtm, s)) = r {
                                store(data_mut(u), &lu, b, um.as_ref());
                                store(data_mut(vt), &lvt, b, vtm.as_ref());
                                store_vector(data_mut(values), &lw, b, s);
                            }
                            set_int(info, &li, b, 0, if r.is_some() { 0 } else { 1 });
                        }
                        Ok(())
                    }
                    LapackCall::Potrf { .. } | LapackCall::Trsm { .. } | LapackCall::Getrf => {
                        Err(bad("potrf, trsm and getrf run on views (lapack_direct)"))
                    }
                }
            }
        }
    };
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
