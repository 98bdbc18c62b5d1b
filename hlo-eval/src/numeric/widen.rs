//! Arithmetic domains of the numeric kernels (dot, convolution, fft, linear algebra):
//! operands are widened into one domain (`i64` with wrapping, `f32`, `f64`, complex),
//! computed there (complex numbers as `num-complex` values), then rounded to the result
//! type. `bf16`/`f16` accumulate in `f32` and
//! round once at the end, as XLA:CPU does.

use super::KernelError;
use hlo::literal::minifloat::MiniFloat;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};
use hlo::Literal;
use num_complex::{Complex32, Complex64};

/// The type arithmetic is done in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Domain {
    /// Integers and `pred`, wrapping (64-bit, truncated to the result width).
    Int,
    /// `f32` (also for `f16`, `bf16`, `f8`).
    F32,
    /// `f64`.
    F64,
    /// `c64`.
    C64,
    /// `c128`.
    C128,
}

impl Domain {
    /// The smallest domain holding every type of `types`.
    pub(crate) fn of(types: &[ElementType]) -> Domain {
        let complex = types.iter().any(|t| t.is_complex());
        let wide = types
            .iter()
            .any(|t| matches!(t, ElementType::F64 | ElementType::C128));
        let float = types.iter().any(|t| t.is_float());
        match (complex, wide, float) {
            (true, true, _) => Domain::C128,
            (true, false, _) => Domain::C64,
            (false, true, _) => Domain::F64,
            (false, false, true) => Domain::F32,
            _ => Domain::Int,
        }
    }
}

/// Values converted into a [`Domain`].
#[derive(Clone, Debug)]
pub(crate) enum Buf {
    /// [`Domain::Int`].
    Int(Vec<i64>),
    /// [`Domain::F32`].
    F32(Vec<f32>),
    /// [`Domain::F64`].
    F64(Vec<f64>),
    /// [`Domain::C64`].
    C64(Vec<Complex32>),
    /// [`Domain::C128`].
    C128(Vec<Complex64>),
}

/// Arithmetic the generic kernels need.
pub(crate) trait Num: Copy + Default + PartialEq + std::fmt::Debug {
    /// `self + o` (wrapping for integers).
    fn add(self, o: Self) -> Self;
    /// `self * o` (wrapping for integers).
    fn mul(self, o: Self) -> Self;
}

impl Num for i64 {
    fn add(self, o: i64) -> i64 {
        self.wrapping_add(o)
    }
    fn mul(self, o: i64) -> i64 {
        self.wrapping_mul(o)
    }
}

impl Num for f32 {
    fn add(self, o: f32) -> f32 {
        self + o
    }
    fn mul(self, o: f32) -> f32 {
        self * o
    }
}

impl Num for f64 {
    fn add(self, o: f64) -> f64 {
        self + o
    }
    fn mul(self, o: f64) -> f64 {
        self * o
    }
}

impl Num for Complex32 {
    fn add(self, o: Complex32) -> Complex32 {
        self + o
    }
    fn mul(self, o: Complex32) -> Complex32 {
        self * o
    }
}

impl Num for Complex64 {
    fn add(self, o: Complex64) -> Complex64 {
        self + o
    }
    fn mul(self, o: Complex64) -> Complex64 {
        self * o
    }
}

/// A `c64` element as a complex number.
fn c64(c: [f32; 2]) -> Complex32 {
    Complex32::new(c[0], c[1])
}

/// A `c128` element as a complex number.
pub(crate) fn c128(c: [f64; 2]) -> Complex64 {
    Complex64::new(c[0], c[1])
}

/// `bf16` bits to `f32` (exact).
pub(crate) fn bf16_to_f32(b: u16) -> f32 {
    half::bf16::from_bits(b).to_f32()
}

/// `f32` to `bf16` bits, rounding to nearest even; NaN stays NaN (quieted).
pub(crate) fn f32_to_bf16(x: f32) -> u16 {
    half::bf16::from_f32(x).to_bits()
}

/// A small float's bits to `f64` (exact; `f16`/`bf16` through the `half` crate).
pub(crate) fn small_to_f64(ty: ElementType, bits: u32) -> f64 {
    match ty {
        ElementType::F16 => half::f16::from_bits(bits as u16).to_f64(),
        ElementType::BF16 => f64::from(bf16_to_f32(bits as u16)),
        _ => MiniFloat::of(ty).map_or(f64::NAN, |m| m.decode(bits)),
    }
}

