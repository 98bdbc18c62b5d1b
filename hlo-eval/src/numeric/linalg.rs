//! Dense linear algebra: the `cholesky` and `triangular-solve` opcodes, and the LAPACK
//! FFI custom calls JAX emits on CPU (`lapack_?potrf_ffi`, `lapack_?trsm_ffi`,
//! `lapack_?getrf_ffi`, and for QR `lapack_?geqrf_ffi` with `lapack_?orgqr_ffi` /
//! `lapack_?ungqr_ffi`).
//!
//! Values are logical matrices (row-major literals); the custom calls' column-major
//! layouts only describe memory, so LAPACK's `A(i, j)` is the literal's `[i, j]`.
//! Everything is computed in `f64` (or `c128`) and rounded once to the result type;
//! LAPACK's blocked summation order is not reproduced, so results agree with XLA to
//! rounding, not bit for bit.

use super::util::{dims_of, operand, result_part};
use super::widen::{load, store, Buf, Domain};
use super::KernelError;
use hlo::attrs::{AttrName, AttrValue};
use hlo::literal::ArrayData;
use hlo::shape::{ElementType, Shape};
use hlo::{Instruction, Literal};
use num_complex::Complex64;

/// Scalars of the real (`f64`) and complex (`num-complex`'s `Complex64`) matrix kernels.
trait Field: Copy + PartialEq {
    fn zero() -> Self;
    fn one() -> Self;
    fn sub(self, o: Self) -> Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn conj(self) -> Self;
    /// Real part.
    fn re(self) -> f64;
    fn from_re(x: f64) -> Self;
    /// Magnitude used for pivoting (`|re| + |im|`, as LAPACK's `i?amax`).
    fn pivot_abs(self) -> f64;
    /// Imaginary part (0 for reals).
    fn im(self) -> f64;
    /// `|x|^2`.
    fn norm_sqr(self) -> f64 {
        self.mul(self.conj()).re()
    }
}

impl Field for f64 {
    fn zero() -> f64 {
        0.0
    }
    fn one() -> f64 {
        1.0
    }
    fn sub(self, o: f64) -> f64 {
        self - o
    }
    fn add(self, o: f64) -> f64 {
        self + o
    }
    fn mul(self, o: f64) -> f64 {
        self * o
    }
    fn div(self, o: f64) -> f64 {
        self / o
    }
    fn conj(self) -> f64 {
        self
    }
    fn re(self) -> f64 {
        self
    }
    fn from_re(x: f64) -> f64 {
        x
    }
    fn pivot_abs(self) -> f64 {
        self.abs()
    }
    fn im(self) -> f64 {
        0.0
    }
}

impl Field for Complex64 {
    fn zero() -> Self {
        Complex64::new(0.0, 0.0)
    }
    fn one() -> Self {
        Complex64::new(1.0, 0.0)
    }
    fn sub(self, o: Self) -> Self {
        self - o
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn div(self, o: Self) -> Self {
        self / o
    }
    fn conj(self) -> Self {
        Complex64::conj(&self)
    }
    fn re(self) -> f64 {
        self.re
    }
    fn from_re(x: f64) -> Self {
        Complex64::new(x, 0.0)
    }
    fn pivot_abs(self) -> f64 {
        self.l1_norm()
    }
    fn im(self) -> f64 {
        self.im
    }
}

/// Cholesky factorisation of the `n x n` matrix `a` in place, in the lower
/// (`A = L L^H`) or upper (`A = U^H U`) triangle; the other triangle is untouched.
/// Returns LAPACK's `info`: 0, or the 1-based order of the first minor that is not
/// positive definite (the factorisation stops there).
fn cholesky_in_place<T: Field>(a: &mut [T], n: usize, lower: bool) -> i32 {
    // Element (i, j) of the factor in "lower" terms: L[i][j] with i >= j.
    let at = |i: usize, j: usize| if lower { i * n + j } else { j * n + i };
    for j in 0..n {
        let mut d = a[at(j, j)].re();
        for k in 0..j {
            let l = a[at(j, k)];
            d -= l.mul(l.conj()).re();
        }
        if d.is_nan() || d <= 0.0 {
            a[at(j, j)] = T::from_re(d);
            return j as i32 + 1;
        }
        let djj = d.sqrt();
        a[at(j, j)] = T::from_re(djj);
        for i in j + 1..n {
            // L[i][j] = (A[i][j] - sum_k L[i][k] conj(L[j][k])) / L[j][j]
            let mut s = if lower {
                a[at(i, j)]
            } else {
                a[at(i, j)].conj()
            };
            for k in 0..j {
                s = s.sub(a[at(i, k)].mul(a[at(j, k)].conj()));
            }
            let v = s.div(T::from_re(djj));
            a[at(i, j)] = if lower { v } else { v.conj() };
        }
    }
    0
}

/// How `op(A)` is formed in a triangular solve.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Transpose {
    No,
    Plain,
    Adjoint,
}

