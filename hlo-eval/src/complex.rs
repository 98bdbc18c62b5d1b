//! Elementwise operations on complex arrays, computed in `f64` with `num-complex`'s
//! `Complex64` (a `c64` element is widened, computed, then rounded back to `f32` parts).
//!
//! Three operations keep their own definition where `num-complex` differs from what the
//! evaluator promises: division uses Smith's algorithm (the `/` operator overflows for
//! large divisors, and `fdiv` rounds through a norm), `exp` of a real argument keeps a zero
//! imaginary part exact (`exp(710 + 0i)` is `inf + 0i`, not `inf + NaN i`), and `0^z` is
//! `1` for `z = 0` and `0` otherwise.

use hlo::literal::ArrayData;
use hlo::Opcode;
use num_complex::Complex64;

/// Widens a `c64` element.
fn from_c64(c: [f32; 2]) -> Complex64 {
    Complex64::new(f64::from(c[0]), f64::from(c[1]))
}

/// Rounds to a `c64` element.
fn to_c64(z: Complex64) -> [f32; 2] {
    [z.re as f32, z.im as f32]
}

/// A `c128` element.
fn from_c128(c: [f64; 2]) -> Complex64 {
    Complex64::new(c[0], c[1])
}

/// As a `c128` element.
fn to_c128(z: Complex64) -> [f64; 2] {
    [z.re, z.im]
}

/// `a / b` by Smith's algorithm, which avoids needless overflow; `x / 0` divides each
/// part by zero (giving infinities or NaN).
pub(crate) fn div(a: Complex64, b: Complex64) -> Complex64 {
    let (c, d) = (b.re, b.im);
    if c.abs() >= d.abs() {
        if c == 0.0 && d == 0.0 {
            return Complex64::new(a.re / c, a.im / c);
        }
        let r = d / c;
        let den = c + d * r;
        Complex64::new((a.re + a.im * r) / den, (a.im - a.re * r) / den)
    } else {
        let r = c / d;
        let den = c * r + d;
        Complex64::new((a.re * r + a.im) / den, (a.im * r - a.re) / den)
    }
}

/// `e^z`, exact in the imaginary part for real `z`.
fn exp(z: Complex64) -> Complex64 {
    if z.im == 0.0 {
        Complex64::new(z.re.exp(), z.im)
    } else {
        z.exp()
    }
}

/// `a^b = exp(b * ln(a))`, with `0^0 = 1` and `0^b = 0`.
fn pow(a: Complex64, b: Complex64) -> Complex64 {
    if a.re == 0.0 && a.im == 0.0 {
        let zero_exponent = b.re == 0.0 && b.im == 0.0;
        return Complex64::new(if zero_exponent { 1.0 } else { 0.0 }, 0.0);
    }
    exp(b * a.ln())
}

/// `z / |z|`; zero and NaN magnitudes give `z` itself.
fn sign(z: Complex64) -> Complex64 {
    let m = z.norm();
    if m == 0.0 || m.is_nan() {
        z
    } else {
        z.unscale(m)
    }
}

fn map_complex(data: &ArrayData, f: impl Fn(Complex64) -> Complex64) -> Option<ArrayData> {
    Some(match data {
        ArrayData::C64(v) => ArrayData::C64(v.iter().map(|&c| to_c64(f(from_c64(c)))).collect()),
        ArrayData::C128(v) => {
            ArrayData::C128(v.iter().map(|&c| to_c128(f(from_c128(c)))).collect())
        }
        _ => return None,
    })
}

fn zip_complex(
    a: &ArrayData,
    b: &ArrayData,
    f: impl Fn(Complex64, Complex64) -> Complex64,
) -> Option<ArrayData> {
    Some(match (a, b) {
        (ArrayData::C64(x), ArrayData::C64(y)) => ArrayData::C64(
            x.iter()
                .zip(y)
                .map(|(&p, &q)| to_c64(f(from_c64(p), from_c64(q))))
                .collect(),
        ),
        (ArrayData::C128(x), ArrayData::C128(y)) => ArrayData::C128(
            x.iter()
                .zip(y)
                .map(|(&p, &q)| to_c128(f(from_c128(p), from_c128(q))))
                .collect(),
        ),
        _ => return None,
    })
}