/// `f64` to a small float's bits, rounding to nearest even; values too large become
/// infinity (or NaN for formats without infinity), as XLA's convert does. `bf16` rounds
/// through `f32` as XLA does; `f16` rounds once from `f64` with [`MiniFloat`], because
/// `half`'s `from_f64` is not one correct rounding.
pub(crate) fn f64_to_small(ty: ElementType, x: f64) -> u32 {
    if ty == ElementType::BF16 {
        return u32::from(f32_to_bf16(x as f32));
    }
    let Some(m) = MiniFloat::of(ty) else {
        return 0;
    };
    match m.encode(x, None) {
        Ok(b) => b,
        Err(_) => {
            // Overflow or a value the format lacks: infinity of the right sign if it
            // exists, NaN otherwise.
            let inf = if x.is_sign_negative() {
                -f64::INFINITY
            } else {
                f64::INFINITY
            };
            m.encode(inf, None)
                .or_else(|_| m.encode(f64::NAN, None))
                .unwrap_or(0)
        }
    }
}

/// Converts the values of `a` into `domain`.
pub(crate) fn load(domain: Domain, a: &ArrayLiteral, what: &str) -> Result<Buf, KernelError> {
    let ty = a.element_type();
    macro_rules! conv {
        ($conv:expr) => {
            match a.data() {
                ArrayData::Pred(v) => v
                    .iter()
                    .map(|&x| $conv(f64::from(u8::from(x)), i64::from(x)))
                    .collect(),
                ArrayData::S8(v) => v
                    .iter()
                    .map(|&x| $conv(f64::from(x), i64::from(x)))
                    .collect(),
                ArrayData::S16(v) => v
                    .iter()
                    .map(|&x| $conv(f64::from(x), i64::from(x)))
                    .collect(),
                ArrayData::S32(v) => v
                    .iter()
                    .map(|&x| $conv(f64::from(x), i64::from(x)))
                    .collect(),
                ArrayData::S64(v) => v.iter().map(|&x| $conv(x as f64, x)).collect(),
                ArrayData::U8(v) => v
                    .iter()
                    .map(|&x| $conv(f64::from(x), i64::from(x)))
                    .collect(),
                ArrayData::U16(v) => v
                    .iter()
                    .map(|&x| $conv(f64::from(x), i64::from(x)))
                    .collect(),
                ArrayData::U32(v) => v
                    .iter()
                    .map(|&x| $conv(f64::from(x), i64::from(x)))
                    .collect(),
                ArrayData::U64(v) => v.iter().map(|&x| $conv(x as f64, x as i64)).collect(),
                ArrayData::Bits16(v) => v
                    .iter()
                    .map(|&x| {
                        let f = small_to_f64(ty, u32::from(x));
                        $conv(f, f as i64)
                    })
                    .collect(),
                ArrayData::Bits8(v) => v
                    .iter()
                    .map(|&x| {
                        let f = small_to_f64(ty, u32::from(x));
                        $conv(f, f as i64)
                    })
                    .collect(),
                ArrayData::F32(v) => v.iter().map(|&x| $conv(f64::from(x), x as i64)).collect(),
                ArrayData::F64(v) => v.iter().map(|&x| $conv(x, x as i64)).collect(),
                ArrayData::C64(_) | ArrayData::C128(_) => {
                    return Err(KernelError::Invalid(format!(
                        "{what}: cannot convert complex {ty} to a real type"
                    )))
                }
            }
        };
    }
    Ok(match domain {
        Domain::Int => match a.data() {
            ArrayData::F32(_) | ArrayData::F64(_) | ArrayData::Bits16(_) | ArrayData::Bits8(_) => {
                return Err(KernelError::Invalid(format!(
                    "{what}: floating-point {ty} operand in an integer computation"
                )))
            }
            _ => Buf::Int(conv!(|_f: f64, i: i64| i)),
        },
        // f64 -> f32 rounds once; narrower values are exact in f64.
        Domain::F32 => match a.data() {
            ArrayData::F32(v) => Buf::F32(v.clone()),
            ArrayData::Bits16(v) if ty == ElementType::BF16 => {
                Buf::F32(v.iter().map(|&b| bf16_to_f32(b)).collect())
            }
            _ => Buf::F32(conv!(|f: f64, _i: i64| f as f32)),
        },
        Domain::F64 => Buf::F64(conv!(|f: f64, _i: i64| f)),
        Domain::C64 => match a.data() {
            ArrayData::C64(v) => Buf::C64(v.iter().map(|&c| c64(c)).collect()),
            ArrayData::C128(v) => Buf::C64(
                v.iter()
                    .map(|c| Complex32::new(c[0] as f32, c[1] as f32))
                    .collect(),
            ),
            _ => Buf::C64(conv!(|f: f64, _i: i64| Complex32::new(f as f32, 0.0))),
        },
        Domain::C128 => match a.data() {
            ArrayData::C64(v) => Buf::C128(
                v.iter()
                    .map(|c| Complex64::new(f64::from(c[0]), f64::from(c[1])))
                    .collect(),
            ),
            ArrayData::C128(v) => Buf::C128(v.iter().map(|&c| c128(c)).collect()),
            _ => Buf::C128(conv!(|f: f64, _i: i64| Complex64::new(f, 0.0))),
        },
    })
}