/// Options of a triangular solve: `op(A) X = B` (left) or `X op(A) = B` (right), `A`
/// read from its lower or upper triangle, optionally with a unit diagonal.
#[derive(Clone, Copy)]
struct SolveOptions {
    left: bool,
    lower: bool,
    unit_diagonal: bool,
    transpose: Transpose,
}

/// Solves one triangular system; `a` is `m x m` (`m` = rows of `b` when left, columns
/// when right), `b` is `rows x cols` and is overwritten with `X`.
fn triangular_solve<T: Field>(a: &[T], b: &mut [T], rows: usize, cols: usize, o: SolveOptions) {
    let m = if o.left { rows } else { cols };
    // op(A) as a full matrix, from the referenced triangle only.
    let mut t = vec![T::zero(); m * m];
    for i in 0..m {
        for j in 0..m {
            let in_triangle = if o.lower { j <= i } else { j >= i };
            if !in_triangle {
                continue;
            }
            let v = if i == j && o.unit_diagonal {
                T::one()
            } else {
                a[i * m + j]
            };
            let (r, c, v) = match o.transpose {
                Transpose::No => (i, j, v),
                Transpose::Plain => (j, i, v),
                Transpose::Adjoint => (j, i, v.conj()),
            };
            t[r * m + c] = v;
        }
    }
    let t_lower = o.lower == (o.transpose == Transpose::No);
    if o.left {
        // T X = B, column by column.
        for c in 0..cols {
            let order: Vec<usize> = if t_lower {
                (0..m).collect()
            } else {
                (0..m).rev().collect()
            };
            for &i in &order {
                let mut s = b[i * cols + c];
                for k in 0..m {
                    let before = if t_lower { k < i } else { k > i };
                    if before {
                        s = s.sub(t[i * m + k].mul(b[k * cols + c]));
                    }
                }
                b[i * cols + c] = s.div(t[i * m + i]);
            }
        }
    } else {
        // X T = B, row by row: x[j] depends on x[k] for k after j (lower T) or before.
        for r in 0..rows {
            let order: Vec<usize> = if t_lower {
                (0..m).rev().collect()
            } else {
                (0..m).collect()
            };
            for &j in &order {
                let mut s = b[r * cols + j];
                for k in 0..m {
                    let before = if t_lower { k > j } else { k < j };
                    if before {
                        s = s.sub(b[r * cols + k].mul(t[k * m + j]));
                    }
                }
                b[r * cols + j] = s.div(t[j * m + j]);
            }
        }
    }
}

