//! `potrf`, `trsm` and `getrf` on `faer` views over the executor's memory (see
//! [`super::lapack_mem`]), in place where the plan shares the operand's and the result's
//! bytes, with LAPACK's output conventions (as [`super::lapack`] documents them).
//!
//! Parallelism is chosen per call from the work there is: a batch of at least as many
//! matrices as threads (or of matrices too small for `faer`'s parallel kernels to gain)
//! runs one matrix per task, each single-threaded; fewer large matrices run one after
//! the other, each with all threads (a single `potrf` of order 1024 on both cores).

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{self as llt, LltError};
use faer::linalg::lu::partial_pivoting::factor as plu;
use faer::linalg::triangular_solve as tri;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::traits::RealField;
use faer::{Mat, MatMut, MatRef, Par};
use plan::{ArraySpec, LapackCall, Program};
use rayon::prelude::*;

use super::arrays::Arr;
use super::lapack_mem::{bad, Layout, Matrices, Operands};
use crate::error::BackendError;
use crate::memory::Memory;
use codegen::kir::ScalarType;

/// Work (flops) below which one matrix runs single-threaded: `faer`'s parallel splits
/// cost tens of microseconds of synchronization.
const PARALLEL_FLOPS: f64 = 4e6;

/// Whether `call` runs here (on the executor's memory) rather than on copies.
pub(super) fn handles(call: LapackCall) -> bool {
    matches!(
        call,
        LapackCall::Potrf { .. } | LapackCall::Trsm { .. } | LapackCall::Getrf
    )
}

/// Runs `potrf`, `trsm` or `getrf` on the buffers of `inputs` and `outputs` in `mem`.
pub(super) fn run_on(
    p: &Program,
    call: LapackCall,
    inputs: &[ArraySpec],
    outputs: &[ArraySpec],
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    // The operand each routine writes its result over (JAX's aliasing).
    let pair = match call {
        LapackCall::Trsm { .. } => (1, 0),
        _ => (0, 0),
    };
    let ops = Operands::new(p, inputs, outputs, mem, Some(pair))?;
    let ty = ops.ins.first().ok_or_else(|| bad("no operand"))?.ty;
    match ty {
        ScalarType::F32 => Routines::<f32>::run(call, &ops),
        ScalarType::F64 => Routines::<f64>::run(call, &ops),
        _ => Err(bad("element type other than f32/f64")),
    }
}

/// The parallelism of each of `count` matrices of `flops` each, and whether the batch
/// runs one matrix per task.
fn plan_parallelism(count: usize, flops: f64) -> (bool, Par) {
    let threads = rayon::current_num_threads();
    if threads <= 1 {
        return (false, Par::Seq);
    }
    if count >= threads || (count >= 2 && flops < PARALLEL_FLOPS) {
        (true, Par::Seq)
    } else if flops >= PARALLEL_FLOPS {
        (false, Par::rayon(threads))
    } else {
        (false, Par::Seq)
    }
}

/// Runs `f(b, par)` for every batch member of `count`, as [`plan_parallelism`] says;
/// the first error wins.
fn for_each_matrix<R: Send>(
    count: usize,
    flops: f64,
    f: impl Fn(usize, Par) -> Result<R, BackendError> + Sync,
) -> Result<Vec<R>, BackendError> {
    let (batch_parallel, par) = plan_parallelism(count, flops);
    if batch_parallel {
        (0..count).into_par_iter().map(|b| f(b, par)).collect()
    } else {
        (0..count).map(|b| f(b, par)).collect()
    }
}

/// Writes the integer results (`info`, pivots) of result `o`: `value(b, j)` at element
/// `j` of batch member `b` (`inner` trailing dimensions per member: 0 or 1).
fn write_ints(
    ops: &Operands,
    o: usize,
    inner: usize,
    count: usize,
    len: usize,
    value: impl Fn(usize, usize) -> i64,
) -> Result<(), BackendError> {
    let shape = &ops.outs[o];
    let mut a = Arr {
        dims: shape.dims.clone(),
        strides: shape.strides.clone(),
        width: shape.width,
        ty: shape.ty,
        words: vec![0u64; (shape.count() * shape.width).div_ceil(8)],
    };
    let l = Layout::expect(&a, inner, count, 1, len)?;
    for b in 0..count {
        for j in 0..len {
            let e = l.at(b, 0, j);
            a.set_int(e, value(b, j));
        }
    }
    ops.write_result(o, &a)
}

/// Copies operand `src`'s member into the result view (when not in place).
fn fill<T: RealField + Copy>(
    dst: &mut MatMut<'_, T>,
    src: Option<&Matrices<'_, T>>,
    b: usize,
) -> Result<(), BackendError> {
    if let Some(src) = src {
        let s = src.get(b);
        if s.nrows() != dst.nrows() || s.ncols() != dst.ncols() {
            return Err(bad("operand and result shapes"));
        }
        dst.copy_from(s);
    }
    Ok(())
}

struct Routines<T>(std::marker::PhantomData<T>);

