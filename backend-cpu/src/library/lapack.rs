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
//!
//! Each matrix is copied into (and its results out of) a dense `faer` matrix with direct
//! strided reads and writes (the array's strides are resolved once per call, see
//! [`Layout`]). A batch of two or more matrices runs its matrices in parallel on rayon,
//! each factorization single-threaded; a single matrix runs with `faer`'s own
//! parallelism. The results are computed first and then stored in batch order.

use codegen::kir::ScalarType;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{self as llt, LltError};
use faer::linalg::lu::partial_pivoting::factor as plu;
use faer::linalg::triangular_solve as tri;
use faer::{Mat, MatMut, MatRef, Par, Side};
use plan::LapackCall;
use rayon::prelude::*;

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

/// Where an array's batch of matrices (or vectors, or scalars) lies in its physical
/// order: the element offset of each batch member (leading dimensions in row-major
/// order) and the element strides and extents of the trailing `inner` dimensions.
struct Layout {
    /// Physical element offset of each batch member's first element.
    bases: Vec<usize>,
    /// Extent of the second-to-last inner dimension (rows; 1 for vectors and scalars).
    rows: usize,
    /// Extent of the last inner dimension (columns; 1 for scalars).
    cols: usize,
    /// Element stride between rows.
    rs: usize,
    /// Element stride between columns.
    cs: usize,
}

impl Layout {
    /// The layout of `a` with its last `inner` (0, 1 or 2) dimensions per batch member.
    fn new(a: &Arr, inner: usize) -> Result<Layout, BackendError> {
        let r = a.dims.len();
        if r < inner || inner > 2 {
            return Err(bad("operand rank"));
        }
        let lead = r - inner;
        let mut bases = Vec::new();
        for_each_index(&a.dims[..lead], |idx| {
            bases.push(idx.iter().zip(&a.strides).map(|(i, s)| i * s).sum());
            Ok(())
        })?;
        let (rows, rs) = if inner == 2 {
            (a.dims[lead], a.strides[lead])
        } else {
            (1, 0)
        };
        let (cols, cs) = if inner >= 1 {
            (a.dims[r - 1], a.strides[r - 1])
        } else {
            (1, 0)
        };
        Ok(Layout {
            bases,
            rows,
            cols,
            rs,
            cs,
        })
    }

    /// The layout of a result holding `batch` members of `rows x cols` (`inner` trailing
    /// dimensions); an error when the array has another shape.
    fn expect(
        a: &Arr,
        inner: usize,
        batch: usize,
        rows: usize,
        cols: usize,
    ) -> Result<Layout, BackendError> {
        let l = Layout::new(a, inner)?;
        if l.bases.len() != batch || l.rows != rows || l.cols != cols {
            return Err(bad("result shapes"));
        }
        Ok(l)
    }

    /// The physical element offset of element `(i, j)` of batch member `b`.
    #[inline]
    fn at(&self, b: usize, i: usize, j: usize) -> usize {
        self.bases[b] + i * self.rs + j * self.cs
    }
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

