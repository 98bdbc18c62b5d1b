//! Literals: constant values of every element type, stored compactly (one typed vector
//! per literal, elements in row-major order regardless of the layout).

mod display;
mod float_text;
pub mod minifloat;

pub use float_text::{f32_attr_to_string, f32_to_string, f64_to_string, format_g};

use crate::shape::{ElementType, Shape};
use minifloat::{EncodeError, MiniFloat};

/// Element storage of an array literal, in row-major (logical) order.
///
/// Sub-byte integers are stored one per byte (`s1`/`s2`/`s4` in `S8`, `u1`/`u2`/`u4` in
/// `U8`); `f16`/`bf16` as their 16-bit patterns; the `f8` types and `f4e2m1fn` as their
/// bit patterns (`Bits8`). NaN payloads are preserved bit for bit.
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayData {
    /// `pred`.
    Pred(Vec<bool>),
    /// `s1`, `s2`, `s4`, `s8`.
    S8(Vec<i8>),
    /// `s16`.
    S16(Vec<i16>),
    /// `s32`.
    S32(Vec<i32>),
    /// `s64`.
    S64(Vec<i64>),
    /// `u1`, `u2`, `u4`, `u8`.
    U8(Vec<u8>),
    /// `u16`.
    U16(Vec<u16>),
    /// `u32`.
    U32(Vec<u32>),
    /// `u64`.
    U64(Vec<u64>),
    /// `f16` and `bf16` bit patterns.
    Bits16(Vec<u16>),
    /// `f8*` and `f4e2m1fn` bit patterns.
    Bits8(Vec<u8>),
    /// `f32`.
    F32(Vec<f32>),
    /// `f64`.
    F64(Vec<f64>),
    /// `c64` as (real, imaginary).
    C64(Vec<[f32; 2]>),
    /// `c128` as (real, imaginary).
    C128(Vec<[f64; 2]>),
}

/// Why a parsed value does not fit an element type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The value is outside the type's range.
    #[error("value {value} is out of range for {ty}")]
    OutOfRange {
        /// The value as written.
        value: String,
        /// The element type.
        ty: ElementType,
    },
    /// The value's kind (integer, float, complex, bool) does not suit the type.
    #[error("{kind} value is not valid for {ty}")]
    WrongKind {
        /// What was written ("complex", "floating-point", ...).
        kind: &'static str,
        /// The element type.
        ty: ElementType,
    },
    /// A NaN payload the type cannot hold.
    #[error("NaN payload {payload:#x} is not valid for {ty}")]
    BadPayload {
        /// The payload.
        payload: u64,
        /// The element type.
        ty: ElementType,
    },
}

