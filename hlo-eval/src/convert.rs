//! `convert`, `bitcast-convert` and `reduce-precision`.
//!
//! Convert semantics (XLA's): float to integer truncates toward zero and saturates at the
//! type's bounds, NaN gives 0; integer to integer wraps; to `pred` is `!= 0` (NaN is
//! true); real to complex has imaginary part 0; complex to real keeps the real part.
//! Rounding to a float type is to nearest, ties to even; `f64` to `bf16` rounds through
//! `f32` as XLA:CPU does, every other conversion rounds once.

use super::data::make;
use super::elementwise::float_values;
use super::scalar::{wrap_to_width, Int, SmallFloat};
use super::EvalError;
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};
use hlo::Literal;

/// Source values in a type-independent form.
enum Values {
    Bool(Vec<bool>),
    Int(Vec<i128>),
    Float(Vec<f64>),
    Complex(Vec<[f64; 2]>),
}

fn ints<T: Int>(v: &[T]) -> Values {
    Values::Int(v.iter().map(|&x| x.to_i128()).collect())
}

fn values(a: &ArrayLiteral) -> Option<Values> {
    let ty = a.element_type();
    Some(match a.data() {
        ArrayData::Pred(v) => Values::Bool(v.clone()),
        ArrayData::S8(v) => ints(v),
        ArrayData::S16(v) => ints(v),
        ArrayData::S32(v) => ints(v),
        ArrayData::S64(v) => ints(v),
        ArrayData::U8(v) => ints(v),
        ArrayData::U16(v) => ints(v),
        ArrayData::U32(v) => ints(v),
        ArrayData::U64(v) => ints(v),
        ArrayData::C64(v) => Values::Complex(
            v.iter()
                .map(|c| [f64::from(c[0]), f64::from(c[1])])
                .collect(),
        ),
        ArrayData::C128(v) => Values::Complex(v.clone()),
        d => Values::Float(float_values(d, ty)?),
    })
}

/// Saturating float to integer of `bits` width (NaN to 0).
fn float_to_int(x: f64, bits: u32, signed: bool) -> i128 {
    if x.is_nan() {
        return 0;
    }
    let (lo, hi) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    (x.trunc() as i128).clamp(lo, hi)
}

fn to_int<T: Int>(v: &Values, bits: u32) -> Vec<T> {
    match v {
        Values::Bool(b) => b.iter().map(|&x| T::from_i128(i128::from(x))).collect(),
        Values::Int(i) => i
            .iter()
            .map(|&x| wrap_to_width(T::from_i128(x), bits))
            .collect(),
        Values::Float(f) => f
            .iter()
            .map(|&x| T::from_i128(float_to_int(x, bits, T::SIGNED)))
            .collect(),
        Values::Complex(c) => c
            .iter()
            .map(|x| T::from_i128(float_to_int(x[0], bits, T::SIGNED)))
            .collect(),
    }
}

fn to_f64s(v: &Values) -> Vec<f64> {
    match v {
        Values::Bool(b) => b.iter().map(|&x| f64::from(u8::from(x))).collect(),
        Values::Int(i) => i.iter().map(|&x| x as f64).collect(),
        Values::Float(f) => f.clone(),
        Values::Complex(c) => c.iter().map(|x| x[0]).collect(),
    }
}

fn to_f32s(v: &Values) -> Vec<f32> {
    match v {
        Values::Int(i) => i.iter().map(|&x| x as f32).collect(),
        _ => to_f64s(v).iter().map(|&x| x as f32).collect(),
    }
}