/// Rounds or wraps computed values to the element type of `shape` and builds the literal.
pub(crate) fn store(buf: Buf, shape: &Shape, what: &str) -> Result<Literal, KernelError> {
    let ty = super::util::elem_type(shape, what)?;
    let data = match buf {
        Buf::Int(v) => from_ints(ty, &v),
        Buf::F32(v) => match ty {
            ElementType::F32 => Some(ArrayData::F32(v)),
            ElementType::BF16 => Some(ArrayData::Bits16(
                v.iter().map(|&x| f32_to_bf16(x)).collect(),
            )),
            _ => from_reals(ty, v.into_iter().map(f64::from)),
        },
        Buf::F64(v) => match ty {
            ElementType::F64 => Some(ArrayData::F64(v)),
            _ => from_reals(ty, v.into_iter()),
        },
        Buf::C64(v) => match ty {
            ElementType::C64 => Some(ArrayData::C64(v.iter().map(|c| [c.re, c.im]).collect())),
            ElementType::C128 => Some(ArrayData::C128(
                v.iter()
                    .map(|c| [f64::from(c.re), f64::from(c.im)])
                    .collect(),
            )),
            _ => None,
        },
        Buf::C128(v) => match ty {
            ElementType::C128 => Some(ArrayData::C128(v.iter().map(|c| [c.re, c.im]).collect())),
            ElementType::C64 => Some(ArrayData::C64(
                v.iter().map(|c| [c.re as f32, c.im as f32]).collect(),
            )),
            _ => None,
        },
    };
    let data = data.ok_or_else(|| {
        KernelError::Unsupported(format!("{what}: cannot produce a result of type {ty}"))
    })?;
    super::util::make_array(shape, data, what)
}

fn from_ints(ty: ElementType, v: &[i64]) -> Option<ArrayData> {
    use ElementType as T;
    Some(match ty {
        T::Pred => ArrayData::Pred(v.iter().map(|&x| x != 0).collect()),
        T::S1 | T::S2 | T::S4 | T::S8 => {
            let bits = ty.bit_width()?;
            let shift = 64 - bits;
            ArrayData::S8(v.iter().map(|&x| ((x << shift) >> shift) as i8).collect())
        }
        T::S16 => ArrayData::S16(v.iter().map(|&x| x as i16).collect()),
        T::S32 => ArrayData::S32(v.iter().map(|&x| x as i32).collect()),
        T::S64 => ArrayData::S64(v.to_vec()),
        T::U1 | T::U2 | T::U4 | T::U8 => {
            let mask = (1u16 << ty.bit_width()?) - 1;
            ArrayData::U8(v.iter().map(|&x| (x as u16 & mask) as u8).collect())
        }
        T::U16 => ArrayData::U16(v.iter().map(|&x| x as u16).collect()),
        T::U32 => ArrayData::U32(v.iter().map(|&x| x as u32).collect()),
        T::U64 => ArrayData::U64(v.iter().map(|&x| x as u64).collect()),
        _ => return from_reals(ty, v.iter().map(|&x| x as f64)),
    })
}

