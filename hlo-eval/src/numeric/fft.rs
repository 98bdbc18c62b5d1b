//! `fft` (FFT, IFFT, RFFT, IRFFT over the last 1-3 dimensions), computed in `f64` with
//! an exact-index twiddle table (radix-2 for power-of-two lengths, a direct DFT for
//! other lengths up to 64, Bluestein's algorithm beyond) and rounded once to the result
//! type. Inverse transforms divide
//! by the length, as XLA does.

use super::util::{dims_of, operand, strides};
use super::widen::{load, store, Buf, Domain};
use super::KernelError;
use hlo::{Instruction, Literal};
use num_complex::Complex64;

type C = Complex64;

/// `e^{-2 pi i j / n}` for `j` in `0..n`.
fn twiddles(n: usize) -> Vec<C> {
    (0..n)
        .map(|j| {
            let a = -2.0 * std::f64::consts::PI * j as f64 / n as f64;
            Complex64::new(a.cos(), a.sin())
        })
        .collect()
}

/// Direct DFT of `line` into `out` (`w` = [`twiddles`] of the length).
fn dft(line: &[C], out: &mut [C], w: &[C], inverse: bool) {
    let n = line.len();
    for (k, o) in out.iter_mut().enumerate() {
        let mut sum = C::default();
        for (j, x) in line.iter().enumerate() {
            let t = w[(k * j) % n];
            sum += x * if inverse { t.conj() } else { t };
        }
        *o = sum;
    }
}

/// Iterative radix-2 FFT of `line` into `out` for power-of-two lengths.
fn radix2(line: &[C], out: &mut [C], w: &[C], inverse: bool) {
    let n = line.len();
    let bits = n.trailing_zeros();
    for (i, x) in line.iter().enumerate() {
        let r = if bits == 0 {
            0
        } else {
            i.reverse_bits() >> (usize::BITS - bits)
        };
        out[r] = *x;
    }
    let mut len = 2;
    while len <= n {
        let step = n / len;
        for start in (0..n).step_by(len) {
            for j in 0..len / 2 {
                let t = w[j * step];
                let (a, b) = (out[start + j], out[start + j + len / 2]);
                let bt = b * if inverse { t.conj() } else { t };
                out[start + j] = a + bt;
                out[start + j + len / 2] = a - bt;
            }
        }
        len *= 2;
    }
}

/// Bluestein's chirp-z DFT of any length via power-of-two FFTs (for long lines whose
/// length is not a power of two). The chirp angles use `k^2 mod 2n`, exact in integers.
fn bluestein(line: &[C], out: &mut [C], inverse: bool) {
    let n = line.len();
    let m = (2 * n - 1).next_power_of_two();
    let sign = if inverse { 1.0 } else { -1.0 };
    let chirp: Vec<C> = (0..n)
        .map(|k| {
            let a = sign * std::f64::consts::PI * ((k * k) % (2 * n)) as f64 / n as f64;
            Complex64::new(a.cos(), a.sin())
        })
        .collect();
    let mut a = vec![C::default(); m];
    for k in 0..n {
        a[k] = line[k] * chirp[k];
    }
    let mut b = vec![C::default(); m];
    b[0] = chirp[0].conj();
    for k in 1..n {
        b[k] = chirp[k].conj();
        b[m - k] = chirp[k].conj();
    }
    let w = twiddles(m);
    let (mut fa, mut fb) = (vec![C::default(); m], vec![C::default(); m]);
    radix2(&a, &mut fa, &w, false);
    radix2(&b, &mut fb, &w, false);
    let prod: Vec<C> = fa.iter().zip(&fb).map(|(&x, &y)| x * y).collect();
    let mut conv = vec![C::default(); m];
    radix2(&prod, &mut conv, &w, true);
    for k in 0..n {
        out[k] = conv[k].unscale(m as f64) * chirp[k];
    }
}

/// Lines at most this long use the direct DFT when their length is not a power of two.
const DIRECT_MAX: usize = 64;

/// In-place DFT of every line along `axis` (length `n` = `dims[axis]`): radix-2 for
/// powers of two, a direct sum for short lines, Bluestein for long ones.
fn transform_axis(data: &mut [C], dims: &[usize], axis: usize, inverse: bool) {
    let n = dims[axis];
    if n == 0 || data.is_empty() {
        return;
    }
    let w = twiddles(n);
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
        if n.is_power_of_two() {
            radix2(&line, &mut out, &w, inverse);
        } else if n <= DIRECT_MAX {
            dft(&line, &mut out, &w, inverse);
        } else {
            bluestein(&line, &mut out, inverse);
        }
        for (i, o) in out.iter().enumerate() {
            data[base + i * st] = o.scale(scale);
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
                        row[n_last - k].conj()
                    });
                }
            }
            // The imaginary parts of the DC and Nyquist terms do not contribute.
            for row in full.chunks_mut(n_last.max(1)) {
                if let Some(first) = row.first_mut() {
                    first.im = 0.0;
                }
                if n_last.is_multiple_of(2) && n_last > 0 {
                    row[n_last / 2].im = 0.0;
                }
            }
            transform_axis(&mut full, &out_dims, last, true);
            let real: Vec<f64> = full.iter().map(|c| c.re).collect();
            return store(Buf::F64(real), instr.shape(), W);
        }
        other => return Err(KernelError::Unsupported(format!("{W}: fft_type {other}"))),
    };
    store(Buf::C128(result), instr.shape(), W)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bluestein_matches_direct_dft() {
        for n in [3usize, 5, 7, 12, 65, 100, 127] {
            let w = twiddles(n);
            let line: Vec<C> = (0..n)
                .map(|i| C::new(((i * 7) % 11) as f64 - 5.0, ((i * 3) % 4) as f64))
                .collect();
            for inverse in [false, true] {
                let (mut a, mut b) = (vec![C::default(); n], vec![C::default(); n]);
                bluestein(&line, &mut a, inverse);
                dft(&line, &mut b, &w, inverse);
                for (x, y) in a.iter().zip(&b) {
                    assert!((x - y).norm() < 1e-9, "n={n}");
                }
            }
        }
    }

    #[test]
    fn radix2_matches_direct_dft() {
        for n in [1usize, 2, 4, 8, 64] {
            let w = twiddles(n);
            let line: Vec<C> = (0..n)
                .map(|i| C::new((i * 7 % 5) as f64 - 2.0, (i * 3 % 4) as f64))
                .collect();
            for inverse in [false, true] {
                let (mut a, mut b) = (vec![C::default(); n], vec![C::default(); n]);
                radix2(&line, &mut a, &w, inverse);
                dft(&line, &mut b, &w, inverse);
                for (x, y) in a.iter().zip(&b) {
                    assert!((x - y).norm() < 1e-9, "n={n}");
                }
            }
        }
    }
}
