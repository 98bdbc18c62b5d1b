//! `fft` (FFT, IFFT, RFFT, IRFFT over the last 1-3 dimensions), computed in `f64` with
//! an exact-index twiddle table (direct DFT per line, any length) and rounded once to
//! the result type. Inverse transforms divide by the length, as XLA does.

use super::numeric::{load, store, Buf, Domain};
use super::util::{dims_of, operand, strides};
use super::KernelError;
use crate::{Instruction, Literal};

type C = [f64; 2];

/// `e^{-2 pi i j / n}` for `j` in `0..n`.
fn twiddles(n: usize) -> Vec<C> {
    (0..n)
        .map(|j| {
            let a = -2.0 * std::f64::consts::PI * j as f64 / n as f64;
            [a.cos(), a.sin()]
        })
        .collect()
}

/// In-place DFT of every line along `axis` (length `n` = `dims[axis]`).
fn transform_axis(data: &mut [C], dims: &[usize], axis: usize, inverse: bool) {
    let n = dims[axis];
    if n == 0 || data.is_empty() {
        return;
    }
    let w = twiddles(n);
    let st = strides(dims)[axis];
    let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
    let mut line = vec![[0.0; 2]; n];
    let mut out = vec![[0.0; 2]; n];
    for base in 0..data.len() {
        if (base / st) % n != 0 {
            continue;
        }
        for (i, l) in line.iter_mut().enumerate() {
            *l = data[base + i * st];
        }
        for (k, o) in out.iter_mut().enumerate() {
            let (mut re, mut im) = (0.0, 0.0);
            for (j, x) in line.iter().enumerate() {
                let t = w[(k * j) % n];
                let ti = if inverse { -t[1] } else { t[1] };
                re += x[0] * t[0] - x[1] * ti;
                im += x[0] * ti + x[1] * t[0];
            }
            *o = [re * scale, im * scale];
        }
        for (i, o) in out.iter().enumerate() {
            data[base + i * st] = *o;
        }
    }
}

/// Evaluates `fft`.
pub(crate) fn fft(instr: &Instruction, operands: &[&Literal]) -> Result<Literal, KernelError> {
    const W: &str = "fft";
    let x = operand(operands, 0, W)?;
    let kind = instr
        .fft_type()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing fft_type")))?;
    let lengths: Vec<usize> = instr
        .fft_length()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: missing fft_length")))?
        .iter()
        .map(|&l| usize::try_from(l).ok())
        .collect::<Option<_>>()
        .ok_or_else(|| KernelError::Invalid(format!("{W}: negative fft_length")))?;
    let in_dims = dims_of(x.shape(), W)?;
    let out_dims = dims_of(instr.shape(), W)?;
    let r = lengths.len();
    if r == 0 || r > 3 || r > in_dims.len() || in_dims.len() != out_dims.len() {
        return Err(KernelError::Invalid(format!(
            "{W}: fft_length must name 1 to 3 trailing dimensions"
        )));
    }
    let rank = in_dims.len();
    let axes = rank - r..rank;
    let last = rank - 1;
    let n_last = lengths[r - 1];
    let values = match load(Domain::C128, x, W)? {
        Buf::C128(v) => v,
        _ => return Err(KernelError::Invalid(format!("{W}: operand is not numeric"))),
    };
    let expect = |dims: &[usize], last_len: usize| {
        let mut d = dims[..rank - r].to_vec();
        d.extend_from_slice(&lengths[..r - 1]);
        d.push(last_len);
        d
    };
    let result: Vec<C> = match kind {
        "FFT" | "IFFT" => {
            if in_dims != expect(&in_dims, n_last) || out_dims != in_dims {
                return Err(KernelError::Invalid(format!(
                    "{W}: dimensions do not match fft_length"
                )));
            }
            let mut v = values;
            for a in axes {
                transform_axis(&mut v, &in_dims, a, kind == "IFFT");
            }
            v
        }
        "RFFT" => {
            if in_dims != expect(&in_dims, n_last) || out_dims != expect(&in_dims, n_last / 2 + 1) {
                return Err(KernelError::Invalid(format!(
                    "{W}: RFFT dimensions do not match fft_length"
                )));
            }
            let mut v = values;
            for a in axes {
                transform_axis(&mut v, &in_dims, a, false);
            }
            // Keep the first n/2 + 1 frequencies of the last dimension.
            let keep = n_last / 2 + 1;
            v.chunks(n_last.max(1))
                .flat_map(|row| row[..keep.min(row.len())].to_vec())
                .collect()
        }
        "IRFFT" => {
            let keep = n_last / 2 + 1;
            if out_dims != expect(&in_dims, n_last)
                || in_dims[last] < keep
                || in_dims[..last] != out_dims[..last]
            {
                return Err(KernelError::Invalid(format!(
                    "{W}: IRFFT dimensions do not match fft_length"
                )));
            }
            // Inverse along the outer transformed dimensions, then the Hermitian
            // extension of each row to n and an inverse DFT keeping the real part.
            let mut v = values;
            for a in rank - r..last {
                transform_axis(&mut v, &in_dims, a, true);
            }
            let in_len = in_dims[last];
            let mut full: Vec<C> = Vec::with_capacity(out_dims.iter().product());
            for row in v.chunks(in_len.max(1)) {
                for k in 0..n_last {
                    full.push(if k < keep {
                        row[k]
                    } else {
                        let c = row[n_last - k];
                        [c[0], -c[1]]
                    });
                }
            }
            // The imaginary parts of the DC and Nyquist terms do not contribute.
            for row in full.chunks_mut(n_last.max(1)) {
                if let Some(first) = row.first_mut() {
                    first[1] = 0.0;
                }
                if n_last % 2 == 0 && n_last > 0 {
                    row[n_last / 2][1] = 0.0;
                }
            }
            transform_axis(&mut full, &out_dims, last, true);
            let real: Vec<f64> = full.iter().map(|c| c[0]).collect();
            return store(Buf::F64(real), instr.shape(), W);
        }
        other => return Err(KernelError::Unsupported(format!("{W}: fft_type {other}"))),
    };
    store(Buf::C128(result), instr.shape(), W)
}