fn from_reals(ty: ElementType, v: impl Iterator<Item = f64>) -> Option<ArrayData> {
    use ElementType as T;
    Some(match ty {
        T::F32 => ArrayData::F32(v.map(|x| x as f32).collect()),
        T::F64 => ArrayData::F64(v.collect()),
        T::C64 => ArrayData::C64(v.map(|x| [x as f32, 0.0]).collect()),
        T::C128 => ArrayData::C128(v.map(|x| [x, 0.0]).collect()),
        T::F16 | T::BF16 => ArrayData::Bits16(v.map(|x| f64_to_small(ty, x) as u16).collect()),
        T::Pred => ArrayData::Pred(v.map(|x| x != 0.0).collect()),
        T::S8 => ArrayData::S8(v.map(|x| x as i8).collect()),
        T::S16 => ArrayData::S16(v.map(|x| x as i16).collect()),
        T::S32 => ArrayData::S32(v.map(|x| x as i32).collect()),
        T::S64 => ArrayData::S64(v.map(|x| x as i64).collect()),
        T::U8 => ArrayData::U8(v.map(|x| x as u8).collect()),
        T::U16 => ArrayData::U16(v.map(|x| x as u16).collect()),
        T::U32 => ArrayData::U32(v.map(|x| x as u32).collect()),
        T::U64 => ArrayData::U64(v.map(|x| x as u64).collect()),
        _ if MiniFloat::of(ty).is_some() => {
            ArrayData::Bits8(v.map(|x| f64_to_small(ty, x) as u8).collect())
        }
        _ => return None,
    })
}

impl Buf {
    /// The values at `indices`, in that order.
    pub(crate) fn pick(&self, indices: &[usize]) -> Buf {
        fn p<T: Copy>(v: &[T], idx: &[usize]) -> Vec<T> {
            idx.iter().map(|&i| v[i]).collect()
        }
        match self {
            Buf::Int(v) => Buf::Int(p(v, indices)),
            Buf::F32(v) => Buf::F32(p(v, indices)),
            Buf::F64(v) => Buf::F64(p(v, indices)),
            Buf::C64(v) => Buf::C64(p(v, indices)),
            Buf::C128(v) => Buf::C128(p(v, indices)),
        }
    }
}

/// Flat row-major offsets into an array of `dims`, listed in the order of a walk over
/// the dimensions `perm` (outermost first): the gather that transposes by `perm`.
pub(crate) fn permuted_offsets(dims: &[usize], perm: &[usize]) -> Vec<usize> {
    let st = super::util::strides(dims);
    let pdims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let pst: Vec<usize> = perm.iter().map(|&p| st[p]).collect();
    let n = super::util::product(&pdims);
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut idx = vec![0usize; perm.len()];
    let mut off = 0usize;
    loop {
        out.push(off);
        // Odometer step, keeping the offset incrementally.
        let mut k = perm.len();
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            idx[k] += 1;
            off += pst[k];
            if idx[k] < pdims[k] {
                break;
            }
            off -= pst[k] * idx[k];
            idx[k] = 0;
        }
    }
}

/// Applies a generic computation to the buffers of one domain: `$body` is evaluated with
/// `$v` bound to each buffer's vector, all of the same element type.
macro_rules! with_bufs {
    (($($b:expr => $v:ident),+), $body:expr, $wrap:ident) => {
        match ($($b,)+) {
            ($(Buf::Int($v),)+) => Buf::Int($body),
            ($(Buf::F32($v),)+) => Buf::F32($body),
            ($(Buf::F64($v),)+) => Buf::F64($body),
            ($(Buf::C64($v),)+) => Buf::C64($body),
            ($(Buf::C128($v),)+) => Buf::C128($body),
            #[allow(unreachable_patterns)]
            _ => return Err(KernelError::Invalid(concat!(stringify!($wrap), ": operands in different domains").into())),
        }
    };
}
pub(crate) use with_bufs;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
        assert_eq!(f32_to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        // 1 + 3 * 2^-8 is halfway: ties to even (1 + 2^-6).
        assert_eq!(f32_to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f80);
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
    }

    #[test]
    fn f16_overflow_is_infinity() {
        assert_eq!(f64_to_small(ElementType::F16, 1e6), 0x7c00);
        assert_eq!(f64_to_small(ElementType::F16, -1e6), 0xfc00);
        assert_eq!(f64_to_small(ElementType::F16, 1.0), 0x3c00);
    }

    #[test]
    fn narrow_ints_wrap() {
        let d = from_ints(ElementType::S4, &[7, 8, -9]).unwrap();
        assert_eq!(d, ArrayData::S8(vec![7, -8, 7]));
        let d = from_ints(ElementType::U8, &[256, -1]).unwrap();
        assert_eq!(d, ArrayData::U8(vec![0, 255]));
    }
}
