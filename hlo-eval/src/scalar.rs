//! Scalar semantics: integer operations as XLA defines them (wrapping arithmetic, division
//! by zero, out-of-range shifts, integer power) and the small float codecs.

use hlo::literal::minifloat::{EncodeError, MiniFloat};
use hlo::shape::ElementType;

/// Integer element operations with XLA's semantics. `bits` is the element type's width
/// (smaller than the storage for `s4`/`u4`/...).
pub(crate) trait Int: Copy + Eq + Ord + Default + Send + 'static {
    /// Storage width in bits.
    const STORAGE_BITS: u32;
    /// Signed type.
    const SIGNED: bool;
    /// Wrapping add.
    fn wadd(self, o: Self) -> Self;
    /// Wrapping subtract.
    fn wsub(self, o: Self) -> Self;
    /// Wrapping multiply.
    fn wmul(self, o: Self) -> Self;
    /// Wrapping negate.
    fn wneg(self) -> Self;
    /// Division: `x / 0` is -1 (all ones), `MIN / -1` is `MIN`, truncating.
    fn xdiv(self, o: Self) -> Self;
    /// Remainder with the dividend's sign: `x % 0` is `x`, `MIN % -1` is 0.
    fn xrem(self, o: Self) -> Self;
    /// Bitwise and.
    fn band(self, o: Self) -> Self;
    /// Bitwise or.
    fn bor(self, o: Self) -> Self;
    /// Bitwise xor.
    fn bxor(self, o: Self) -> Self;
    /// Bitwise not.
    fn bnot(self) -> Self;
    /// The value as raw unsigned bits (sign-extended storage reinterpreted).
    fn ubits(self) -> u64;
    /// Wrapping conversion from an `i128`.
    fn from_i128(v: i128) -> Self;
    /// Exact conversion to `i128`.
    fn to_i128(self) -> i128;
    /// Wrapping absolute value.
    fn wabs(self) -> Self;
    /// Left shift by an unsigned amount; amounts `>= bits` give 0.
    fn shl_x(self, amount: Self, bits: u32) -> Self {
        let a = amount.ubits() & mask(Self::STORAGE_BITS);
        if amount.to_i128() < 0 || a >= u64::from(bits) {
            return Self::default();
        }
        Self::from_i128(self.to_i128() << a)
    }
    /// Logical right shift; amounts `>= bits` give 0.
    fn shr_logical(self, amount: Self, bits: u32) -> Self {
        let a = amount.ubits() & mask(Self::STORAGE_BITS);
        if amount.to_i128() < 0 || a >= u64::from(bits) {
            return Self::default();
        }
        let u = self.ubits() & mask(bits);
        Self::from_i128(i128::from(u >> a))
    }
    /// Arithmetic right shift; amounts `>= bits` fill with the sign.
    fn shr_arith(self, amount: Self, bits: u32) -> Self {
        let a = amount.ubits() & mask(Self::STORAGE_BITS);
        let v = self.to_i128();
        if amount.to_i128() < 0 || a >= u64::from(bits) {
            // Every bit becomes the sign bit: for an unsigned type, its top bit (XLA shifts
            // unsigned values arithmetically as their signed reinterpretation).
            let negative = if Self::SIGNED {
                v < 0
            } else {
                (self.ubits() >> (bits - 1)) & 1 == 1
            };
            return Self::from_i128(match (negative, Self::SIGNED) {
                (false, _) => 0,
                (true, true) => -1,
                (true, false) => i128::from(mask(bits)),
            });
        }
        if Self::SIGNED {
            Self::from_i128(v >> a)
        } else {
            // Unsigned values shift in their top bit (of the element width).
            let top = (self.ubits() >> (bits - 1)) & 1;
            let u = (self.ubits() & mask(bits)) >> a;
            let fill = if top == 1 {
                mask(bits) & !(mask(bits) >> a)
            } else {
                0
            };
            Self::from_i128(i128::from(u | fill))
        }
    }
    /// Integer power: `1^y = x^0 = 1`, negative exponents give 0, else wrapping.
    fn xpow(self, e: Self) -> Self {
        let one = Self::from_i128(1);
        if self == one || e == Self::default() {
            return one;
        }
        if e.to_i128() < 0 {
            return Self::default();
        }
        let mut result = one;
        let mut base = self;
        let mut e = e.to_i128();
        while e > 0 {
            if e & 1 == 1 {
                result = result.wmul(base);
            }
            base = base.wmul(base);
            e >>= 1;
        }
        result
    }
    /// Population count within `bits`.
    fn popcnt(self, bits: u32) -> Self {
        Self::from_i128(i128::from((self.ubits() & mask(bits)).count_ones()))
    }
    /// Leading zeros within `bits`.
    fn clz(self, bits: u32) -> Self {
        let u = self.ubits() & mask(bits);
        Self::from_i128(i128::from(u.leading_zeros() - (64 - bits)))
    }
    /// -1, 0 or 1.
    fn sign(self) -> Self {
        Self::from_i128(self.to_i128().signum())
    }
}

