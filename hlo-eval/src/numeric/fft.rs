//! `fft` (FFT, IFFT, RFFT, IRFFT over the last 1-3 dimensions) with XLA's conventions,
//! computed in `f64` and rounded once to the result type: the transformed axes are the
//! trailing `fft_length` dimensions, inverse transforms divide by the length, RFFT keeps
//! the first `n/2 + 1` frequencies of the last dimension, and IRFFT extends each row to
//! its Hermitian whole (the imaginary parts of the DC and Nyquist terms dropped) and keeps
//! the real part. [`fft_values`] is that semantics on row-major values, the evaluator's
//! and the oracle of the CPU backend's own FFT; the one-dimensional transforms come from a
//! [`LineDft`] (the evaluator's is [`ReferenceDft`]). The rules that do not depend on how
//! lines are transformed are stated once, here, for the evaluator and the CPU backend's
//! own transforms (which run in the operand's precision over its memory): the shapes
//! ([`FftGeometry`]: which dimensions, RFFT's kept frequencies, the inverse's scale) and
//! IRFFT's reading of its Hermitian half ([`ignore_edge_imaginary`]).

use super::fft_lines::{LineDft, ReferenceDft};
use super::util::{dims_of, operand, strides};
use super::widen::{load, store, Buf, Domain};
use super::KernelError;
use hlo::{Instruction, Literal};
use num_complex::{Complex, Complex64};

type C = Complex64;

/// The kinds of `fft`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FftType {
    /// Complex to complex, forward.
    Fft,
    /// Complex to complex, inverse (scaled by `1/n`).
    Ifft,
    /// Real to complex: the first `n/2 + 1` frequencies of the last dimension.
    Rfft,
    /// Complex (the Hermitian half) to real.
    Irfft,
}

/// An `fft`'s operand and result dimensions checked against `fft_length` (XLA's
/// rules), and what the transform follows from them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FftGeometry {
    /// `fft_length`: the lengths of the transformed trailing dimensions on the complex
    /// side (the real signal's for RFFT and IRFFT), 1 to 3 of them.
    pub lengths: Vec<usize>,
    /// The operand's (and the result's) rank.
    pub rank: usize,
}

impl FftGeometry {
    /// Checks the dimensions of an `fft` of `kind` from `in_dims` to `out_dims`: the
    /// trailing `lengths.len()` (1 to 3) dimensions are `lengths` (for RFFT's result and
    /// IRFFT's operand the last is the kept half, at least [`FftGeometry::half`] for
    /// IRFFT's operand), the leading ones are the same on both sides. The error says
    /// which rule failed.
    pub fn new(
        kind: FftType,
        lengths: &[usize],
        in_dims: &[usize],
        out_dims: &[usize],
    ) -> Result<FftGeometry, String> {
        const W: &str = "fft";
        let r = lengths.len();
        let rank = in_dims.len();
        if r == 0 || r > 3 || r > rank || rank != out_dims.len() {
            return Err(format!(
                "{W}: fft_length must name 1 to 3 trailing dimensions"
            ));
        }
        let last = rank - 1;
        let n_last = lengths[r - 1];
        let keep = n_last / 2 + 1;
        let expect = |last_len: usize| {
            let mut d = in_dims[..rank - r].to_vec();
            d.extend_from_slice(&lengths[..r - 1]);
            d.push(last_len);
            d
        };
        let ok = match kind {
            FftType::Fft | FftType::Ifft => in_dims == expect(n_last) && out_dims == in_dims,
            FftType::Rfft => in_dims == expect(n_last) && out_dims == expect(keep),
            FftType::Irfft => {
                out_dims == expect(n_last)
                    && in_dims[last] >= keep
                    && in_dims[..last] == out_dims[..last]
            }
        };
        if !ok {
            let which = match kind {
                FftType::Fft | FftType::Ifft => "",
                FftType::Rfft => "RFFT ",
                FftType::Irfft => "IRFFT ",
            };
            return Err(format!("{W}: {which}dimensions do not match fft_length"));
        }
        Ok(FftGeometry {
            lengths: lengths.to_vec(),
            rank,
        })
    }

    /// The first transformed dimension.
    pub fn first_axis(&self) -> usize {
        self.rank - self.lengths.len()
    }

    /// The length of the last transformed dimension (the real signal's for RFFT and
    /// IRFFT).
    pub fn last_length(&self) -> usize {
        self.lengths[self.lengths.len() - 1]
    }

    /// The frequencies of the last dimension that RFFT keeps and IRFFT reads: `n/2 + 1`.
    pub fn half(&self) -> usize {
        self.last_length() / 2 + 1
    }

    /// What an inverse transform (IFFT, IRFFT) multiplies by: one over the product of
    /// the lengths.
    pub fn inverse_scale(&self) -> f64 {
        1.0 / self.lengths.iter().product::<usize>() as f64
    }
}

