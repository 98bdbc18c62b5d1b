//! `fft` with XLA's semantics (the evaluator's [`hlo_eval::numeric::fft_values`] is the
//! oracle): the trailing `fft_length.len()` (1 to 3) dimensions are transformed, FFT and
//! IFFT keep the shape (IFFT scaled by `1/n` for the product `n` of the lengths), RFFT
//! keeps the first `n/2 + 1` frequencies of the last dimension, IRFFT reads the first
//! `n/2 + 1` of each row as the Hermitian half of a length-`n` spectrum (the imaginary
//! parts of its DC and Nyquist terms ignored) and gives the real signal. Those rules are
//! the evaluator's, called here, not restated: the shapes, the kept half and the inverse
//! scale come from [`FftGeometry`], IRFFT's reading of its half from
//! [`ignore_edge_imaginary`]; this module only chooses how lines are transformed.
//!
//! The call reads its operand where it lies and writes its result straight into the
//! result's allocation ([`run_on`]). It computes in the operand's precision (`f32` for
//! `c64`/`f32`, `f64` for `c128`/`f64`), as XLA:CPU computes (DUCC): `rustfft` plans for
//! the complex transforms and `realfft`'s (a complex FFT of half the length plus a
//! twiddle pass) for the real ones, planned once per process ([`plans`]). A
//! multi-dimensional transform goes axis by axis over one row-major working array (the
//! result's own buffer when its layout is row-major): the last axis first, row by row
//! straight from the operand (RFFT's real-to-complex there), then each other axis over
//! tiles of lines gathered into contiguous scratch ([`passes`]); IRFFT does the other
//! axes first and the complex-to-real last. Inverse scaling is applied in the last pass.
//! Every pass runs in parallel over its lines on rayon's pool once the array is large
//! enough.

mod arrays;
mod passes;
mod plans;
#[cfg(test)]
mod tests;

use codegen::kir::ScalarType;
use hlo_eval::numeric::{ignore_edge_imaginary, FftGeometry, FftType};
use plan::{ArraySpec, FftKind, Program};
use rustfft::num_complex::Complex;

use self::arrays::bad;
use self::arrays::{elements, in_result, Array, Rows};
use self::passes::{columns, rows};
use self::plans::{with_planners, Precision};
use super::arrays::Arr;
use crate::error::BackendError;
use crate::memory::Memory;

/// Runs an `fft` of `kind` over the trailing `lengths.len()` dimensions of `ins[0]` into
/// `outs[0]`.
pub(crate) fn run(
    kind: FftKind,
    lengths: &[usize],
    ins: &[Arr],
    outs: &mut [Arr],
) -> Result<(), BackendError> {
    let ([x], [y]) = (ins, outs) else {
        return Err(bad("operand or result count"));
    };
    let x = Array::like(x, x.bytes());
    let shape = Array::like(y, ());
    let y = Array {
        dims: shape.dims,
        strides: shape.strides,
        ty: shape.ty,
        bytes: y.bytes_mut(),
    };
    dispatch(kind, lengths, &x, y)
}