            fn solve(t: MatRef<'_, $t>, lower: bool, unit: bool, rhs: MatMut<'_, $t>, par: Par) {
                match (lower, unit) {
                    (true, false) => tri::solve_lower_triangular_in_place(t, rhs, par),
                    (true, true) => tri::solve_unit_lower_triangular_in_place(t, rhs, par),
                    (false, false) => tri::solve_upper_triangular_in_place(t, rhs, par),
                    (false, true) => tri::solve_unit_upper_triangular_in_place(t, rhs, par),
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
                    LapackCall::Potrf { lower } => {
                        let [factor, info] = outs else {
                            return Err(bad("potrf results"));
                        };
                        if m != n || factor.dims != a.dims || info.count() != count {
                            return Err(bad("potrf shapes"));
                        }
                        let lf = Layout::expect(factor, 2, count, n, n)?;
                        let li = Layout::expect(info, 0, count, 1, 1)?;
                        let results = per_matrix(count, |b, par| {
                            // The triangle `uplo` names, as the lower one (U = L^T).
                            let mut l = Mat::<$t>::zeros(n, n);
                            for j in 0..n {
                                for i in j..n {
                                    let e = if lower {
                                        la.at(b, i, j)
                                    } else {
                                        la.at(b, j, i)
                                    };
                                    l[(i, j)] = da[e];
                                }
                            }
                            let mut mem = MemBuffer::new(llt::cholesky_in_place_scratch::<$t>(
                                n,
                                par,
                                Default::default(),
                            ));
                            match llt::cholesky_in_place(
                                l.as_mut(),
                                Default::default(),
                                par,
                                MemStack::new(&mut mem),
                                Default::default(),
                            ) {
                                Ok(_) => (Some(l), 0),
                                Err(LltError::NonPositivePivot { index }) => {
                                    (None, index as i64 + 1)
                                }
                            }
                        });
                        let df = data_mut(factor);
                        for (b, (l, _)) in results.iter().enumerate() {
                            // The other triangle (everything, on failure) as it was.
                            for i in 0..n {
                                for j in 0..n {
                                    df[lf.at(b, i, j)] = da[la.at(b, i, j)];
                                }
                            }
                            if let Some(l) = l {
                                for i in 0..n {
                                    for j in 0..=i {
                                        let e = if lower {
                                            lf.at(b, i, j)
                                        } else {
                                            lf.at(b, j, i)
                                        };
                                        df[e] = l[(i, j)];
                                    }
                                }
                            }
                        }
                        for (b, (_, code)) in results.iter().enumerate() {
                            set_int(info, &li, b, 0, *code);
                        }
                        Ok(())
                    }
                    LapackCall::Trsm {
                        left,
                        lower,
                        transpose,
                        unit_diagonal,
                    } => {
                        let rhs = ins.get(1).ok_or_else(|| bad("trsm without b"))?;
                        let [x] = outs else {
                            return Err(bad("trsm results"));
                        };
                        let (_, rows, cols) = split(rhs)?;
                        let k = if left { rows } else { cols };
                        if m != k || n != k || x.dims != rhs.dims || rhs.dims.len() != a.dims.len()
                        {
                            return Err(bad("trsm shapes"));
                        }
                        let alpha = match ins.get(2) {
                            Some(s) if s.count() == 1 => data(s)[0],
                            Some(_) => return Err(bad("trsm alpha is not a scalar")),
                            None => 1.0,
                        };
                        let lb = Layout::expect(rhs, 2, count, rows, cols)?;
                        let lx = Layout::expect(x, 2, count, rows, cols)?;
                        let db = data(rhs);
                        let results = per_matrix(count, |b, par| {
                            let am = load(da, &la, b);
                            let mut bm = load(db, &lb, b);
                            if alpha != 1.0 {
                                for j in 0..cols {
                                    for i in 0..rows {
                                        bm[(i, j)] *= alpha;
                                    }
                                }
                            }
                            // op(A) and which triangle of it holds the data.
                            let opa = if transpose {
                                am.transpose()
                            } else {
                                am.as_ref()
                            };
                            let op_lower = lower != transpose;
                            if left {
                                solve(opa, op_lower, unit_diagonal, bm.as_mut(), par);
                            } else {
                                // X op(A) = B  <=>  op(A)^T X^T = B^T.
                                solve(
                                    opa.transpose(),
                                    !op_lower,
                                    unit_diagonal,
                                    bm.as_mut().transpose_mut(),
                                    par,
                                );
                            }
                            bm
                        });
                        let dx = data_mut(x);
                        for (b, bm) in results.iter().enumerate() {
                            store(dx, &lx, b, bm.as_ref());
                        }
                        Ok(())
                    }
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
                    LapackCall::Getrf => {
                        let [lu, piv, info] = outs else {
                            return Err(bad("getrf results"));
                        };
                        let kmin = m.min(n);
                        if lu.dims != a.dims || piv.count() != count * kmin || info.count() != count
                        {
                            return Err(bad("getrf shapes"));
                        }
                        let ll = Layout::expect(lu, 2, count, m, n)?;
                        let lp = Layout::expect(piv, 1, count, 1, kmin)?;
                        let li = Layout::expect(info, 0, count, 1, 1)?;
                        let results = per_matrix(count, |b, par| {
                            // Factored in place: L below the diagonal (unit diagonal
                            // implied), U on and above it, as LAPACK packs them.
                            let mut f = load(da, &la, b);
                            let mut fwd = vec![0usize; m];
                            let mut bwd = vec![0usize; m];
                            let mut mem = MemBuffer::new(plu::lu_in_place_scratch::<usize, $t>(
                                m,
                                n,
                                par,
                                Default::default(),
                            ));
                            plu::lu_in_place(
                                f.as_mut(),
                                &mut fwd,
                                &mut bwd,
                                par,
                                MemStack::new(&mut mem),
                                Default::default(),
                            );
                            // The permutation as LAPACK's sequence of row swaps.
                            let mut cur: Vec<usize> = (0..m).collect();
                            let mut wh: Vec<usize> = (0..m).collect();
                            let mut pivots = Vec::with_capacity(kmin);
                            let mut code = 0i64;
                            for j in 0..kmin {
                                let q = wh[fwd[j]];
                                pivots.push(q as i64 + 1);
                                cur.swap(j, q);
                                wh[cur[j]] = j;
                                wh[cur[q]] = q;
                                if code == 0 && f[(j, j)] == 0.0 {
                                    code = j as i64 + 1;
                                }
                            }
                            (f, pivots, code)
                        });
                        let dl = data_mut(lu);
                        for (b, (f, _, _)) in results.iter().enumerate() {
                            store(dl, &ll, b, f.as_ref());
                        }
                        for (b, (_, pivots, code)) in results.iter().enumerate() {
                            for (j, &p) in pivots.iter().enumerate() {
                                set_int(piv, &lp, b, j, p);
                            }
                            set_int(info, &li, b, 0, *code);
                        }
                        Ok(())
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