impl ArrayData {
    /// Empty storage for `ty`; `None` for `token`/`opaque`.
    pub fn new(ty: ElementType) -> Option<ArrayData> {
        use ElementType as T;
        Some(match ty {
            T::Pred => ArrayData::Pred(Vec::new()),
            T::S1 | T::S2 | T::S4 | T::S8 => ArrayData::S8(Vec::new()),
            T::S16 => ArrayData::S16(Vec::new()),
            T::S32 => ArrayData::S32(Vec::new()),
            T::S64 => ArrayData::S64(Vec::new()),
            T::U1 | T::U2 | T::U4 | T::U8 => ArrayData::U8(Vec::new()),
            T::U16 => ArrayData::U16(Vec::new()),
            T::U32 => ArrayData::U32(Vec::new()),
            T::U64 => ArrayData::U64(Vec::new()),
            T::F16 | T::BF16 => ArrayData::Bits16(Vec::new()),
            T::F32 => ArrayData::F32(Vec::new()),
            T::F64 => ArrayData::F64(Vec::new()),
            T::C64 => ArrayData::C64(Vec::new()),
            T::C128 => ArrayData::C128(Vec::new()),
            T::Token | T::Opaque => return None,
            _ => ArrayData::Bits8(Vec::new()),
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            ArrayData::Pred(v) => v.len(),
            ArrayData::S8(v) => v.len(),
            ArrayData::S16(v) => v.len(),
            ArrayData::S32(v) => v.len(),
            ArrayData::S64(v) => v.len(),
            ArrayData::U8(v) => v.len(),
            ArrayData::U16(v) => v.len(),
            ArrayData::U32(v) => v.len(),
            ArrayData::U64(v) => v.len(),
            ArrayData::Bits16(v) => v.len(),
            ArrayData::Bits8(v) => v.len(),
            ArrayData::F32(v) => v.len(),
            ArrayData::F64(v) => v.len(),
            ArrayData::C64(v) => v.len(),
            ArrayData::C128(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a `true`/`false` (valid for `pred` only).
    pub fn push_bool(&mut self, ty: ElementType, b: bool) -> Result<(), ValueError> {
        match self {
            ArrayData::Pred(v) => {
                v.push(b);
                Ok(())
            }
            _ => Err(ValueError::WrongKind {
                kind: "boolean",
                ty,
            }),
        }
    }

    /// Appends an integer, checking the range of `ty` (`pred` takes 0 and 1; floating
    /// types take the integer's value).
    pub fn push_int(&mut self, ty: ElementType, x: i128) -> Result<(), ValueError> {
        let out_of_range = || ValueError::OutOfRange {
            value: x.to_string(),
            ty,
        };
        let (lo, hi): (i128, i128) = match ty {
            ElementType::S1 => (-1, 0),
            ElementType::S2 => (-2, 1),
            ElementType::S4 => (-8, 7),
            ElementType::U1 => (0, 1),
            ElementType::U2 => (0, 3),
            ElementType::U4 => (0, 15),
            _ => (i128::MIN, i128::MAX),
        };
        if x < lo || x > hi {
            return Err(out_of_range());
        }
        match self {
            ArrayData::Pred(v) => match x {
                0 | 1 => v.push(x == 1),
                _ => return Err(out_of_range()),
            },
            ArrayData::S8(v) => v.push(x.try_into().map_err(|_| out_of_range())?),
            ArrayData::S16(v) => v.push(x.try_into().map_err(|_| out_of_range())?),
            ArrayData::S32(v) => v.push(x.try_into().map_err(|_| out_of_range())?),
            ArrayData::S64(v) => v.push(x.try_into().map_err(|_| out_of_range())?),
            ArrayData::U8(v) => v.push(x.try_into().map_err(|_| out_of_range())?),
            ArrayData::U16(v) => v.push(x.try_into().map_err(|_| out_of_range())?),
            ArrayData::U32(v) => v.push(x.try_into().map_err(|_| out_of_range())?),
            // XLA reads u64 values through int64 too, so a negative one wraps around
            // (`u64[] constant(-1)` is 2^64-1); every other unsigned type is range-checked.
            ArrayData::U64(v) => v.push(match i64::try_from(x) {
                Ok(neg) if neg < 0 => neg as u64,
                _ => x.try_into().map_err(|_| out_of_range())?,
            }),
            _ => return self.push_float(ty, x as f64, None, &x.to_string()),
        }
        Ok(())
    }

    /// Appends a real floating-point value rounded to `ty` (ties to even); `payload` is the
    /// mantissa of a NaN written `nan(0x...)`. `text` is the value as written, for errors.
    pub fn push_float(
        &mut self,
        ty: ElementType,
        x: f64,
        payload: Option<u64>,
        text: &str,
    ) -> Result<(), ValueError> {
        let out_of_range = || ValueError::OutOfRange {
            value: text.to_string(),
            ty,
        };
        let bad_payload = |p: u64| ValueError::BadPayload { payload: p, ty };
        match self {
            ArrayData::F32(v) => v.push(to_f32(x, payload).map_err(|e| match e {
                EncodeError::BadPayload => bad_payload(payload.unwrap_or(0)),
                _ => out_of_range(),
            })?),
            ArrayData::F64(v) => {
                v.push(to_f64(x, payload).ok_or_else(|| bad_payload(payload.unwrap_or(0)))?)
            }
            ArrayData::Bits16(v) => {
                let bits = encode_small(ty, x, payload).map_err(|e| match e {
                    EncodeError::BadPayload => bad_payload(payload.unwrap_or(0)),
                    _ => out_of_range(),
                })?;
                v.push(bits as u16);
            }
            ArrayData::Bits8(v) => {
                let bits = encode_small(ty, x, payload).map_err(|e| match e {
                    EncodeError::BadPayload => bad_payload(payload.unwrap_or(0)),
                    _ => out_of_range(),
                })?;
                v.push(bits as u8);
            }
            ArrayData::C64(_) | ArrayData::C128(_) => {
                return self.push_complex(ty, [x, 0.0], text);
            }
            _ => {
                return Err(ValueError::WrongKind {
                    kind: "floating-point",
                    ty,
                })
            }
        }
        Ok(())
    }

    /// Appends a complex value `(re, im)`.
    pub fn push_complex(
        &mut self,
        ty: ElementType,
        c: [f64; 2],
        text: &str,
    ) -> Result<(), ValueError> {
        let out_of_range = || ValueError::OutOfRange {
            value: text.to_string(),
            ty,
        };
        match self {
            ArrayData::C64(v) => {
                let re = to_f32(c[0], None).map_err(|_| out_of_range())?;
                let im = to_f32(c[1], None).map_err(|_| out_of_range())?;
                v.push([re, im]);
                Ok(())
            }
            ArrayData::C128(v) => {
                v.push(c);
                Ok(())
            }
            _ => Err(ValueError::WrongKind {
                kind: "complex",
                ty,
            }),
        }
    }
}

/// Rounds to `f32`; finite values beyond `f32::MAX` that round to infinity are errors.
fn to_f32(x: f64, payload: Option<u64>) -> Result<f32, EncodeError> {
    if x.is_nan() {
        let m = payload.unwrap_or(1 << 22);
        if m == 0 || m > 0x7f_ffff {
            return Err(EncodeError::BadPayload);
        }
        let sign = if x.is_sign_negative() { 0x8000_0000 } else { 0 };
        return Ok(f32::from_bits(sign | 0x7f80_0000 | m as u32));
    }
    let y = x as f32;
    if y.is_infinite() && x.is_finite() {
        return Err(EncodeError::Overflow);
    }
    Ok(y)
}

fn to_f64(x: f64, payload: Option<u64>) -> Option<f64> {
    if x.is_nan() {
        let m = payload.unwrap_or(1 << 51);
        if m == 0 || m >= 1 << 52 {
            return None;
        }
        let sign = if x.is_sign_negative() { 1 << 63 } else { 0 };
        return Some(f64::from_bits(sign | 0x7ff0_0000_0000_0000 | m));
    }
    Some(x)
}

fn encode_small(ty: ElementType, x: f64, payload: Option<u64>) -> Result<u32, EncodeError> {
    let fmt = MiniFloat::of(ty).ok_or(EncodeError::NotRepresentable)?;
    let payload = match payload {
        Some(p) => Some(u32::try_from(p).map_err(|_| EncodeError::BadPayload)?),
        None => None,
    };
    // f16 and bf16 convert through f32 as Eigen does (double -> float -> half), rounded
    // by the `half` crate; NaN (with its payload) and infinities keep MiniFloat's encoding.
    if x.is_finite() {
        let bits = match ty {
            ElementType::F16 => Some(half::f16::from_f32(x as f32))
                .filter(|h| h.is_finite())
                .map(half::f16::to_bits),
            ElementType::BF16 => Some(half::bf16::from_f32(x as f32))
                .filter(|h| h.is_finite())
                .map(half::bf16::to_bits),
            _ => return fmt.encode(x, payload),
        };
        return bits.map(u32::from).ok_or(EncodeError::Overflow);
    }
    fmt.encode(x, payload)
}

/// An array literal: an array shape and its elements.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayLiteral {
    shape: Shape,
    data: ArrayData,
}

impl ArrayLiteral {
    /// Pairs a shape with its data; `None` when the shape is not an array of a data type,
    /// when the storage kind does not suit the element type, or when the element count
    /// differs.
    pub fn new(shape: Shape, data: ArrayData) -> Option<ArrayLiteral> {
        let ty = shape.element_type()?;
        let expected = ArrayData::new(ty)?;
        if std::mem::discriminant(&expected) != std::mem::discriminant(&data) {
            return None;
        }
        let n = shape.element_count().ok()?;
        if usize::try_from(n).ok()? != data.len() {
            return None;
        }
        Some(ArrayLiteral { shape, data })
    }

    /// The array shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.shape.element_type().unwrap_or(ElementType::F32)
    }

    /// The elements, row-major.
    pub fn data(&self) -> &ArrayData {
        &self.data
    }

    /// Element `i` (row-major) as an `f64`, for real and integral types and `pred`
    /// (complex values give their real part).
    pub fn get_f64(&self, i: usize) -> Option<f64> {
        Some(match &self.data {
            ArrayData::Pred(v) => f64::from(u8::from(*v.get(i)?)),
            ArrayData::S8(v) => f64::from(*v.get(i)?),
            ArrayData::S16(v) => f64::from(*v.get(i)?),
            ArrayData::S32(v) => f64::from(*v.get(i)?),
            ArrayData::S64(v) => *v.get(i)? as f64,
            ArrayData::U8(v) => f64::from(*v.get(i)?),
            ArrayData::U16(v) => f64::from(*v.get(i)?),
            ArrayData::U32(v) => f64::from(*v.get(i)?),
            ArrayData::U64(v) => *v.get(i)? as f64,
            ArrayData::Bits16(v) => {
                let bits = *v.get(i)?;
                match self.element_type() {
                    ElementType::F16 => half::f16::from_bits(bits).to_f64(),
                    ElementType::BF16 => half::bf16::from_bits(bits).to_f64(),
                    ty => MiniFloat::of(ty)?.decode(u32::from(bits)),
                }
            }
            ArrayData::Bits8(v) => {
                MiniFloat::of(self.element_type())?.decode(u32::from(*v.get(i)?))
            }
            ArrayData::F32(v) => f64::from(*v.get(i)?),
            ArrayData::F64(v) => *v.get(i)?,
            ArrayData::C64(v) => f64::from(v.get(i)?[0]),
            ArrayData::C128(v) => v.get(i)?[0],
        })
    }
}

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// An array (or scalar) with all its values.
    Array(ArrayLiteral),
    /// A tuple of literals.
    Tuple(Vec<Literal>),
    /// A literal whose values the text elided (`{...}`): only its shape is known.
    Elided(Shape),
}

impl Literal {
    /// The literal's shape.
    pub fn shape(&self) -> Shape {
        match self {
            Literal::Array(a) => a.shape.clone(),
            Literal::Tuple(t) => Shape::tuple(t.iter().map(Literal::shape).collect()),
            Literal::Elided(s) => s.clone(),
        }
    }