/// `convert` of `a` to the element type of `shape`.
pub(crate) fn convert(a: &ArrayLiteral, shape: &Shape, what: &str) -> Result<Literal, EvalError> {
    let from = a.element_type();
    let to = shape
        .element_type()
        .ok_or_else(|| EvalError::invalid(what, "convert result must be an array"))?;
    let v =
        values(a).ok_or_else(|| EvalError::invalid(what, format!("cannot convert from {from}")))?;
    let bits = to.bit_width().unwrap_or(8);
    let data = match to {
        ElementType::Pred => ArrayData::Pred(match &v {
            Values::Bool(b) => b.clone(),
            Values::Int(i) => i.iter().map(|&x| x != 0).collect(),
            Values::Float(f) => f.iter().map(|&x| x != 0.0).collect(),
            Values::Complex(c) => c.iter().map(|x| x[0] != 0.0 || x[1] != 0.0).collect(),
        }),
        ElementType::S1 | ElementType::S2 | ElementType::S4 | ElementType::S8 => {
            ArrayData::S8(to_int(&v, bits))
        }
        ElementType::S16 => ArrayData::S16(to_int(&v, bits)),
        ElementType::S32 => ArrayData::S32(to_int(&v, bits)),
        ElementType::S64 => ArrayData::S64(to_int(&v, bits)),
        ElementType::U1 | ElementType::U2 | ElementType::U4 | ElementType::U8 => {
            ArrayData::U8(to_int(&v, bits))
        }
        ElementType::U16 => ArrayData::U16(to_int(&v, bits)),
        ElementType::U32 => ArrayData::U32(to_int(&v, bits)),
        ElementType::U64 => ArrayData::U64(to_int(&v, bits)),
        ElementType::F32 => ArrayData::F32(to_f32s(&v)),
        ElementType::F64 => ArrayData::F64(to_f64s(&v)),
        ElementType::C64 => ArrayData::C64(match &v {
            Values::Complex(c) => c.iter().map(|x| [x[0] as f32, x[1] as f32]).collect(),
            _ => to_f32s(&v).into_iter().map(|x| [x, 0.0]).collect(),
        }),
        ElementType::C128 => ArrayData::C128(match &v {
            Values::Complex(c) => c.clone(),
            _ => to_f64s(&v).into_iter().map(|x| [x, 0.0]).collect(),
        }),
        _ => {
            let c = SmallFloat::of(to)
                .ok_or_else(|| EvalError::invalid(what, format!("cannot convert to {to}")))?;
            let through_f32 = matches!(v, Values::Int(_))
                || (from == ElementType::F64 && to == ElementType::BF16);
            let bits: Vec<u32> = if through_f32 {
                to_f32s(&v).into_iter().map(|x| c.encode_f32(x)).collect()
            } else {
                to_f64s(&v)
                    .into_iter()
                    .map(|x| c.encode_f64_direct(x))
                    .collect()
            };
            if to.bit_width() == Some(16) {
                ArrayData::Bits16(bits.into_iter().map(|b| b as u16).collect())
            } else {
                ArrayData::Bits8(bits.into_iter().map(|b| b as u8).collect())
            }
        }
    };
    make(shape, data, what)
}

