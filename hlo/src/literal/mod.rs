//! Literals: constant values of every element type, stored compactly (one typed vector
//! per literal, elements in row-major order regardless of the layout).

mod display;
mod float_text;
pub mod minifloat;

pub use display::SPLAT_PRINT_LIMIT;
pub use float_text::{f32_attr_to_string, f32_to_string, f64_to_string, format_g};

use std::sync::OnceLock;

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

    /// `n` copies of the first element (empty storage when there is none or `n` is 0).
    pub fn repeat_first(&self, n: usize) -> ArrayData {
        fn rep<T: Copy>(v: &[T], n: usize) -> Vec<T> {
            v.first().map(|&x| vec![x; n]).unwrap_or_default()
        }
        match self {
            ArrayData::Pred(v) => ArrayData::Pred(rep(v, n)),
            ArrayData::S8(v) => ArrayData::S8(rep(v, n)),
            ArrayData::S16(v) => ArrayData::S16(rep(v, n)),
            ArrayData::S32(v) => ArrayData::S32(rep(v, n)),
            ArrayData::S64(v) => ArrayData::S64(rep(v, n)),
            ArrayData::U8(v) => ArrayData::U8(rep(v, n)),
            ArrayData::U16(v) => ArrayData::U16(rep(v, n)),
            ArrayData::U32(v) => ArrayData::U32(rep(v, n)),
            ArrayData::U64(v) => ArrayData::U64(rep(v, n)),
            ArrayData::Bits16(v) => ArrayData::Bits16(rep(v, n)),
            ArrayData::Bits8(v) => ArrayData::Bits8(rep(v, n)),
            ArrayData::F32(v) => ArrayData::F32(rep(v, n)),
            ArrayData::F64(v) => ArrayData::F64(rep(v, n)),
            ArrayData::C64(v) => ArrayData::C64(rep(v, n)),
            ArrayData::C128(v) => ArrayData::C128(rep(v, n)),
        }
    }

    /// True when `one` (of the same kind) holds one value and every element here equals
    /// it, compared as `==` compares the storage (so NaN equals nothing, as for
    /// `ArrayData`'s own `PartialEq`).
    fn all_equal_to_first_of(&self, one: &ArrayData) -> bool {
        fn all<T: PartialEq>(v: &[T], w: &[T]) -> bool {
            w.len() == 1 && v.iter().all(|x| *x == w[0])
        }
        match (self, one) {
            (ArrayData::Pred(v), ArrayData::Pred(w)) => all(v, w),
            (ArrayData::S8(v), ArrayData::S8(w)) => all(v, w),
            (ArrayData::S16(v), ArrayData::S16(w)) => all(v, w),
            (ArrayData::S32(v), ArrayData::S32(w)) => all(v, w),
            (ArrayData::S64(v), ArrayData::S64(w)) => all(v, w),
            (ArrayData::U8(v), ArrayData::U8(w)) => all(v, w),
            (ArrayData::U16(v), ArrayData::U16(w)) => all(v, w),
            (ArrayData::U32(v), ArrayData::U32(w)) => all(v, w),
            (ArrayData::U64(v), ArrayData::U64(w)) => all(v, w),
            (ArrayData::Bits16(v), ArrayData::Bits16(w)) => all(v, w),
            (ArrayData::Bits8(v), ArrayData::Bits8(w)) => all(v, w),
            (ArrayData::F32(v), ArrayData::F32(w)) => all(v, w),
            (ArrayData::F64(v), ArrayData::F64(w)) => all(v, w),
            (ArrayData::C64(v), ArrayData::C64(w)) => all(v, w),
            (ArrayData::C128(v), ArrayData::C128(w)) => all(v, w),
            _ => false,
        }
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
///
/// A *splat* literal (XLA's `f32[17,22] constant(1)`: one value for every element) stores
/// its one value only; [`ArrayLiteral::data`] materializes the elements on first use and
/// keeps them, so code that needs no element list ([`ArrayLiteral::is_splat`],
/// [`ArrayLiteral::splat_value`], printing, [`ArrayLiteral::get_f64`]) allocates nothing
/// for a huge shape.
#[derive(Clone, Debug)]
pub struct ArrayLiteral {
    shape: Shape,
    /// Every element (row-major), or the one value of a splat.
    data: ArrayData,
    /// Whether `data` is the one value of every element.
    splat: bool,
    /// The materialized elements of a splat, filled by the first [`ArrayLiteral::data`].
    expanded: OnceLock<ArrayData>,
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
        Some(ArrayLiteral {
            shape,
            data,
            splat: false,
            expanded: OnceLock::new(),
        })
    }

    /// A literal of `shape` whose every element is the one value in `value` (XLA's
    /// scalar literal for a non-scalar shape, `f32[2,3] constant(1)`), stored compactly:
    /// nothing is allocated for the elements. `None` when the shape is not an array of a
    /// data type, when its element count overflows, when the storage kind does not suit
    /// the element type, or when `value` does not hold exactly one value.
    pub fn splat(shape: Shape, value: ArrayData) -> Option<ArrayLiteral> {
        let ty = shape.element_type()?;
        let expected = ArrayData::new(ty)?;
        if std::mem::discriminant(&expected) != std::mem::discriminant(&value) || value.len() != 1 {
            return None;
        }
        usize::try_from(shape.element_count().ok()?).ok()?;
        Some(ArrayLiteral {
            shape,
            data: value,
            splat: true,
            expanded: OnceLock::new(),
        })
    }

    /// True when this literal was written as one value for every element (see
    /// [`ArrayLiteral::splat`]).
    pub fn is_splat(&self) -> bool {
        self.splat
    }

    /// The one value of a splat literal (storage holding one element); `None` for a
    /// literal that lists its elements.
    pub fn splat_value(&self) -> Option<&ArrayData> {
        self.splat.then_some(&self.data)
    }

    /// The number of elements (of the shape, whether or not they are stored).
    pub fn element_count(&self) -> usize {
        self.shape
            .element_count()
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
    }

    /// The same values with every element stored (a clone for a literal that is not a
    /// splat). This allocates the whole array: callers bound its size first.
    pub fn expanded(&self) -> ArrayLiteral {
        let data = match self.expanded.get() {
            Some(d) => d.clone(),
            None if self.splat => self.data.repeat_first(self.element_count()),
            None => self.data.clone(),
        };
        ArrayLiteral {
            shape: self.shape.clone(),
            data,
            splat: false,
            expanded: OnceLock::new(),
        }
    }

    /// The array shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.shape.element_type().unwrap_or(ElementType::F32)
    }

    /// The elements, row-major. A splat literal materializes its elements on the first
    /// call (allocating the whole array once; see [`ArrayLiteral::splat_value`] to avoid
    /// that).
    pub fn data(&self) -> &ArrayData {
        if !self.splat {
            return &self.data;
        }
        self.expanded
            .get_or_init(|| self.data.repeat_first(self.element_count()))
    }

    /// Element `i` (row-major) as an `f64`, for real and integral types and `pred`
    /// (complex values give their real part).
    pub fn get_f64(&self, i: usize) -> Option<f64> {
        let i = if self.splat {
            if i >= self.element_count() {
                return None;
            }
            0
        } else {
            i
        };
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

impl PartialEq for ArrayLiteral {
    /// Equal shapes and equal elements, however they are stored (a splat equals the
    /// literal listing its value for every element).
    fn eq(&self, other: &ArrayLiteral) -> bool {
        if self.shape != other.shape {
            return false;
        }
        match (self.splat, other.splat) {
            (false, false) => self.data == other.data,
            (true, true) => self.data == other.data || self.element_count() == 0,
            (true, false) => other.data.all_equal_to_first_of(&self.data),
            (false, true) => self.data.all_equal_to_first_of(&other.data),
        }
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

    /// The same values with every splat array (see [`ArrayLiteral::splat`]) stored
    /// element by element, tuples element-wise. This allocates every element: callers
    /// bound the size first.
    pub fn expanded(&self) -> Literal {
        match self {
            Literal::Array(a) if a.is_splat() => Literal::Array(a.expanded()),
            Literal::Tuple(t) => Literal::Tuple(t.iter().map(Literal::expanded).collect()),
            other => other.clone(),
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
    fn splats_store_one_value() {
        // 10^18 elements: nothing is allocated for them.
        let huge = Shape::array(ElementType::F32, vec![1_000_000; 3]);
        let a = ArrayLiteral::splat(huge.clone(), ArrayData::F32(vec![2.5])).unwrap();
        assert!(a.is_splat());
        assert_eq!(a.splat_value(), Some(&ArrayData::F32(vec![2.5])));
        assert_eq!(a.get_f64(0), Some(2.5));
        assert_eq!(a.get_f64(999_999_999_999_999_999), Some(2.5));
        assert_eq!(a.get_f64(1_000_000_000_000_000_000), None);
        assert_eq!(Literal::Array(a.clone()).to_string(), "2.5");
        assert_eq!(a.clone(), a);
        // One value exactly; kinds must suit the type.
        assert!(ArrayLiteral::splat(huge.clone(), ArrayData::F32(vec![])).is_none());
        assert!(ArrayLiteral::splat(huge.clone(), ArrayData::F32(vec![1.0, 2.0])).is_none());
        assert!(ArrayLiteral::splat(huge, ArrayData::S32(vec![1])).is_none());
    }

    #[test]
    fn splats_equal_their_elements() {
        let s = Shape::array(ElementType::S32, vec![2, 2]);
        let splat = ArrayLiteral::splat(s.clone(), ArrayData::S32(vec![7])).unwrap();
        let full = ArrayLiteral::new(s.clone(), ArrayData::S32(vec![7; 4])).unwrap();
        let other = ArrayLiteral::new(s.clone(), ArrayData::S32(vec![7, 7, 7, 8])).unwrap();
        assert_eq!(splat, full);
        assert_eq!(full, splat);
        assert_ne!(splat, other);
        assert_eq!(splat.data(), full.data());
        let expanded = splat.expanded();
        assert!(!expanded.is_splat());
        assert_eq!(expanded.data(), &ArrayData::S32(vec![7; 4]));
        let empty = Shape::array(ElementType::S32, vec![0, 3]);
        let a = ArrayLiteral::splat(empty.clone(), ArrayData::S32(vec![1])).unwrap();
        let b = ArrayLiteral::splat(empty, ArrayData::S32(vec![2])).unwrap();
        assert_eq!(a, b);
        assert!(a.data().is_empty());
    }

    #[test]
    fn small_splats_print_every_element() {
        let text = |n: i64| {
            let s = Shape::array(ElementType::Pred, vec![n]);
            let a = ArrayLiteral::splat(s, ArrayData::Pred(vec![true])).unwrap();
            Literal::Array(a).to_string()
        };
        assert_eq!(text(2), "{1, 1}");
        assert_eq!(text(10), "{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}");
        assert_eq!(text(11), "true");
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
