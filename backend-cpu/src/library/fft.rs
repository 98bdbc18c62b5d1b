//! `fft` through `rustfft`, in `f64` (rounded once to the result type, as the evaluator
//! computes): `FFT`/`IFFT` transform the trailing `fft_length` dimensions (inverses scaled
//! by `1/n`), `RFFT` keeps the first `n/2 + 1` frequencies of the last one, `IRFFT`
//! extends each last-dimension row to its Hermitian whole (the imaginary parts of the DC
//! and Nyquist terms dropped) and keeps the real part.

use codegen::kir::ScalarType;
use plan::FftKind;
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

use super::arrays::{for_each_index, Arr};
use crate::error::BackendError;

type C = Complex<f64>;

fn bad(what: &str) -> BackendError {
    BackendError::Internal(format!("fft: {what}"))
}

/// The values of `a` in logical row-major order, widened to `f64` complex.
fn read(a: &Arr) -> Result<Vec<C>, BackendError> {
    let mut out = Vec::with_capacity(a.count());
    let bytes = a.bytes();
    let f32_at = |o: usize| {
        f64::from(f32::from_ne_bytes([
            bytes[o],
            bytes[o + 1],
            bytes[o + 2],
            bytes[o + 3],
        ]))
    };
    let f64_at = |o: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[o..o + 8]);
        f64::from_ne_bytes(w)
    };
    let dims = a.dims.clone();
    for_each_index(&dims, |idx| {
        let o = a.offset(idx) * a.width;
        out.push(match a.ty {
            ScalarType::F32 => C::new(f32_at(o), 0.0),
            ScalarType::F64 => C::new(f64_at(o), 0.0),
            ScalarType::C64 => C::new(f32_at(o), f32_at(o + 4)),
            ScalarType::C128 => C::new(f64_at(o), f64_at(o + 8)),
            t => return Err(bad(&format!("operand of type {t}"))),
        });
        Ok(())
    })?;
    Ok(out)
}

/// Writes logical row-major `values` into `a` (rounded to its type; real types keep
/// the real part).
fn write(a: &mut Arr, values: &[C]) -> Result<(), BackendError> {
    if values.len() != a.count() {
        return Err(bad("result size"));
    }
    let dims = a.dims.clone();
    let mut i = 0;
    for_each_index(&dims, |idx| {
        let o = a.offset(idx) * a.width;
        let v = values[i];
        i += 1;
        let ty = a.ty;
        let b = a.bytes_mut();
        match ty {
            ScalarType::F32 => b[o..o + 4].copy_from_slice(&(v.re as f32).to_ne_bytes()),
            ScalarType::F64 => b[o..o + 8].copy_from_slice(&v.re.to_ne_bytes()),
            ScalarType::C64 => {
                b[o..o + 4].copy_from_slice(&(v.re as f32).to_ne_bytes());
                b[o + 4..o + 8].copy_from_slice(&(v.im as f32).to_ne_bytes());
            }
            ScalarType::C128 => {
                b[o..o + 8].copy_from_slice(&v.re.to_ne_bytes());
                b[o + 8..o + 16].copy_from_slice(&v.im.to_ne_bytes());
            }
            t => return Err(bad(&format!("result of type {t}"))),
        }
        Ok(())
    })
}

/// Transforms every line of row-major `data` (dims `dims`) along `axis`.
fn transform_axis(
    planner: &mut FftPlanner<f64>,
    data: &mut [C],
    dims: &[usize],
    axis: usize,
    inverse: bool,
) {
    let n = dims[axis];
    if n == 0 || data.is_empty() {
        return;
    }
    let st: usize = dims[axis + 1..].iter().product();
    let plan = if inverse {
        planner.plan_fft_inverse(n)
    } else {
        planner.plan_fft_forward(n)
    };
    let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
    let mut line = vec![C::default(); n];
    for base in 0..data.len() {
        if !(base / st).is_multiple_of(n) {
            continue;
        }
        for (i, l) in line.iter_mut().enumerate() {
            *l = data[base + i * st];
        }
        plan.process(&mut line);
        for (i, l) in line.iter().enumerate() {
            data[base + i * st] = l * scale;
        }
    }
}

/// Runs an `fft` of `kind` over the trailing `lengths.len()` dimensions.
pub(crate) fn run(
    kind: FftKind,
    lengths: &[usize],
    ins: &[Arr],
    outs: &mut [Arr],
) -> Result<(), BackendError> {
    let ([x], [y]) = (ins, outs) else {
        return Err(bad("operand or result count"));
    };
    let in_dims = x.dims.clone();
    let rank = in_dims.len();
    let r = lengths.len();
    if r == 0 || r > rank || y.dims.len() != rank {
        return Err(bad("fft_length must name trailing dimensions"));
    }
    let last = rank - 1;
    let n_last = lengths[r - 1];
    let mut planner = FftPlanner::new();
    let mut v = read(x)?;
    match kind {
        FftKind::Fft | FftKind::Ifft => {
            if y.dims != in_dims || in_dims[rank - r..] != *lengths {
                return Err(bad("dimensions do not match fft_length"));
            }
            for a in rank - r..rank {
                transform_axis(&mut planner, &mut v, &in_dims, a, kind == FftKind::Ifft);
            }
            write(y, &v)
        }
        FftKind::Rfft => {
            let keep = n_last / 2 + 1;
            if in_dims[rank - r..] != *lengths
                || y.dims[last] != keep
                || y.dims[..last] != in_dims[..last]
            {
                return Err(bad("RFFT dimensions do not match fft_length"));
            }
            for a in rank - r..rank {
                transform_axis(&mut planner, &mut v, &in_dims, a, false);
            }
            let kept: Vec<C> = v
                .chunks(n_last.max(1))
                .flat_map(|row| row[..keep.min(row.len())].to_vec())
                .collect();
            write(y, &kept)
        }
        FftKind::Irfft => {
            let keep = n_last / 2 + 1;
            if y.dims[rank - r..] != *lengths
                || in_dims[last] < keep
                || in_dims[..last] != y.dims[..last]
            {
                return Err(bad("IRFFT dimensions do not match fft_length"));
            }
            for a in rank - r..last {
                transform_axis(&mut planner, &mut v, &in_dims, a, true);
            }
            let in_len = in_dims[last];
            let mut full: Vec<C> = Vec::with_capacity(y.count());
            for row in v.chunks(in_len.max(1)) {
                for k in 0..n_last {
                    full.push(if k < keep {
                        row[k]
                    } else {
                        row[n_last - k].conj()
                    });
                }
            }
            for row in full.chunks_mut(n_last.max(1)) {
                if let Some(first) = row.first_mut() {
                    first.im = 0.0;
                }
                if n_last.is_multiple_of(2) && n_last > 0 {
                    row[n_last / 2].im = 0.0;
                }
            }
            let out_dims = y.dims.clone();
            transform_axis(&mut planner, &mut full, &out_dims, last, true);
            write(y, &full)
        }
    }
}