/// LU factorisation with partial pivoting of an `m x n` matrix in place (LAPACK
/// `getrf`): returns the 1-based pivot rows and `info` (0, or the 1-based index of the
/// first exactly zero pivot).
fn lu_in_place<T: Field>(a: &mut [T], m: usize, n: usize) -> (Vec<i32>, i32) {
    let mut pivots = Vec::with_capacity(m.min(n));
    let mut info = 0;
    for j in 0..m.min(n) {
        let mut p = j;
        for i in j + 1..m {
            if a[i * n + j].pivot_abs() > a[p * n + j].pivot_abs() {
                p = i;
            }
        }
        pivots.push(p as i32 + 1);
        if a[p * n + j] == T::zero() {
            if info == 0 {
                info = j as i32 + 1;
            }
            continue;
        }
        if p != j {
            for c in 0..n {
                a.swap(j * n + c, p * n + c);
            }
        }
        let d = a[j * n + j];
        for i in j + 1..m {
            let f = a[i * n + j].div(d);
            a[i * n + j] = f;
            for c in j + 1..n {
                let v = a[i * n + c].sub(f.mul(a[j * n + c]));
                a[i * n + c] = v;
            }
        }
    }
    (pivots, info)
}

/// Householder QR of an `m x n` matrix in place (LAPACK `geqrf`): `R` on and above the
/// diagonal, the reflectors' vectors (implicit unit first element) below it; returns the
/// `min(m, n)` reflector scalars `tau`. Each reflector follows `?larfg`:
/// `beta = -sign(re(alpha)) * |(alpha, x)|`, and `H = I` when `x = 0` and `alpha` is real.
fn qr_in_place<T: Field>(a: &mut [T], m: usize, n: usize) -> Vec<T> {
    let k = m.min(n);
    let mut taus = Vec::with_capacity(k);
    for j in 0..k {
        let alpha = a[j * n + j];
        let xnorm2: f64 = (j + 1..m).map(|i| a[i * n + j].norm_sqr()).sum();
        if xnorm2 == 0.0 && alpha.im() == 0.0 {
            taus.push(T::zero());
            continue;
        }
        let norm = (alpha.norm_sqr() + xnorm2).sqrt();
        let beta = if alpha.re() >= 0.0 { -norm } else { norm };
        let tau = T::from_re(beta).sub(alpha).div(T::from_re(beta));
        let scale = T::one().div(alpha.sub(T::from_re(beta)));
        for i in j + 1..m {
            a[i * n + j] = a[i * n + j].mul(scale);
        }
        a[j * n + j] = T::from_re(beta);
        // Apply H^H = I - conj(tau) v v^H to the trailing columns.
        let t = tau.conj();
        for c in j + 1..n {
            let mut u = a[j * n + c];
            for i in j + 1..m {
                u = u.add(a[i * n + j].conj().mul(a[i * n + c]));
            }
            let tu = t.mul(u);
            a[j * n + c] = a[j * n + c].sub(tu);
            for i in j + 1..m {
                a[i * n + c] = a[i * n + c].sub(a[i * n + j].mul(tu));
            }
        }
        taus.push(tau);
    }
    taus
}

/// Forms the first `n` columns of `Q = H_0 H_1 ... H_{k-1}` in place from `geqrf`'s
/// reflectors (LAPACK `orgqr`/`ungqr`).
fn householder_product<T: Field>(a: &mut [T], m: usize, n: usize, taus: &[T]) {
    let k = taus.len().min(n);
    for j in k..n {
        for i in 0..m {
            a[i * n + j] = if i == j { T::one() } else { T::zero() };
        }
    }
    for i in (0..k).rev() {
        let tau = taus[i];
        if i + 1 < n {
            // Apply H_i = I - tau v v^H to a[i.., i+1..], with v = (1, a[i+1.., i]).
            a[i * n + i] = T::one();
            for c in i + 1..n {
                let mut u = T::zero();
                for r in i..m {
                    u = u.add(a[r * n + i].conj().mul(a[r * n + c]));
                }
                let tu = tau.mul(u);
                for r in i..m {
                    a[r * n + c] = a[r * n + c].sub(a[r * n + i].mul(tu));
                }
            }
        }
        for r in i + 1..m {
            a[r * n + i] = T::zero().sub(tau.mul(a[r * n + i]));
        }
        a[i * n + i] = T::one().sub(tau);
        for r in 0..i {
            a[r * n + i] = T::zero();
        }
    }
}

