//! `fft` with the evaluator's semantics ([`hlo_eval::numeric::fft_values`]: the
//! transformed axes, the `1/n` of inverses, RFFT's kept frequencies, IRFFT's Hermitian
//! extension), its one-dimensional transforms through `rustfft`, in `f64` (rounded once
//! to the result type). This routine reads the operand from its buffer and writes the
//! result.

use codegen::kir::ScalarType;
use plan::FftKind;
use std::sync::Arc;

use hlo_eval::numeric::{fft_values, FftType, LineDft};
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

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

/// `rustfft` as the evaluator's line transform asks (unnormalized; plans cached by
/// `FftPlanner`, the last one kept at hand).
struct RustFft {
    planner: FftPlanner<f64>,
    last: Option<(usize, bool, Arc<dyn Fft<f64>>)>,
    scratch: Vec<C>,
}

impl LineDft for RustFft {
    fn transform(&mut self, line: &[C], out: &mut [C], inverse: bool) {
        let n = line.len();
        let plan = match &self.last {
            Some((len, inv, plan)) if *len == n && *inv == inverse => Arc::clone(plan),
            _ => {
                let plan = if inverse {
                    self.planner.plan_fft_inverse(n)
                } else {
                    self.planner.plan_fft_forward(n)
                };
                self.last = Some((n, inverse, Arc::clone(&plan)));
                plan
            }
        };
        out.copy_from_slice(line);
        self.scratch
            .resize(plan.get_inplace_scratch_len(), C::default());
        plan.process_with_scratch(out, &mut self.scratch);
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
    let kind = match kind {
        FftKind::Fft => FftType::Fft,
        FftKind::Ifft => FftType::Ifft,
        FftKind::Rfft => FftType::Rfft,
        FftKind::Irfft => FftType::Irfft,
    };
    let mut lines = RustFft {
        planner: FftPlanner::new(),
        last: None,
        scratch: Vec::new(),
    };
    let out_dims = y.dims.clone();
    let v = fft_values(kind, lengths, &x.dims, &out_dims, read(x)?, &mut lines)
        .map_err(|e| bad(&e.to_string()))?;
    write(y, &v)
}