/// Complex elements to a real array through `f` (abs, real, imag).
fn complex_to_real(data: &ArrayData, f: impl Fn(Complex64) -> f64) -> Option<ArrayData> {
    Some(match data {
        ArrayData::C64(v) => ArrayData::F32(v.iter().map(|&c| f(from_c64(c)) as f32).collect()),
        ArrayData::C128(v) => ArrayData::F64(v.iter().map(|&c| f(from_c128(c))).collect()),
        _ => return None,
    })
}

/// A unary op on complex data; `None` when `op` is not defined on complex numbers.
pub(crate) fn unary(op: Opcode, d: &ArrayData) -> Option<ArrayData> {
    let one = Complex64::new(1.0, 0.0);
    match op {
        Opcode::Abs => complex_to_real(d, Complex64::norm),
        Opcode::Real => complex_to_real(d, |c| c.re),
        Opcode::Imag => complex_to_real(d, |c| c.im),
        Opcode::Negate => map_complex(d, |c| -c),
        Opcode::Exp => map_complex(d, exp),
        Opcode::Expm1 => map_complex(d, |c| exp(c) - one),
        Opcode::Log => map_complex(d, Complex64::ln),
        Opcode::Log1p => map_complex(d, |c| (c + one).ln()),
        Opcode::Sqrt => map_complex(d, Complex64::sqrt),
        Opcode::Rsqrt => map_complex(d, |c| div(one, c.sqrt())),
        Opcode::Sign => map_complex(d, sign),
        Opcode::Sin => map_complex(d, Complex64::sin),
        Opcode::Cos => map_complex(d, Complex64::cos),
        Opcode::Tanh => map_complex(d, Complex64::tanh),
        Opcode::Tan => map_complex(d, |c| div(c.sin(), c.cos())),
        Opcode::Copy => Some(d.clone()),
        _ => None,
    }
}

/// A binary op on complex data; `None` when `op` is not defined on complex numbers.
pub(crate) fn binary(op: Opcode, x: &ArrayData, y: &ArrayData) -> Option<ArrayData> {
    match op {
        Opcode::Add => zip_complex(x, y, |a, b| a + b),
        Opcode::Subtract => zip_complex(x, y, |a, b| a - b),
        Opcode::Multiply => zip_complex(x, y, |a, b| a * b),
        Opcode::Divide => zip_complex(x, y, div),
        Opcode::Power => zip_complex(x, y, pow),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(re: f64, im: f64) -> Complex64 {
        Complex64::new(re, im)
    }

    #[test]
    fn division_does_not_overflow_needlessly() {
        assert_eq!(div(c(1.0, 1.0), c(1e300, 1e300)), c(1e-300, 0.0));
        assert_eq!(div(c(4.0, 2.0), c(0.0, 2.0)), c(1.0, -2.0));
        let by_zero = div(c(1.0, -1.0), c(0.0, 0.0));
        assert_eq!((by_zero.re, by_zero.im), (f64::INFINITY, f64::NEG_INFINITY));
    }

    #[test]
    fn exp_and_pow_edge_cases() {
        assert_eq!(exp(c(710.0, 0.0)), c(f64::INFINITY, 0.0));
        assert_eq!(exp(c(0.0, -0.0)).im.to_bits(), (-0.0f64).to_bits());
        assert_eq!(pow(c(0.0, 0.0), c(0.0, 0.0)), c(1.0, 0.0));
        assert_eq!(pow(c(0.0, 0.0), c(2.0, 1.0)), c(0.0, 0.0));
        let p = pow(c(0.0, 1.0), c(2.0, 0.0));
        assert!((p - c(-1.0, 0.0)).norm() < 1e-15, "{p}");
    }

    #[test]
    fn ops_on_arrays() {
        let d = ArrayData::C64(vec![[3.0, 4.0], [0.0, 0.0]]);
        assert_eq!(unary(Opcode::Abs, &d), Some(ArrayData::F32(vec![5.0, 0.0])));
        assert_eq!(
            unary(Opcode::Sign, &d),
            Some(ArrayData::C64(vec![[0.6, 0.8], [0.0, 0.0]]))
        );
        let e = ArrayData::C128(vec![[1.0, 2.0]]);
        assert_eq!(
            binary(Opcode::Multiply, &e, &e),
            Some(ArrayData::C128(vec![[-3.0, 4.0]]))
        );
        assert_eq!(unary(Opcode::Floor, &d), None);
        assert_eq!(binary(Opcode::Maximum, &e, &e), None);
    }
}