/// LAPACK `geqrf` of one real row-major `m x n` matrix in place (`R` on and above the
/// diagonal, the reflectors below it, LAPACK's sign conventions); returns the `tau`s. For
/// the runtime's LAPACK calls, which must agree with the evaluator and with XLA's LAPACK.
pub fn geqrf_f64(a: &mut [f64], m: usize, n: usize) -> Vec<f64> {
    qr_in_place(a, m, n)
}

/// LAPACK `orgqr` of one real row-major `m x n` matrix of `geqrf` reflectors in place: the
/// first `n` columns of `Q`.
pub fn orgqr_f64(a: &mut [f64], m: usize, n: usize, taus: &[f64]) {
    householder_product(a, m, n, taus)
}

/// The values of an operand in `f64` or `c128`.
pub(super) enum Mat {
    Real(Vec<f64>),
    Complex(Vec<Complex64>),
}

pub(super) fn load_mat(a: &hlo::literal::ArrayLiteral, what: &str) -> Result<Mat, KernelError> {
    if a.element_type().is_complex() {
        match load(Domain::C128, a, what)? {
            Buf::C128(v) => Ok(Mat::Complex(v)),
            _ => Err(KernelError::Invalid(format!("{what}: bad operand"))),
        }
    } else if a.element_type().is_float() {
        match load(Domain::F64, a, what)? {
            Buf::F64(v) => Ok(Mat::Real(v)),
            _ => Err(KernelError::Invalid(format!("{what}: bad operand"))),
        }
    } else {
        Err(KernelError::Invalid(format!(
            "{what}: expected a floating-point matrix, got {}",
            a.element_type()
        )))
    }
}

pub(super) fn store_mat(m: Mat, shape: &Shape, what: &str) -> Result<Literal, KernelError> {
    match m {
        Mat::Real(v) => store(Buf::F64(v), shape, what),
        Mat::Complex(v) => store(Buf::C128(v), shape, what),
    }
}

/// Batch count and the two trailing dimensions.
pub(super) fn matrix_dims(shape: &Shape, what: &str) -> Result<(usize, usize, usize), KernelError> {
    let d = dims_of(shape, what)?;
    if d.len() < 2 {
        return Err(KernelError::Invalid(format!(
            "{what}: expected a matrix, got {shape}"
        )));
    }
    let (r, c) = (d[d.len() - 2], d[d.len() - 1]);
    Ok((d[..d.len() - 2].iter().product(), r, c))
}

fn bool_attr(instr: &Instruction, name: AttrName) -> bool {
    matches!(instr.attr(&name), Some(AttrValue::Bool(true)))
}

/// Applies `f` to each matrix of a batch.
fn per_matrix<T>(v: &mut [T], size: usize, mut f: impl FnMut(usize, &mut [T])) {
    if size == 0 {
        return;
    }
    for (i, m) in v.chunks_mut(size).enumerate() {
        f(i, m);
    }
}

/// Evaluates the `cholesky` opcode; the triangle not holding the factor is zeroed.
pub(crate) fn cholesky_op(
    instr: &Instruction,
    operands: &[&Literal],
) -> Result<Literal, KernelError> {
    const W: &str = "cholesky";
    let a = operand(operands, 0, W)?;
    let (_, n, n2) = matrix_dims(a.shape(), W)?;
    if n != n2 {
        return Err(KernelError::Invalid(format!("{W}: matrix is not square")));
    }
    let lower = bool_attr(instr, AttrName::Lower);
    fn run<T: Field>(v: &mut [T], n: usize, lower: bool) {
        per_matrix(v, n * n, |_, m| {
            cholesky_in_place(m, n, lower);
            for i in 0..n {
                for j in 0..n {
                    if (lower && j > i) || (!lower && j < i) {
                        m[i * n + j] = T::zero();
                    }
                }
            }
        });
    }
    let mut m = load_mat(a, W)?;
    match &mut m {
        Mat::Real(v) => run(v, n, lower),
        Mat::Complex(v) => run(v, n, lower),
    }
    store_mat(m, instr.shape(), W)
}