/// The low `bits` bits set.
pub(crate) fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

macro_rules! impl_int {
    ($($t:ty, $signed:expr;)*) => {$(
        impl Int for $t {
            const STORAGE_BITS: u32 = <$t>::BITS;
            const SIGNED: bool = $signed;
            fn wadd(self, o: Self) -> Self { self.wrapping_add(o) }
            fn wsub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn wmul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn wneg(self) -> Self { self.wrapping_neg() }
            fn xdiv(self, o: Self) -> Self {
                if o == 0 { !0 } else { self.wrapping_div(o) }
            }
            fn xrem(self, o: Self) -> Self {
                if o == 0 { self } else { self.wrapping_rem(o) }
            }
            fn band(self, o: Self) -> Self { self & o }
            fn bor(self, o: Self) -> Self { self | o }
            fn bxor(self, o: Self) -> Self { self ^ o }
            fn bnot(self) -> Self { !self }
            fn ubits(self) -> u64 { self as u64 }
            fn from_i128(v: i128) -> Self { v as $t }
            fn to_i128(self) -> i128 { self as i128 }
            #[allow(unused_comparisons)]
            fn wabs(self) -> Self { if self < 0 { self.wrapping_neg() } else { self } }
        }
    )*};
}

impl_int! {
    i8, true; i16, true; i32, true; i64, true;
    u8, false; u16, false; u32, false; u64, false;
}

/// Wraps a value stored in a wider integer to an element width of `bits` (sign-extending
/// for signed types): the storage invariant of `s1`..`s4` and `u1`..`u4`.
pub(crate) fn wrap_to_width<T: Int>(v: T, bits: u32) -> T {
    if bits >= T::STORAGE_BITS {
        return v;
    }
    let u = v.ubits() & mask(bits);
    if T::SIGNED && (u >> (bits - 1)) & 1 == 1 {
        T::from_i128(u as i128 - (1i128 << bits))
    } else {
        T::from_i128(u as i128)
    }
}

/// Codec for the float types stored as bit patterns (`f16`, `bf16`, `f8*`, `f4e2m1fn`).
///
/// Values are computed in `f64`, rounded to `f32` and then to the small type, as XLA:CPU
/// computes small-float ops in `f32` and rounds the result (ties to even).
#[derive(Clone, Copy)]
pub(crate) struct SmallFloat {
    ty: ElementType,
    fmt: MiniFloat,
}

impl SmallFloat {
    /// The codec of a small float type; `None` for other types.
    pub(crate) fn of(ty: ElementType) -> Option<SmallFloat> {
        Some(SmallFloat {
            ty,
            fmt: MiniFloat::of(ty)?,
        })
    }

    /// The value of a bit pattern (exact; `f16`/`bf16` through the `half` crate).
    #[inline]
    pub(crate) fn decode(&self, bits: u32) -> f64 {
        match self.ty {
            ElementType::F16 => half::f16::from_bits(bits as u16).to_f64(),
            ElementType::BF16 => half::bf16::from_bits(bits as u16).to_f64(),
            _ => self.fmt.decode(bits),
        }
    }

    /// The bit pattern of `x` rounded through `f32` (double rounding as XLA:CPU does).
    #[inline]
    pub(crate) fn encode(&self, x: f64) -> u32 {
        self.encode_f32(x as f32)
    }

    /// The bit pattern of an `f32` value rounded to nearest even; overflow gives infinity
    /// (or NaN for the types without infinity; the largest value for `f4e2m1fn`).
    /// `f16`/`bf16` round with the `half` crate (a NaN stays a quiet NaN of its sign).
    pub(crate) fn encode_f32(&self, x: f32) -> u32 {
        match self.ty {
            ElementType::F16 => u32::from(half::f16::from_f32(x).to_bits()),
            ElementType::BF16 => u32::from(half::bf16::from_f32(x).to_bits()),
            _ => self.encode_f64_direct(f64::from(x)),
        }
    }

    /// The bit pattern of `x` rounded once, directly from `f64`.
    ///
    /// Every type, `f16` and `bf16` included, goes through [`MiniFloat`]: `half`'s
    /// `from_f64` is not one correct rounding (it drops the low 32 mantissa bits first, or
    /// rounds through `f32` where the CPU has F16C), and XLA converts `f64` to `f16` with
    /// a single rounding.
    pub(crate) fn encode_f64_direct(&self, x: f64) -> u32 {
        match self.fmt.encode(x, None) {
            Ok(b) => b,
            Err(EncodeError::Overflow) | Err(EncodeError::NotRepresentable) => {
                let inf = if x.is_sign_negative() {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                };
                match self.fmt.encode(inf, None) {
                    Ok(b) => b,
                    // f4e2m1fn: no infinity and no NaN; saturate to +-6.
                    Err(_) => {
                        if x.is_sign_negative() {
                            0xf
                        } else {
                            0x7
                        }
                    }
                }
            }
            Err(EncodeError::BadPayload) => 0,
        }
    }
}