/// Runs an `fft` library call on the executor's memory: the operand read where it lies,
/// the result written straight into its allocation (the library's other routines work
/// on copies of both).
pub(crate) fn run_on(
    p: &Program,
    kind: FftKind,
    lengths: &[usize],
    inputs: &[ArraySpec],
    outputs: &[ArraySpec],
    mem: &mut [Memory<'_>],
) -> Result<(), BackendError> {
    let ([xs], [ys]) = (inputs, outputs) else {
        return Err(bad("operand or result count"));
    };
    let shape = |s: &ArraySpec| Arr::with_words(s, |_| Vec::new());
    let (xa, ya) = (
        p.buffers[xs.buffer].allocation,
        p.buffers[ys.buffer].allocation,
    );
    let (lo, hi) = mem.split_at_mut(xa.max(ya));
    let (xm, ym) = match xa.cmp(&ya) {
        std::cmp::Ordering::Less => (&lo[xa], &mut hi[0]),
        std::cmp::Ordering::Greater => (&hi[0], &mut lo[ya]),
        // One allocation for both: work on a copy of the operand.
        std::cmp::Ordering::Equal => {
            let x = shape(xs);
            let copy = hi[0].bytes(x.count() * x.width).to_vec();
            let x = Array::like(&x, copy.as_slice());
            return dispatch(kind, lengths, &x, result(&shape(ys), &mut hi[0])?);
        }
    };
    let x = shape(xs);
    let x = Array::like(&x, xm.bytes(x.count() * x.width));
    dispatch(kind, lengths, &x, result(&shape(ys), ym)?)
}

/// The result array of shape `y` in writable memory `m`.
fn result<'a>(y: &Arr, m: &'a mut Memory<'_>) -> Result<Array<&'a mut [u8]>, BackendError> {
    let Some(bytes) = m.bytes_mut() else {
        return Err(bad("result in read-only memory"));
    };
    let y = Array::like(y, bytes);
    if y.bytes.len() < y.len() {
        return Err(bad("result allocation too small"));
    }
    Ok(y)
}

/// Checks the shapes and runs the transform in the operand's precision.
fn dispatch(
    kind: FftKind,
    lengths: &[usize],
    x: &Array<&[u8]>,
    y: Array<&mut [u8]>,
) -> Result<(), BackendError> {
    if x.bytes.len() < x.len() {
        return Err(bad("operand allocation too small"));
    }
    let geometry = FftGeometry::new(fft_type(kind), lengths, &x.dims, &y.dims)
        .map_err(|e| bad(&format!("{e} ({kind:?} of {:?} to {:?})", x.dims, y.dims)))?;
    use FftKind as K;
    use ScalarType as S;
    match (kind, x.ty, y.ty) {
        (K::Fft | K::Ifft, S::C64, S::C64)
        | (K::Rfft, S::F32, S::C64)
        | (K::Irfft, S::C64, S::F32) => typed::<f32>(kind, &geometry, x, y),
        (K::Fft | K::Ifft, S::C128, S::C128)
        | (K::Rfft, S::F64, S::C128)
        | (K::Irfft, S::C128, S::F64) => typed::<f64>(kind, &geometry, x, y),
        (_, a, b) => Err(bad(&format!("{kind:?} of {a} to {b}"))),
    }
}

/// The evaluator's name of `kind`.
fn fft_type(kind: FftKind) -> FftType {
    match kind {
        FftKind::Fft => FftType::Fft,
        FftKind::Ifft => FftType::Ifft,
        FftKind::Rfft => FftType::Rfft,
        FftKind::Irfft => FftType::Irfft,
    }
}

/// The strided passes of a multi-dimensional transform: for each transformed axis
/// (from `first`) before the last whose length is above 1, `(outer, n, inner)` of a
/// row-major array of dimensions `dims`.
fn strided_axes(dims: &[usize], first: usize) -> Vec<(usize, usize, usize)> {
    let rank = dims.len();
    (first..rank - 1)
        .filter(|&a| dims[a] > 1)
        .map(|a| {
            let outer = dims[..a].iter().product();
            let inner = dims[a + 1..].iter().product();
            (outer, dims[a], inner)
        })
        .collect()
}

/// The error of a `realfft` call inside a pass, kept for after the pass.
type Failure = std::sync::Mutex<Option<String>>;

fn note(failure: &Failure, e: realfft::FftError) {
    let mut f = failure
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f.get_or_insert_with(|| e.to_string());
}

fn failed(failure: Failure) -> Result<(), BackendError> {
    match failure
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        Some(e) => Err(bad(&e)),
        None => Ok(()),
    }
}