fn solve_batch(
    a: &Mat,
    b: &mut Mat,
    batch: usize,
    rows: usize,
    cols: usize,
    o: SolveOptions,
    what: &str,
) -> Result<(), KernelError> {
    let m = if o.left { rows } else { cols };
    let (asz, bsz) = (m * m, rows * cols);
    match (a, b) {
        (Mat::Real(a), Mat::Real(b)) => {
            for i in 0..batch {
                triangular_solve(
                    &a[i * asz..(i + 1) * asz],
                    &mut b[i * bsz..(i + 1) * bsz],
                    rows,
                    cols,
                    o,
                );
            }
        }
        (Mat::Complex(a), Mat::Complex(b)) => {
            for i in 0..batch {
                triangular_solve(
                    &a[i * asz..(i + 1) * asz],
                    &mut b[i * bsz..(i + 1) * bsz],
                    rows,
                    cols,
                    o,
                );
            }
        }
        _ => {
            return Err(KernelError::Invalid(format!(
                "{what}: a and b differ in type"
            )))
        }
    }
    Ok(())
}

fn check_solve_shapes(
    a: &Shape,
    b: &Shape,
    left: bool,
    what: &str,
) -> Result<(usize, usize, usize), KernelError> {
    let (ab, m, m2) = matrix_dims(a, what)?;
    let (bb, rows, cols) = matrix_dims(b, what)?;
    let need = if left { rows } else { cols };
    if m != m2 || m != need || ab != bb || a.dims()[..a.rank() - 2] != b.dims()[..b.rank() - 2] {
        return Err(KernelError::Invalid(format!(
            "{what}: shapes {a} and {b} do not form a triangular system"
        )));
    }
    Ok((bb, rows, cols))
}

/// Evaluates the `triangular-solve` opcode.
pub(crate) fn triangular_solve_op(
    instr: &Instruction,
    operands: &[&Literal],
) -> Result<Literal, KernelError> {
    const W: &str = "triangular-solve";
    let a = operand(operands, 0, W)?;
    let b = operand(operands, 1, W)?;
    let transpose = match instr.attr(&AttrName::TransposeA) {
        None => Transpose::No,
        Some(AttrValue::Ident(s) | AttrValue::String(s)) => match s.as_str() {
            "NO_TRANSPOSE" => Transpose::No,
            "TRANSPOSE" => Transpose::Plain,
            "ADJOINT" => Transpose::Adjoint,
            other => return Err(KernelError::Invalid(format!("{W}: transpose_a={other}"))),
        },
        Some(_) => return Err(KernelError::Invalid(format!("{W}: bad transpose_a"))),
    };
    let o = SolveOptions {
        left: bool_attr(instr, AttrName::LeftSide),
        lower: bool_attr(instr, AttrName::Lower),
        unit_diagonal: bool_attr(instr, AttrName::UnitDiagonal),
        transpose,
    };
    let (batch, rows, cols) = check_solve_shapes(a.shape(), b.shape(), o.left, W)?;
    let am = load_mat(a, W)?;
    let mut bm = load_mat(b, W)?;
    solve_batch(&am, &mut bm, batch, rows, cols, o, W)?;
    store_mat(bm, instr.shape(), W)
}

/// The integer fields of a custom call's MLIR-style `backend_config={uplo = 76 : ui8}`.
fn config_field(instr: &Instruction, key: &str) -> Option<i64> {
    let text = instr.backend_config()?.as_str();
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    inner.split(',').find_map(|entry| {
        let (k, rest) = entry.split_once('=')?;
        if k.trim() != key {
            return None;
        }
        rest.split(':').next()?.trim().parse().ok()
    })
}

