//! One-dimensional DFTs of the reference evaluator, computed in `f64` with an
//! exact-index twiddle table: radix-2 for power-of-two lengths, a direct DFT for other
//! lengths up to 64, Bluestein's algorithm beyond. [`LineDft`] is what the shared FFT
//! semantics ([`fft_values`](super::fft::fft_values)) ask of a line transform. The CPU
//! backend has its own FFT (the operand's precision, rustfft and realfft), tested against
//! this one.

use num_complex::Complex64;

type C = Complex64;

/// An unnormalized DFT of one line: `out[k] = sum_j line[j] e^{-2 pi i jk/n}`, or with
/// `e^{+2 pi i jk/n}` when `inverse` (no `1/n`: the caller applies it).
pub trait LineDft {
    /// Transforms `line` into `out` (both of the same length).
    fn transform(&mut self, line: &[C], out: &mut [C], inverse: bool);
}

/// The evaluator's line transform (twiddles cached for the last length seen).
#[derive(Default)]
pub struct ReferenceDft {
    /// [`twiddles`] of the last length.
    twiddles: Vec<C>,
}

impl LineDft for ReferenceDft {
    fn transform(&mut self, line: &[C], out: &mut [C], inverse: bool) {
        let n = line.len();
        if self.twiddles.len() != n {
            self.twiddles = twiddles(n);
        }
        if n.is_power_of_two() {
            radix2(line, out, &self.twiddles, inverse);
        } else if n <= DIRECT_MAX {
            dft(line, out, &self.twiddles, inverse);
        } else {
            bluestein(line, out, inverse);
        }
    }
}

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