impl<T> Routines<T>
where
    T: RealField
        + Copy
        + Send
        + Sync
        + PartialEq
        + From<f32>
        + Into<f64>
        + FromF64
        + std::ops::Mul<Output = T>,
{
    fn run(call: LapackCall, ops: &Operands) -> Result<(), BackendError> {
        match call {
            LapackCall::Potrf { lower } => Self::potrf(ops, lower),
            LapackCall::Trsm {
                left,
                lower,
                transpose,
                unit_diagonal,
            } => Self::trsm(ops, left, lower, transpose, unit_diagonal),
            LapackCall::Getrf => Self::getrf(ops),
            _ => Err(bad("not a routine on views")),
        }
    }

    /// The operand a result is written over, or `None` when the plan put both in the
    /// same bytes (the result then already holds it).
    fn source(ops: &Operands, i: usize) -> Result<Option<Matrices<'_, T>>, BackendError> {
        if ops.in_place {
            Ok(None)
        } else {
            ops.matrices::<T>(i).map(Some)
        }
    }

    /// Cholesky: the factor over the triangle `lower` names, the other triangle as it
    /// was, `info` per matrix (a failed matrix as LAPACK's unblocked `potf2` leaves it:
    /// the columns before the failing one factored, its pivot on the diagonal).
    fn potrf(ops: &Operands, lower: bool) -> Result<(), BackendError> {
        let [_, _] = ops.outs.as_slice() else {
            return Err(bad("potrf results"));
        };
        let out = ops.matrices_mut::<T>(0)?;
        let src = Self::source(ops, 0)?;
        let (count, n) = (out.count(), out.layout.rows);
        if out.layout.cols != n || ops.ins[0].dims != ops.outs[0].dims {
            return Err(bad("potrf shapes"));
        }
        let flops = (n as f64).powi(3) / 3.0;
        let codes = for_each_matrix(count, flops, |b, par| {
            // SAFETY: member `b` is handed to this task alone.
            let mut f = unsafe { out.get_mut(b)? };
            fill(&mut f, src.as_ref(), b)?;
            // The triangle `uplo` names, as the lower one (U = L^T).
            let mut l = if lower { f } else { f.transpose_mut() };
            // Factored in a dense scratch: `faer`'s kernels use the other triangle as
            // workspace, and a failed matrix must still read as the operand below.
            let mut s = Mat::<T>::zeros(n, n);
            s.copy_from_triangular_lower(l.rb());
            let mut mem = MemBuffer::new(llt::cholesky_in_place_scratch::<T>(
                n,
                par,
                Default::default(),
            ));
            let r = llt::cholesky_in_place(
                s.as_mut(),
                Default::default(),
                par,
                MemStack::new(&mut mem),
                Default::default(),
            );
            match r {
                Ok(_) => {
                    l.copy_from_triangular_lower(s.as_ref());
                    Ok(0i64)
                }
                // LAPACK's unblocked `potf2` on the operand, which `l` still holds: the
                // blocked factorization does not stop in the state LAPACK leaves.
                Err(LltError::NonPositivePivot { .. }) => Ok(potf2(l)),
            }
        })?;
        write_ints(ops, 1, 0, count, 1, |b, _| codes[b])
    }

    /// `op(A) X = alpha B` (left) or `X op(A) = alpha B`, `X` over `B`.
    fn trsm(
        ops: &Operands,
        left: bool,
        lower: bool,
        transpose: bool,
        unit: bool,
    ) -> Result<(), BackendError> {
        if ops.outs.len() != 1 || ops.ins.len() < 2 {
            return Err(bad("trsm operands"));
        }
        let a = ops.matrices::<T>(0)?;
        let x = ops.matrices_mut::<T>(0)?;
        let src = Self::source(ops, 1)?;
        let alpha: T = match ops.ins.get(2) {
            Some(_) => ops.scalar::<T>(2)?,
            None => T::from(1.0),
        };
        let (count, rows, cols) = (x.count(), x.layout.rows, x.layout.cols);
        let k = if left { rows } else { cols };
        if a.count() != count
            || a.layout.rows != k
            || a.layout.cols != k
            || ops.ins[1].dims != ops.outs[0].dims
        {
            return Err(bad("trsm shapes"));
        }
        let flops = (k * k) as f64 * if left { cols } else { rows } as f64;
        for_each_matrix(count, flops, |b, par| {
            // SAFETY: member `b` is handed to this task alone.
            let mut xm = unsafe { x.get_mut(b)? };
            fill(&mut xm, src.as_ref(), b)?;
            if alpha != T::from(1.0) {
                scale(xm.rb_mut(), alpha);
            }
            // op(A) and which triangle of it holds the data.
            let am = a.get(b);
            let opa = if transpose { am.transpose() } else { am };
            let op_lower = lower != transpose;
            if left {
                solve(opa, op_lower, unit, xm, par);
            } else {
                // X op(A) = B  <=>  op(A)^T X^T = B^T.
                solve(opa.transpose(), !op_lower, unit, xm.transpose_mut(), par);
            }
            Ok(())
        })?;
        Ok(())
    }

    /// LU with partial pivoting: the factors packed over the operand, 1-based pivots as
    /// LAPACK's sequence of row swaps, `info` (the 1-based first zero pivot, or 0).
    fn getrf(ops: &Operands) -> Result<(), BackendError> {
        if ops.outs.len() != 3 {
            return Err(bad("getrf results"));
        }
        let out = ops.matrices_mut::<T>(0)?;
        let src = Self::source(ops, 0)?;
        let (count, m, n) = (out.count(), out.layout.rows, out.layout.cols);
        let kmin = m.min(n);
        if ops.ins[0].dims != ops.outs[0].dims
            || ops.outs[1].count() != count * kmin
            || ops.outs[2].count() != count
        {
            return Err(bad("getrf shapes"));
        }
        let flops = (m * n * kmin) as f64 - ((m + n) * kmin * kmin) as f64 / 2.0;
        let results = for_each_matrix(count, flops.max(0.0), |b, par| {
            // SAFETY: member `b` is handed to this task alone.
            let mut f = unsafe { out.get_mut(b)? };
            fill(&mut f, src.as_ref(), b)?;
            let mut fwd = vec![0usize; m];
            let mut bwd = vec![0usize; m];
            let mut mem = MemBuffer::new(plu::lu_in_place_scratch::<usize, T>(
                m,
                n,
                par,
                Default::default(),
            ));
            plu::lu_in_place(
                f.rb_mut(),
                &mut fwd,
                &mut bwd,
                par,
                MemStack::new(&mut mem),
                Default::default(),
            );
            let (pivots, code) = lapack_pivots(&fwd, kmin, |j| f[(j, j)] == T::from(0.0));
            Ok((pivots, code))
        })?;
        write_ints(ops, 1, 1, count, kmin, |b, j| results[b].0[j])?;
        write_ints(ops, 2, 0, count, 1, |b, _| results[b].1)
    }
}