/// IRFFT's reading of `row`, the Hermitian half (at least `n/2 + 1` values) of a
/// length-`n` spectrum: the imaginary parts of its DC term and, for even `n`, of its
/// Nyquist term do not contribute (a real signal's are zero), so they are set to zero.
pub fn ignore_edge_imaginary<T: Default>(row: &mut [Complex<T>], n: usize) {
    if let Some(dc) = row.first_mut() {
        dc.im = T::default();
    }
    if n > 0 && n.is_multiple_of(2) {
        if let Some(nyquist) = row.get_mut(n / 2) {
            nyquist.im = T::default();
        }
    }
}

/// In-place DFT of every line along `axis` (length `n` = `dims[axis]`), inverses scaled
/// by `1/n`.
fn transform_axis(
    lines: &mut dyn LineDft,
    data: &mut [C],
    dims: &[usize],
    axis: usize,
    inverse: bool,
) {
    let n = dims[axis];
    if n == 0 || data.is_empty() {
        return;
    }
    let st = strides(dims)[axis];
    let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
    let mut line = vec![C::default(); n];
    let mut out = vec![C::default(); n];
    for base in 0..data.len() {
        if !(base / st).is_multiple_of(n) {
            continue;
        }
        for (i, l) in line.iter_mut().enumerate() {
            *l = data[base + i * st];
        }
        lines.transform(&line, &mut out, inverse);
        for (i, o) in out.iter().enumerate() {
            data[base + i * st] = o.scale(scale);
        }
    }
}

/// An `fft` of `kind` over the trailing `lengths.len()` (1 to 3) dimensions of
/// row-major `values` (dimensions `in_dims`, real inputs with zero imaginary parts),
/// giving the row-major result of dimensions `out_dims`. For `IRFFT` the result's real
/// parts are the values (the imaginary parts are to be dropped).
pub fn fft_values(
    kind: FftType,
    lengths: &[usize],
    in_dims: &[usize],
    out_dims: &[usize],
    values: Vec<C>,
    lines: &mut dyn LineDft,
) -> Result<Vec<C>, KernelError> {
    const W: &str = "fft";
    let g = FftGeometry::new(kind, lengths, in_dims, out_dims).map_err(KernelError::Invalid)?;
    if values.len() != in_dims.iter().product::<usize>() {
        return Err(KernelError::Invalid(format!(
            "{W}: {} values for the operand's dimensions",
            values.len()
        )));
    }
    let rank = g.rank;
    let axes = g.first_axis()..rank;
    let last = rank - 1;
    let n_last = g.last_length();
    let mut v = values;
    match kind {
        FftType::Fft | FftType::Ifft => {
            for a in axes {
                transform_axis(lines, &mut v, in_dims, a, kind == FftType::Ifft);
            }
            Ok(v)
        }
        FftType::Rfft => {
            for a in axes {
                transform_axis(lines, &mut v, in_dims, a, false);
            }
            // Keep the first n/2 + 1 frequencies of the last dimension.
            let keep = g.half();
            Ok(v.chunks(n_last.max(1))
                .flat_map(|row| row[..keep.min(row.len())].to_vec())
                .collect())
        }
        FftType::Irfft => {
            let keep = g.half();
            // Inverse along the outer transformed dimensions, then the Hermitian
            // extension of each row to n and an inverse DFT keeping the real part.
            for a in g.first_axis()..last {
                transform_axis(lines, &mut v, in_dims, a, true);
            }
            let in_len = in_dims[last];
            let mut full: Vec<C> = Vec::with_capacity(out_dims.iter().product());
            for row in v.chunks_mut(in_len.max(1)) {
                ignore_edge_imaginary(row, n_last);
                for k in 0..n_last {
                    full.push(if k < keep {
                        row[k]
                    } else {
                        row[n_last - k].conj()
                    });
                }
            }
            transform_axis(lines, &mut full, out_dims, last, true);
            Ok(full)
        }
    }
}

/// Evaluates `fft`.
pub(crate) fn fft(instr: &Instruction, operands: &[&Literal]) -> Result<Literal, KernelError> {
    const W: &str = "fft";
    let x = operand(operands, 0, W)?;
    let kind = match instr
        .fft_type()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing fft_type")))?
    {
        "FFT" => FftType::Fft,
        "IFFT" => FftType::Ifft,
        "RFFT" => FftType::Rfft,
        "IRFFT" => FftType::Irfft,
        other => return Err(KernelError::Unsupported(format!("{W}: fft_type {other}"))),
    };
    let lengths: Vec<usize> = instr
        .fft_length()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing fft_length")))?
        .iter()
        .map(|&l| usize::try_from(l).ok())
        .collect::<Option<_>>()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: negative fft_length")))?;
    let in_dims = dims_of(x.shape(), W)?;
    let out_dims = dims_of(instr.shape(), W)?;
    let values = match load(Domain::C128, x, W)? {
        Buf::C128(v) => v,
        _ => return Err(KernelError::Invalid(format!("{W}: operand is not numeric"))),
    };
    let result = fft_values(
        kind,
        &lengths,
        &in_dims,
        &out_dims,
        values,
        &mut ReferenceDft::default(),
    )?;
    if kind == FftType::Irfft {
        let real: Vec<f64> = result.iter().map(|c| c.re).collect();
        return store(Buf::F64(real), instr.shape(), W);
    }
    store(Buf::C128(result), instr.shape(), W)
}