/// A character option of a LAPACK call (`uplo`, `side`, `trans_x`, `diag`), stored as
/// its ASCII code.
pub(super) fn config_char(
    instr: &Instruction,
    key: &str,
    default: char,
    what: &str,
) -> Result<char, KernelError> {
    match config_field(instr, key) {
        None => Ok(default),
        Some(c) => u8::try_from(c)
            .map(char::from)
            .map_err(|_| KernelError::Invalid(format!("{what}: bad {key}={c}"))),
    }
}

/// Whether a LAPACK call reads the lower triangle (`uplo`, `L` by default).
pub(super) fn uplo_lower(instr: &Instruction, what: &str) -> Result<bool, KernelError> {
    match config_char(instr, "uplo", 'L', what)? {
        'L' => Ok(true),
        'U' => Ok(false),
        c => Err(KernelError::Invalid(format!("{what}: uplo={c}"))),
    }
}

pub(super) fn s32_array(shape: &Shape, v: Vec<i32>, what: &str) -> Result<Literal, KernelError> {
    if shape.element_type() != Some(ElementType::S32) {
        return Err(KernelError::Unsupported(format!(
            "{what}: integer output {shape}"
        )));
    }
    super::util::make_array(shape, ArrayData::S32(v), what)
}

/// Evaluates a LAPACK FFI custom call (`potrf`, `trsm`, `getrf`).
pub(crate) fn lapack_custom_call(
    target: &str,
    instr: &Instruction,
    operands: &[&Literal],
) -> Result<Literal, KernelError> {
    let what = target;
    if target.ends_with("potrf_ffi") {
        let a = operand(operands, 0, what)?;
        let (batch, n, n2) = matrix_dims(a.shape(), what)?;
        if n != n2 {
            return Err(KernelError::Invalid(format!(
                "{what}: matrix is not square"
            )));
        }
        let lower = uplo_lower(instr, what)?;
        let mut m = load_mat(a, what)?;
        let mut info = vec![0i32; batch];
        match &mut m {
            Mat::Real(v) => per_matrix(v, n * n, |i, mat| {
                info[i] = cholesky_in_place(mat, n, lower)
            }),
            Mat::Complex(v) => per_matrix(v, n * n, |i, mat| {
                info[i] = cholesky_in_place(mat, n, lower)
            }),
        }
        let factor = store_mat(m, result_part(instr.shape(), 0, what)?, what)?;
        let info = s32_array(result_part(instr.shape(), 1, what)?, info, what)?;
        return Ok(Literal::Tuple(vec![factor, info]));
    }
    if target.ends_with("trsm_ffi") {
        let a = operand(operands, 0, what)?;
        let b = operand(operands, 1, what)?;
        let left = match config_char(instr, "side", 'L', what)? {
            'L' => true,
            'R' => false,
            c => return Err(KernelError::Invalid(format!("{what}: side={c}"))),
        };
        let lower = uplo_lower(instr, what)?;
        let transpose = match config_char(instr, "trans_x", 'N', what)? {
            'N' => Transpose::No,
            'T' => Transpose::Plain,
            'C' => Transpose::Adjoint,
            c => return Err(KernelError::Invalid(format!("{what}: trans_x={c}"))),
        };
        let unit_diagonal = match config_char(instr, "diag", 'N', what)? {
            'N' => false,
            'U' => true,
            c => return Err(KernelError::Invalid(format!("{what}: diag={c}"))),
        };
        let o = SolveOptions {
            left,
            lower,
            unit_diagonal,
            transpose,
        };
        let (batch, rows, cols) = check_solve_shapes(a.shape(), b.shape(), left, what)?;
        let am = load_mat(a, what)?;
        let mut bm = load_mat(b, what)?;
        // An optional third operand is the scalar `alpha` of `op(A) X = alpha B`.
        if let Ok(alpha) = operand(operands, 2, what) {
            match (load_mat(alpha, what)?, &mut bm) {
                (Mat::Real(s), Mat::Real(v)) if s.len() == 1 => {
                    v.iter_mut().for_each(|x| *x *= s[0])
                }
                (Mat::Complex(s), Mat::Complex(v)) if s.len() == 1 => {
                    v.iter_mut().for_each(|x| *x = Field::mul(*x, s[0]))
                }
                _ => {
                    return Err(KernelError::Invalid(format!(
                        "{what}: alpha must be a scalar of b's type"
                    )))
                }
            }
        }
        solve_batch(&am, &mut bm, batch, rows, cols, o, what)?;
        return store_mat(bm, result_part(instr.shape(), 0, what)?, what);
    }
    if target.ends_with("getrf_ffi") {
        let a = operand(operands, 0, what)?;
        let (batch, m, n) = matrix_dims(a.shape(), what)?;
        let mut mat = load_mat(a, what)?;
        let mut pivots = Vec::with_capacity(batch * m.min(n));
        let mut info = Vec::with_capacity(batch);
        let mut record = |(p, i): (Vec<i32>, i32)| {
            pivots.extend(p);
            info.push(i);
        };
        match &mut mat {
            Mat::Real(v) => per_matrix(v, m * n, |_, x| record(lu_in_place(x, m, n))),
            Mat::Complex(v) => per_matrix(v, m * n, |_, x| record(lu_in_place(x, m, n))),
        }
        let lu = store_mat(mat, result_part(instr.shape(), 0, what)?, what)?;
        let piv = s32_array(result_part(instr.shape(), 1, what)?, pivots, what)?;
        let info = s32_array(result_part(instr.shape(), 2, what)?, info, what)?;
        return Ok(Literal::Tuple(vec![lu, piv, info]));
    }
    if target.ends_with("geqrf_ffi") {
        let a = operand(operands, 0, what)?;
        let (_, m, n) = matrix_dims(a.shape(), what)?;
        let (mat, taus) = match load_mat(a, what)? {
            Mat::Real(mut v) => {
                let mut t = Vec::new();
                per_matrix(&mut v, m * n, |_, x| t.extend(qr_in_place(x, m, n)));
                (Mat::Real(v), Mat::Real(t))
            }
            Mat::Complex(mut v) => {
                let mut t = Vec::new();
                per_matrix(&mut v, m * n, |_, x| t.extend(qr_in_place(x, m, n)));
                (Mat::Complex(v), Mat::Complex(t))
            }
        };
        let qr = store_mat(mat, result_part(instr.shape(), 0, what)?, what)?;
        let tau = store_mat(taus, result_part(instr.shape(), 1, what)?, what)?;
        return Ok(Literal::Tuple(vec![qr, tau]));
    }
    if target.ends_with("orgqr_ffi") || target.ends_with("ungqr_ffi") {
        let a = operand(operands, 0, what)?;
        let t = operand(operands, 1, what)?;
        let (batch, m, n) = matrix_dims(a.shape(), what)?;
        let k = dims_of(t.shape(), what)?.last().copied().unwrap_or(0);
        if t.data().len() != batch * k || k > m.min(n) {
            return Err(KernelError::Invalid(format!(
                "{what}: tau does not match the matrix"
            )));
        }
        let mut mat = load_mat(a, what)?;
        match (&mut mat, load_mat(t, what)?) {
            (Mat::Real(v), Mat::Real(tau)) => per_matrix(v, m * n, |i, x| {
                householder_product(x, m, n, &tau[i * k..(i + 1) * k])
            }),
            (Mat::Complex(v), Mat::Complex(tau)) => per_matrix(v, m * n, |i, x| {
                householder_product(x, m, n, &tau[i * k..(i + 1) * k])
            }),
            _ => {
                return Err(KernelError::Invalid(format!(
                    "{what}: matrix and tau differ in type"
                )))
            }
        }
        return store_mat(mat, result_part(instr.shape(), 0, what)?, what);
    }
    Err(KernelError::Unsupported(format!(
        "custom-call target {target}"
    )))
}