/// Little-endian bytes of every element.
pub(crate) fn to_bytes(d: &ArrayData) -> Vec<u8> {
    let mut out = Vec::new();
    match d {
        ArrayData::Pred(v) => out.extend(v.iter().map(|&b| u8::from(b))),
        ArrayData::S8(v) => out.extend(v.iter().map(|&b| b as u8)),
        ArrayData::U8(v) | ArrayData::Bits8(v) => out.extend_from_slice(v),
        ArrayData::S16(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        ArrayData::U16(v) | ArrayData::Bits16(v) => {
            v.iter().for_each(|x| out.extend(x.to_le_bytes()))
        }
        ArrayData::S32(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        ArrayData::U32(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        ArrayData::S64(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        ArrayData::U64(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        ArrayData::F32(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        ArrayData::F64(v) => v.iter().for_each(|x| out.extend(x.to_le_bytes())),
        ArrayData::C64(v) => v.iter().for_each(|c| {
            out.extend(c[0].to_le_bytes());
            out.extend(c[1].to_le_bytes());
        }),
        ArrayData::C128(v) => v.iter().for_each(|c| {
            out.extend(c[0].to_le_bytes());
            out.extend(c[1].to_le_bytes());
        }),
    }
    out
}

/// Elements of type `ty` from little-endian bytes (a whole number of elements).
pub(crate) fn from_bytes(ty: ElementType, b: &[u8]) -> Option<ArrayData> {
    fn chunks<const N: usize, T>(b: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
        b.chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                f(a)
            })
            .collect()
    }
    let w = ty.byte_width()? as usize;
    if w == 0 || !b.len().is_multiple_of(w) {
        return None;
    }
    Some(match ArrayData::new(ty)? {
        ArrayData::Pred(_) => ArrayData::Pred(b.iter().map(|&x| x != 0).collect()),
        ArrayData::S8(_) => ArrayData::S8(b.iter().map(|&x| x as i8).collect()),
        ArrayData::U8(_) => ArrayData::U8(b.to_vec()),
        ArrayData::Bits8(_) => ArrayData::Bits8(b.to_vec()),
        ArrayData::S16(_) => ArrayData::S16(chunks(b, i16::from_le_bytes)),
        ArrayData::U16(_) => ArrayData::U16(chunks(b, u16::from_le_bytes)),
        ArrayData::Bits16(_) => ArrayData::Bits16(chunks(b, u16::from_le_bytes)),
        ArrayData::S32(_) => ArrayData::S32(chunks(b, i32::from_le_bytes)),
        ArrayData::U32(_) => ArrayData::U32(chunks(b, u32::from_le_bytes)),
        ArrayData::S64(_) => ArrayData::S64(chunks(b, i64::from_le_bytes)),
        ArrayData::U64(_) => ArrayData::U64(chunks(b, u64::from_le_bytes)),
        ArrayData::F32(_) => ArrayData::F32(chunks(b, f32::from_le_bytes)),
        ArrayData::F64(_) => ArrayData::F64(chunks(b, f64::from_le_bytes)),
        ArrayData::C64(_) => ArrayData::C64(chunks(b, |a: [u8; 8]| {
            let (r, i) = a.split_at(4);
            [
                f32::from_le_bytes(r.try_into().unwrap_or_default()),
                f32::from_le_bytes(i.try_into().unwrap_or_default()),
            ]
        })),
        ArrayData::C128(_) => ArrayData::C128(chunks(b, |a: [u8; 16]| {
            let (r, i) = a.split_at(8);
            [
                f64::from_le_bytes(r.try_into().unwrap_or_default()),
                f64::from_le_bytes(i.try_into().unwrap_or_default()),
            ]
        })),
    })
}

/// `bitcast-convert`: reinterprets the bits (little-endian element order when the widths
/// differ, as on XLA's CPU).
pub(crate) fn bitcast_convert(
    a: &ArrayLiteral,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let to = shape
        .element_type()
        .ok_or_else(|| EvalError::invalid(what, "bitcast-convert result must be an array"))?;
    let narrow = |t: ElementType| t.bit_width().is_some_and(|b| b < 8);
    if narrow(to) || narrow(a.element_type()) {
        return Err(EvalError::invalid(
            what,
            "bitcast-convert of sub-byte types is not supported",
        ));
    }
    let bytes = to_bytes(a.data());
    let data = from_bytes(to, &bytes)
        .ok_or_else(|| EvalError::invalid(what, "bit widths do not match"))?;
    make(shape, data, what)
}

/// XLA's `ReducePrecision` on the bits of an `f32` or `f64` (mantissa rounded to nearest
/// even, exponent overflow to infinity and underflow to zero; NaN stays NaN).
fn reduce_bits(
    value: u64,
    is_nan: bool,
    total_bits: u32,
    man_bits: u32,
    exp_bits: i64,
    mantissa: i64,
) -> u64 {
    let fp_exp_bits = total_bits - 1 - man_bits;
    let mut v = value;
    if mantissa < i64::from(man_bits) {
        let shift = man_bits - mantissa as u32;
        let last = 1u64 << shift;
        let base_bias = (last >> 1).wrapping_sub(1);
        let x_last = (v & last) >> shift;
        v = v.wrapping_add(x_last + base_bias) & !(last - 1);
        v &= super::scalar::mask(total_bits);
    }
    if exp_bits < i64::from(fp_exp_bits) {
        let sign = 1u64 << (total_bits - 1);
        let exp_mask = ((1u64 << fp_exp_bits) - 1) << man_bits;
        let bias = (1u64 << (fp_exp_bits - 1)) - 1;
        let reduced_bias = (1u64 << (exp_bits.max(1) - 1)) - 1;
        let max_e = bias + reduced_bias;
        let min_e = bias - reduced_bias;
        let e = v & exp_mask;
        if e > max_e << man_bits {
            v = (v & sign) | exp_mask;
        } else if e <= min_e << man_bits {
            v &= sign;
        }
    }
    if is_nan {
        if mantissa > 0 {
            return value;
        }
        return exp_mask_inf(total_bits, man_bits);
    }
    v
}

fn exp_mask_inf(total_bits: u32, man_bits: u32) -> u64 {
    ((1u64 << (total_bits - 1 - man_bits)) - 1) << man_bits
}

/// `reduce-precision(exponent_bits, mantissa_bits)`.
pub(crate) fn reduce_precision(
    a: &ArrayLiteral,
    exp_bits: i64,
    mantissa: i64,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    if exp_bits < 1 || mantissa < 0 {
        return Err(EvalError::invalid(
            what,
            "reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0",
        ));
    }
    let r32 = |x: f32| {
        f32::from_bits(reduce_bits(
            u64::from(x.to_bits()),
            x.is_nan(),
            32,
            23,
            exp_bits,
            mantissa,
        ) as u32)
    };
    let data = match a.data() {
        ArrayData::F32(v) => ArrayData::F32(v.iter().map(|&x| r32(x)).collect()),
        ArrayData::F64(v) => ArrayData::F64(
            v.iter()
                .map(|&x| {
                    f64::from_bits(reduce_bits(
                        x.to_bits(),
                        x.is_nan(),
                        64,
                        52,
                        exp_bits,
                        mantissa,
                    ))
                })
                .collect(),
        ),
        d => {
            let ty = a.element_type();
            let c = SmallFloat::of(ty).ok_or_else(|| {
                EvalError::invalid(what, format!("reduce-precision is not defined on {ty}"))
            })?;
            let vals =
                float_values(d, ty).ok_or_else(|| EvalError::invalid(what, "bad float data"))?;
            let bits: Vec<u32> = vals.iter().map(|&x| c.encode_f32(r32(x as f32))).collect();
            match d {
                ArrayData::Bits16(_) => {
                    ArrayData::Bits16(bits.into_iter().map(|b| b as u16).collect())
                }
                _ => ArrayData::Bits8(bits.into_iter().map(|b| b as u8).collect()),
            }
        }
    };
    make(shape, data, what)
}