    /// True when some values are unknown (the literal or one of its elements is elided).
    pub fn is_elided(&self) -> bool {
        match self {
            Literal::Array(_) => false,
            Literal::Tuple(t) => t.iter().any(Literal::is_elided),
            Literal::Elided(_) => true,
        }
    }

    /// The array literal, if this is one.
    pub fn as_array(&self) -> Option<&ArrayLiteral> {
        match self {
            Literal::Array(a) => Some(a),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked() {
        let mut d = ArrayData::new(ElementType::S4).unwrap();
        assert!(d.push_int(ElementType::S4, 7).is_ok());
        assert!(d.push_int(ElementType::S4, 8).is_err());
        let mut d = ArrayData::new(ElementType::U64).unwrap();
        assert!(d.push_int(ElementType::U64, u64::MAX as i128).is_ok());
        assert!(d.push_int(ElementType::U64, -1).is_ok());
        assert!(d
            .push_int(ElementType::U64, i128::from(i64::MIN) - 1)
            .is_err());
        let mut d = ArrayData::new(ElementType::F32).unwrap();
        assert!(d.push_float(ElementType::F32, 1e39, None, "1e39").is_err());
        assert!(d
            .push_float(ElementType::F32, f64::INFINITY, None, "inf")
            .is_ok());
        let mut d = ArrayData::new(ElementType::Pred).unwrap();
        assert!(d.push_int(ElementType::Pred, 2).is_err());
        assert!(d.push_float(ElementType::Pred, 1.0, None, "1.0").is_err());
    }

    #[test]
    fn array_literal_checks_count() {
        let s = Shape::array(ElementType::S32, vec![2]);
        assert!(ArrayLiteral::new(s.clone(), ArrayData::S32(vec![1])).is_none());
        assert!(ArrayLiteral::new(s.clone(), ArrayData::F32(vec![1.0, 2.0])).is_none());
        let a = ArrayLiteral::new(s, ArrayData::S32(vec![1, 2])).unwrap();
        assert_eq!(a.get_f64(1), Some(2.0));
    }
}