/// The transform in precision `T` (`x` and `y` of the matching types, dimensions
/// checked into `g`).
fn typed<T: Precision>(
    kind: FftKind,
    g: &FftGeometry,
    x: &Array<&[u8]>,
    y: Array<&mut [u8]>,
) -> Result<(), BackendError> {
    if x.count() == 0 || y.count() == 0 {
        return Ok(());
    }
    let (first, n, half) = (g.first_axis(), g.last_length(), g.half());
    let total: usize = g.lengths.iter().product();
    let scale = T::from_f64(g.inverse_scale()).ok_or_else(|| bad("scale"))?;
    let src = Rows::of(x);
    let out_dims = y.dims.clone();
    match kind {
        FftKind::Fft | FftKind::Ifft => {
            let inverse = kind == FftKind::Ifft;
            let data = elements::<Complex<T>>(x)?;
            let axes = strided_axes(&out_dims, first);
            let row_plan = with_planners::<T, _>(|p| p.complex(n, inverse));
            let plans: Vec<_> =
                with_planners::<T, _>(|p| axes.iter().map(|a| p.complex(a.1, inverse)).collect());
            let scale = (inverse && total > 1).then_some(scale);
            in_result::<Complex<T>>(y, |work| {
                let row_scale = if axes.is_empty() { scale } else { None };
                rows(
                    work,
                    n,
                    || vec![Complex::default(); row_plan.get_inplace_scratch_len()],
                    |i, row, scratch| {
                        src.read(data, i, row);
                        row_plan.process_with_scratch(row, scratch);
                        if let Some(s) = row_scale {
                            row.iter_mut().for_each(|v| *v = v.scale(s));
                        }
                    },
                );
                for (k, (axis, plan)) in axes.iter().zip(&plans).enumerate() {
                    let last = k + 1 == axes.len();
                    columns(work, *axis, &**plan, if last { scale } else { None });
                }
                Ok(())
            })
        }
        FftKind::Rfft => {
            let data = elements::<T>(x)?;
            let axes = strided_axes(&out_dims, first);
            let r2c = with_planners::<T, _>(|p| p.forward_real(n));
            let plans: Vec<_> =
                with_planners::<T, _>(|p| axes.iter().map(|a| p.complex(a.1, false)).collect());
            let failure = Failure::default();
            in_result::<Complex<T>>(y, |work| {
                rows(
                    work,
                    half,
                    || (vec![T::zero(); n], r2c.make_scratch_vec()),
                    |i, row, (line, scratch)| {
                        src.read(data, i, line);
                        if let Err(e) = r2c.process_with_scratch(line, row, scratch) {
                            note(&failure, e);
                        }
                    },
                );
                for (axis, plan) in axes.iter().zip(&plans) {
                    columns(work, *axis, &**plan, None);
                }
                Ok(())
            })?;
            failed(failure)
        }
        FftKind::Irfft => {
            let data = elements::<Complex<T>>(x)?;
            let mut half_dims = x.dims.clone();
            half_dims[x.dims.len() - 1] = half;
            let axes = strided_axes(&half_dims, first);
            let c2r = with_planners::<T, _>(|p| p.inverse_real(n));
            let plans: Vec<_> =
                with_planners::<T, _>(|p| axes.iter().map(|a| p.complex(a.1, true)).collect());
            // The other axes first, over the kept half of each row.
            let spectrum: Vec<Complex<T>> = if axes.is_empty() {
                Vec::new()
            } else {
                let mut w = vec![Complex::default(); half_dims.iter().product()];
                rows(&mut w, half, || (), |i, row, ()| src.read(data, i, row));
                for (axis, plan) in axes.iter().zip(&plans) {
                    columns(&mut w, *axis, &**plan, None);
                }
                w
            };
            let failure = Failure::default();
            in_result::<T>(y, |work| {
                rows(
                    work,
                    n,
                    || (vec![Complex::default(); half], c2r.make_scratch_vec()),
                    |i, row, (line, scratch)| {
                        if axes.is_empty() {
                            src.read(data, i, line);
                        } else {
                            line.copy_from_slice(&spectrum[i * half..(i + 1) * half]);
                        }
                        ignore_edge_imaginary(line, n);
                        if let Err(e) = c2r.process_with_scratch(line, row, scratch) {
                            note(&failure, e);
                        }
                        if total > 1 {
                            row.iter_mut().for_each(|v| *v = *v * scale);
                        }
                    },
                );
                Ok(())
            })?;
            failed(failure)
        }
    }
}
