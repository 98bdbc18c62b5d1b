//! Element (primitive) types of array shapes, with XLA's lowercase spellings.

use std::fmt;
use std::str::FromStr;

macro_rules! element_types {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $bits:expr, $class:ident;)*) => {
        /// An XLA primitive type, as printed in shapes (`f32`, `bf16`, `s4`, `token`, ...).
        ///
        /// Tuples are not an element type here: they are [`crate::Shape::Tuple`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ElementType {
            $($(#[$doc])* $variant,)*
        }

        impl ElementType {
            /// Every element type, in declaration order.
            pub const ALL: &'static [ElementType] = &[$(ElementType::$variant,)*];

            /// The spelling XLA prints (`"f8e4m3fn"`, `"pred"`, ...).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ElementType::$variant => $name,)*
                }
            }

            /// Bits per element; `None` for `token` and `opaque`, which hold no data.
            pub fn bit_width(self) -> Option<u32> {
                match self {
                    $(ElementType::$variant => $bits,)*
                }
            }

            /// The broad class of the type.
            pub fn class(self) -> TypeClass {
                match self {
                    $(ElementType::$variant => TypeClass::$class,)*
                }
            }
        }

        impl FromStr for ElementType {
            type Err = UnknownElementType;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok(ElementType::$variant),)*
                    _ => Err(UnknownElementType(s.to_string())),
                }
            }
        }
    };
}

element_types! {
    /// Boolean.
    Pred => "pred", Some(8), Pred;
    /// 1-bit signed integer.
    S1 => "s1", Some(1), Signed;
    /// 2-bit signed integer.
    S2 => "s2", Some(2), Signed;
    /// 4-bit signed integer.
    S4 => "s4", Some(4), Signed;
    /// 8-bit signed integer.
    S8 => "s8", Some(8), Signed;
    /// 16-bit signed integer.
    S16 => "s16", Some(16), Signed;
    /// 32-bit signed integer.
    S32 => "s32", Some(32), Signed;
    /// 64-bit signed integer.
    S64 => "s64", Some(64), Signed;
    /// 1-bit unsigned integer.
    U1 => "u1", Some(1), Unsigned;
    /// 2-bit unsigned integer.
    U2 => "u2", Some(2), Unsigned;
    /// 4-bit unsigned integer.
    U4 => "u4", Some(4), Unsigned;
    /// 8-bit unsigned integer.
    U8 => "u8", Some(8), Unsigned;
    /// 16-bit unsigned integer.
    U16 => "u16", Some(16), Unsigned;
    /// 32-bit unsigned integer.
    U32 => "u32", Some(32), Unsigned;
    /// 64-bit unsigned integer.
    U64 => "u64", Some(64), Unsigned;
    /// IEEE half precision.
    F16 => "f16", Some(16), Float;
    /// bfloat16 (8 exponent bits, 7 mantissa bits).
    BF16 => "bf16", Some(16), Float;
    /// IEEE single precision.
    F32 => "f32", Some(32), Float;
    /// IEEE double precision.
    F64 => "f64", Some(64), Float;
    /// 8-bit float, 5 exponent bits, 2 mantissa bits, IEEE-like (inf and NaN).
    F8E5M2 => "f8e5m2", Some(8), Float;
    /// 8-bit float, 4 exponent bits, 3 mantissa bits, IEEE-like.
    F8E4M3 => "f8e4m3", Some(8), Float;
    /// 8-bit float, 4 exponent bits, 3 mantissa bits, finite (no inf; NaN is all ones).
    F8E4M3FN => "f8e4m3fn", Some(8), Float;
    /// 8-bit float, E4M3 with exponent bias 11, finite, unsigned zero (NaN is 0x80).
    F8E4M3B11FNUZ => "f8e4m3b11fnuz", Some(8), Float;
    /// 8-bit float, 3 exponent bits, 4 mantissa bits, IEEE-like.
    F8E3M4 => "f8e3m4", Some(8), Float;
    /// 8-bit float, E5M2 finite with unsigned zero (NaN is 0x80).
    F8E5M2FNUZ => "f8e5m2fnuz", Some(8), Float;
    /// 8-bit float, E4M3 finite with unsigned zero (NaN is 0x80).
    F8E4M3FNUZ => "f8e4m3fnuz", Some(8), Float;
    /// 8-bit power-of-two scale: 8 exponent bits, no sign, no mantissa (NaN is 0xff).
    F8E8M0FNU => "f8e8m0fnu", Some(8), Float;
    /// 4-bit float, 2 exponent bits, 1 mantissa bit, finite (no inf, no NaN).
    F4E2M1FN => "f4e2m1fn", Some(4), Float;
    /// Complex of two `f32`.
    C64 => "c64", Some(64), Complex;
    /// Complex of two `f64`.
    C128 => "c128", Some(128), Complex;
    /// A token (ordering value); holds no data.
    Token => "token", None, Token;
    /// An opaque value; holds no data XLA can see.
    Opaque => "opaque", None, Opaque;
}

/// The broad class of an [`ElementType`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    /// `pred`.
    Pred,
    /// Signed integers.
    Signed,
    /// Unsigned integers.
    Unsigned,
    /// Real floating point (IEEE and the small float formats).
    Float,
    /// Complex numbers.
    Complex,
    /// `token`.
    Token,
    /// `opaque`.
    Opaque,
}

impl ElementType {
    /// Bytes per element when stored unpacked (sub-byte types take one byte); `None` for
    /// `token`/`opaque`.
    pub fn byte_width(self) -> Option<u32> {
        self.bit_width().map(|b| b.div_ceil(8))
    }

    /// True for `pred`.
    pub fn is_pred(self) -> bool {
        self == ElementType::Pred
    }

    /// True for signed and unsigned integers (not `pred`).
    pub fn is_integral(self) -> bool {
        matches!(self.class(), TypeClass::Signed | TypeClass::Unsigned)
    }

    /// True for signed integers.
    pub fn is_signed_integral(self) -> bool {
        self.class() == TypeClass::Signed
    }

    /// True for unsigned integers.
    pub fn is_unsigned_integral(self) -> bool {
        self.class() == TypeClass::Unsigned
    }

    /// True for real floating-point types.
    pub fn is_float(self) -> bool {
        self.class() == TypeClass::Float
    }

    /// True for complex types.
    pub fn is_complex(self) -> bool {
        self.class() == TypeClass::Complex
    }

    /// True for types that hold array data (everything but `token` and `opaque`).
    pub fn is_array_type(self) -> bool {
        self.bit_width().is_some()
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error of [`ElementType::from_str`]: the text names no element type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown element type `{0}`")]
pub struct UnknownElementType(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &t in ElementType::ALL {
            assert_eq!(t.as_str().parse::<ElementType>().unwrap(), t);
        }
        assert!("f31".parse::<ElementType>().is_err());
        assert_eq!(ElementType::S4.byte_width(), Some(1));
        assert_eq!(ElementType::C128.byte_width(), Some(16));
        assert_eq!(ElementType::Token.byte_width(), None);
    }
}
