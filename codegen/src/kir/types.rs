//! Scalar element types of the kernel IR and their mapping from HLO element types.

use std::fmt;

use hlo::ElementType;

/// The element types a kernel computes with. `f16`/`bf16` are stored as their 16-bit
/// patterns and computed in `f32` (as XLA:CPU does), rounding to nearest even after every
/// operation; the `f8` types likewise (stored as 8-bit patterns, converted as XLA does:
/// see `hlo::literal::minifloat`); `pred` is one byte holding 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarType {
    /// Boolean.
    Pred,
    /// 8-bit signed integer.
    S8,
    /// 16-bit signed integer.
    S16,
    /// 32-bit signed integer.
    S32,
    /// 64-bit signed integer.
    S64,
    /// 8-bit unsigned integer.
    U8,
    /// 16-bit unsigned integer.
    U16,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit unsigned integer.
    U64,
    /// IEEE half precision (bit pattern).
    F16,
    /// bfloat16 (bit pattern).
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// `f8e4m3fn` (bit pattern; finite, NaN is `S.1111.111`).
    F8E4M3FN,
    /// `f8e5m2` (bit pattern; IEEE-like).
    F8E5M2,
    /// Complex of two `f32` (real, imaginary); computed in `f64` as the evaluator does.
    C64,
    /// Complex of two `f64`.
    C128,
}

impl ScalarType {
    /// The kernel type of an HLO element type; `None` for types kernels do not handle yet
    /// (sub-byte integers, `f8`/`f4`, complex, token, opaque).
    pub fn from_element(t: ElementType) -> Option<ScalarType> {
        use ElementType as E;
        Some(match t {
            E::Pred => ScalarType::Pred,
            E::S8 => ScalarType::S8,
            E::S16 => ScalarType::S16,
            E::S32 => ScalarType::S32,
            E::S64 => ScalarType::S64,
            E::U8 => ScalarType::U8,
            E::U16 => ScalarType::U16,
            E::U32 => ScalarType::U32,
            E::U64 => ScalarType::U64,
            E::F16 => ScalarType::F16,
            E::BF16 => ScalarType::BF16,
            E::F32 => ScalarType::F32,
            E::F64 => ScalarType::F64,
            E::F8E4M3FN => ScalarType::F8E4M3FN,
            E::F8E5M2 => ScalarType::F8E5M2,
            E::C64 => ScalarType::C64,
            E::C128 => ScalarType::C128,
            _ => return None,
        })
    }

    /// Bytes per element in a buffer.
    pub fn byte_width(self) -> u32 {
        match self {
            ScalarType::Pred
            | ScalarType::S8
            | ScalarType::U8
            | ScalarType::F8E4M3FN
            | ScalarType::F8E5M2 => 1,
            ScalarType::S16 | ScalarType::U16 | ScalarType::F16 | ScalarType::BF16 => 2,
            ScalarType::S32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::S64 | ScalarType::U64 | ScalarType::F64 | ScalarType::C64 => 8,
            ScalarType::C128 => 16,
        }
    }

    /// Bits of the value (8 for `pred`).
    pub fn bits(self) -> u32 {
        self.byte_width() * 8
    }

    /// Floating-point types (including the 16-bit ones).
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarType::F16
                | ScalarType::BF16
                | ScalarType::F32
                | ScalarType::F64
                | ScalarType::F8E4M3FN
                | ScalarType::F8E5M2
        )
    }

    /// Complex types.
    pub fn is_complex(self) -> bool {
        matches!(self, ScalarType::C64 | ScalarType::C128)
    }

    /// The type of a complex type's parts (`self` for other types).
    pub fn component(self) -> ScalarType {
        match self {
            ScalarType::C64 => ScalarType::F32,
            ScalarType::C128 => ScalarType::F64,
            t => t,
        }
    }

    /// Signed integer types.
    pub fn is_signed_int(self) -> bool {
        matches!(
            self,
            ScalarType::S8 | ScalarType::S16 | ScalarType::S32 | ScalarType::S64
        )
    }

    /// Unsigned integer types.
    pub fn is_unsigned_int(self) -> bool {
        matches!(
            self,
            ScalarType::U8 | ScalarType::U16 | ScalarType::U32 | ScalarType::U64
        )
    }

    /// Integer types (signed or unsigned, not `pred`).
    pub fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    /// The values of an integer or `pred` type as `s64` indices (`u64` is cut at
    /// `i64::MAX`, as an index converted to `s64` is); `None` for other types.
    pub fn index_range(self) -> Option<(i64, i64)> {
        Some(match self {
            ScalarType::Pred => (0, 1),
            ScalarType::S8 => (i8::MIN.into(), i8::MAX.into()),
            ScalarType::S16 => (i16::MIN.into(), i16::MAX.into()),
            ScalarType::S32 => (i32::MIN.into(), i32::MAX.into()),
            ScalarType::S64 => (i64::MIN, i64::MAX),
            ScalarType::U8 => (0, u8::MAX.into()),
            ScalarType::U16 => (0, u16::MAX.into()),
            ScalarType::U32 => (0, u32::MAX.into()),
            ScalarType::U64 => (0, i64::MAX),
            _ => return None,
        })
    }

    /// The text name (HLO's spelling).
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Pred => "pred",
            ScalarType::S8 => "s8",
            ScalarType::S16 => "s16",
            ScalarType::S32 => "s32",
            ScalarType::S64 => "s64",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::F16 => "f16",
            ScalarType::BF16 => "bf16",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::F8E4M3FN => "f8e4m3fn",
            ScalarType::F8E5M2 => "f8e5m2",
            ScalarType::C64 => "c64",
            ScalarType::C128 => "c128",
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