/// LAPACK's unblocked Cholesky (`potf2`) of the lower triangle of `l`, in `f64`: column
/// by column, stopping at the first non-positive (or NaN) pivot `d`, which it stores on
/// the diagonal, the columns before it factored and the rest as they were. Returns
/// `info`: 0, or the 1-based failing column. Run after the blocked factorization failed,
/// so that a failed matrix reads as LAPACK (and the evaluator) leave it.
fn potf2<T: RealField + Copy + Into<f64> + FromF64>(mut l: MatMut<'_, T>) -> i64 {
    let n = l.nrows();
    for j in 0..n {
        let mut d: f64 = l[(j, j)].into();
        for k in 0..j {
            let v: f64 = l[(j, k)].into();
            d -= v * v;
        }
        if d.is_nan() || d <= 0.0 {
            l[(j, j)] = T::from_f64(d);
            return j as i64 + 1;
        }
        let djj = d.sqrt();
        l[(j, j)] = T::from_f64(djj);
        for i in j + 1..n {
            let mut s: f64 = l[(i, j)].into();
            for k in 0..j {
                let (a, b): (f64, f64) = (l[(i, k)].into(), l[(j, k)].into());
                s -= a * b;
            }
            l[(i, j)] = T::from_f64(s / djj);
        }
    }
    0
}

/// Rounding from `f64` to the element type.
trait FromF64 {
    fn from_f64(x: f64) -> Self;
}

impl FromF64 for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
}

impl FromF64 for f64 {
    fn from_f64(x: f64) -> f64 {
        x
    }
}

/// `faer`'s row permutation (`fwd[i]`: the operand row that became row `i`) as LAPACK's
/// 1-based sequence of row swaps, and `info`: the 1-based first `j` whose pivot `zero(j)`
/// is zero, or 0.
fn lapack_pivots(fwd: &[usize], kmin: usize, zero: impl Fn(usize) -> bool) -> (Vec<i64>, i64) {
    let m = fwd.len();
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
        if code == 0 && zero(j) {
            code = j as i64 + 1;
        }
    }
    (pivots, code)
}

/// `x *= alpha`, column by column.
fn scale<T: RealField + Copy + std::ops::Mul<Output = T>>(x: MatMut<'_, T>, alpha: T) {
    let mut x = x;
    for j in 0..x.ncols() {
        for i in 0..x.nrows() {
            x[(i, j)] = x[(i, j)] * alpha;
        }
    }
}

/// Solves `t x = rhs` in place for a triangular `t` (`lower`, `unit` diagonal).
fn solve<T: RealField>(t: MatRef<'_, T>, lower: bool, unit: bool, rhs: MatMut<'_, T>, par: Par) {
    match (lower, unit) {
        (true, false) => tri::solve_lower_triangular_in_place(t, rhs, par),
        (true, true) => tri::solve_unit_lower_triangular_in_place(t, rhs, par),
        (false, false) => tri::solve_upper_triangular_in_place(t, rhs, par),
        (false, true) => tri::solve_unit_upper_triangular_in_place(t, rhs, par),
    }
}
