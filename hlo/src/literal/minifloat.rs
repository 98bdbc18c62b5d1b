//! Encoding and decoding of the small floating-point formats (`f16`, `bf16`, the `f8`
//! family and `f4e2m1fn`) stored as raw bit patterns in literals.

use crate::shape::ElementType;

/// How a format spends its special encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Special {
    /// IEEE-like: all-ones exponent is inf (mantissa 0) or NaN.
    Ieee,
    /// Finite: no inf; all-ones exponent and mantissa is NaN (both signs).
    Fn,
    /// Finite, unsigned zero: no inf, no -0; the pattern `0x80` is the only NaN.
    Fnuz,
    /// No sign, no mantissa, no zero: `2^(e - bias)`; `0xff` is NaN.
    E8M0,
    /// No inf and no NaN (`f4e2m1fn`).
    Finite,
}

/// A small floating-point format.
#[derive(Clone, Copy, Debug)]
pub struct MiniFloat {
    exp_bits: u32,
    man_bits: u32,
    bias: i32,
    special: Special,
    /// Decimal digits that make printing round-trip (C++ `max_digits10`).
    pub max_digits10: usize,
}

/// Why a value cannot be stored in a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// A finite value too large for the format.
    Overflow,
    /// NaN, infinity or zero that the format cannot represent.
    NotRepresentable,
    /// A NaN payload the format cannot hold.
    BadPayload,
}

impl MiniFloat {
    /// The format of a small float element type; `None` for other types.
    pub fn of(t: ElementType) -> Option<MiniFloat> {
        use ElementType as T;
        let (exp_bits, man_bits, bias, special, max_digits10) = match t {
            T::F16 => (5, 10, 15, Special::Ieee, 5),
            T::BF16 => (8, 7, 127, Special::Ieee, 4),
            T::F8E5M2 => (5, 2, 15, Special::Ieee, 2),
            T::F8E4M3 => (4, 3, 7, Special::Ieee, 3),
            T::F8E3M4 => (3, 4, 3, Special::Ieee, 3),
            T::F8E4M3FN => (4, 3, 7, Special::Fn, 3),
            T::F8E4M3FNUZ => (4, 3, 8, Special::Fnuz, 3),
            T::F8E4M3B11FNUZ => (4, 3, 11, Special::Fnuz, 3),
            T::F8E5M2FNUZ => (5, 2, 16, Special::Fnuz, 2),
            T::F8E8M0FNU => (8, 0, 127, Special::E8M0, 2),
            T::F4E2M1FN => (2, 1, 1, Special::Finite, 2),
            _ => return None,
        };
        Some(MiniFloat {
            exp_bits,
            man_bits,
            bias,
            special,
            max_digits10,
        })
    }

    fn exp_mask(&self) -> u32 {
        (1 << self.exp_bits) - 1
    }

    fn man_mask(&self) -> u32 {
        (1 << self.man_bits) - 1
    }

    fn sign_bit(&self) -> u32 {
        1 << (self.exp_bits + self.man_bits)
    }

    fn has_sign(&self) -> bool {
        self.special != Special::E8M0
    }

    /// The mantissa of the canonical quiet NaN (XLA's `QuietNanWithoutPayload`); only
    /// IEEE-like formats carry payloads.
    pub fn quiet_nan_mantissa(&self) -> Option<u32> {
        (self.special == Special::Ieee && self.man_bits > 0).then(|| 1 << (self.man_bits - 1))
    }

    /// True when the bits encode a NaN.
    pub fn is_nan(&self, bits: u32) -> bool {
        let e = (bits >> self.man_bits) & self.exp_mask();
        let m = bits & self.man_mask();
        match self.special {
            Special::Ieee => e == self.exp_mask() && m != 0,
            Special::Fn => e == self.exp_mask() && m == self.man_mask(),
            Special::Fnuz => bits == self.sign_bit(),
            Special::E8M0 => bits == 0xff,
            Special::Finite => false,
        }
    }

    /// The mantissa bits of a NaN (its payload).
    pub fn nan_mantissa(&self, bits: u32) -> u32 {
        bits & self.man_mask()
    }

    /// The value of a bit pattern.
    pub fn decode(&self, bits: u32) -> f64 {
        if self.is_nan(bits) {
            let signed = matches!(self.special, Special::Ieee | Special::Fn);
            return if signed && bits & self.sign_bit() != 0 {
                -f64::NAN
            } else {
                f64::NAN
            };
        }
        if self.special == Special::E8M0 {
            return 2f64.powi((bits & 0xff) as i32 - self.bias);
        }
        let neg = bits & self.sign_bit() != 0;
        let e = (bits >> self.man_bits) & self.exp_mask();
        let m = bits & self.man_mask();
        let mag = if self.special == Special::Ieee && e == self.exp_mask() {
            f64::INFINITY
        } else if e == 0 {
            f64::from(m) * 2f64.powi(1 - self.bias - self.man_bits as i32)
        } else {
            (1.0 + f64::from(m) / f64::from(1u32 << self.man_bits))
                * 2f64.powi(e as i32 - self.bias)
        };
        if neg {
            -mag
        } else {
            mag
        }
    }

    /// The canonical NaN pattern with the given sign.
    fn nan_bits(&self, negative: bool, mantissa: Option<u32>) -> Result<u32, EncodeError> {
        let sign = if negative && self.has_sign() {
            self.sign_bit()
        } else {
            0
        };
        match self.special {
            Special::Ieee => {
                let quiet = self
                    .quiet_nan_mantissa()
                    .ok_or(EncodeError::NotRepresentable)?;
                let m = mantissa.unwrap_or(quiet);
                if m == 0 || m > self.man_mask() {
                    return Err(EncodeError::BadPayload);
                }
                Ok(sign | (self.exp_mask() << self.man_bits) | m)
            }
            _ if mantissa.is_some() => Err(EncodeError::BadPayload),
            Special::Fn => Ok(sign | (self.exp_mask() << self.man_bits) | self.man_mask()),
            Special::Fnuz => Ok(self.sign_bit()),
            Special::E8M0 => Ok(0xff),
            Special::Finite => Err(EncodeError::NotRepresentable),
        }
    }

    /// Rounds `v` to the nearest representable value (ties to even) and returns its bits.
    /// `payload` is the mantissa of a NaN written `nan(0x...)`.
    pub fn encode(&self, v: f64, payload: Option<u32>) -> Result<u32, EncodeError> {
        if v.is_nan() {
            return self.nan_bits(v.is_sign_negative(), payload);
        }
        let neg = v.is_sign_negative();
        let sign = if neg && self.has_sign() {
            self.sign_bit()
        } else {
            0
        };
        if v.is_infinite() {
            return match self.special {
                Special::Ieee => Ok(sign | (self.exp_mask() << self.man_bits)),
                Special::Fn | Special::Fnuz | Special::E8M0 => self.nan_bits(neg, None),
                Special::Finite => Err(EncodeError::NotRepresentable),
            };
        }
        if self.special == Special::E8M0 {
            return self.encode_e8m0(v);
        }
        let a = v.abs();
        if a == 0.0 {
            return Ok(if self.special == Special::Fnuz {
                0
            } else {
                sign
            });
        }
        let min_normal_exp = 1 - self.bias;
        // Exponent of `a` (a in [2^e, 2^(e+1))), exact from the f64 representation.
        let e = exponent_of(a);
        let (exp_field, man) = if e < min_normal_exp {
            let q = 2f64.powi(min_normal_exp - self.man_bits as i32);
            let mi = (a / q).round_ties_even() as u64;
            // `mi` may carry into the smallest normal: exp field 1, mantissa 0.
            ((mi >> self.man_bits) as u32, (mi as u32) & self.man_mask())
        } else {
            let q = 2f64.powi(e - self.man_bits as i32);
            let mut mi = (a / q).round_ties_even() as u64;
            let mut e = e;
            if mi == 1 << (self.man_bits + 1) {
                mi >>= 1;
                e += 1;
            }
            let field = e + self.bias;
            if field > i32::from(u16::MAX) {
                return Err(EncodeError::Overflow);
            }
            (field as u32, (mi as u32) & self.man_mask())
        };
        let max_field = match self.special {
            Special::Ieee => self.exp_mask() - 1,
            _ => self.exp_mask(),
        };
        if exp_field > max_field
            || (self.special == Special::Fn
                && exp_field == self.exp_mask()
                && man == self.man_mask())
        {
            return Err(EncodeError::Overflow);
        }
        if self.special == Special::Fnuz && exp_field == 0 && man == 0 {
            return Ok(0); // rounds to zero: unsigned.
        }
        Ok(sign | (exp_field << self.man_bits) | man)
    }

    fn encode_e8m0(&self, v: f64) -> Result<u32, EncodeError> {
        if v <= 0.0 {
            return Err(EncodeError::NotRepresentable);
        }
        let e = exponent_of(v);
        // Round to the nearest power of two (ties, at 1.5 * 2^e, go up as XLA rounds the
        // mantissa to even).
        let frac = v / 2f64.powi(e);
        let e = if frac >= 1.5 { e + 1 } else { e };
        let field = e + self.bias;
        if field < 0 {
            return Err(EncodeError::NotRepresentable);
        }
        if field >= 0xff {
            return Err(EncodeError::Overflow);
        }
        Ok(field as u32)
    }
}

/// `floor(log2(a))` for a finite positive `a`, exact.
fn exponent_of(a: f64) -> i32 {
    let bits = a.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal f64: 2^-1074 * mantissa.
        let m = bits & ((1 << 52) - 1);
        -1074 + (63 - m.leading_zeros() as i32)
    } else {
        biased - 1023
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(t: ElementType) -> MiniFloat {
        MiniFloat::of(t).unwrap()
    }

    #[test]
    fn f16_matches_ieee() {
        let h = f(ElementType::F16);
        assert_eq!(h.encode(1.0, None), Ok(0x3c00));
        assert_eq!(h.encode(-2.0, None), Ok(0xc000));
        assert_eq!(h.encode(65504.0, None), Ok(0x7bff));
        assert_eq!(h.encode(65520.0, None), Err(EncodeError::Overflow));
        assert_eq!(h.encode(f64::INFINITY, None), Ok(0x7c00));
        assert_eq!(h.encode(f64::NAN, None), Ok(0x7e00));
        assert_eq!(h.encode(f64::NAN, Some(1)), Ok(0x7c01));
        assert_eq!(h.encode(2f64.powi(-24), None), Ok(1));
        assert_eq!(h.encode(2f64.powi(-26), None), Ok(0)); // ties to even
        assert_eq!(h.decode(0x3555), 0.333251953125);
        assert_eq!(h.decode(0x0001), 2f64.powi(-24));
        for bits in 0..0x10000u32 {
            let v = h.decode(bits);
            if !v.is_nan() {
                assert_eq!(h.encode(v, None), Ok(bits), "{bits:#x}");
            }
        }
    }

    #[test]
    fn small_formats_round_trip_every_pattern() {
        for t in [
            ElementType::BF16,
            ElementType::F8E5M2,
            ElementType::F8E4M3,
            ElementType::F8E3M4,
            ElementType::F8E4M3FN,
            ElementType::F8E4M3FNUZ,
            ElementType::F8E4M3B11FNUZ,
            ElementType::F8E5M2FNUZ,
            ElementType::F8E8M0FNU,
            ElementType::F4E2M1FN,
        ] {
            let m = f(t);
            let n = 1u32 << (t.bit_width().unwrap());
            for bits in 0..n {
                let v = m.decode(bits);
                if v.is_nan() {
                    assert!(m.is_nan(m.encode(v, None).unwrap()), "{t} {bits:#x}");
                } else {
                    assert_eq!(m.encode(v, None), Ok(bits), "{t} {bits:#x} {v}");
                }
            }
        }
        assert_eq!(f(ElementType::F8E4M3FN).decode(0x7e), 448.0);
        assert_eq!(f(ElementType::F4E2M1FN).decode(0x7), 6.0);
        assert_eq!(
            f(ElementType::F4E2M1FN).encode(7.0, None),
            Err(EncodeError::Overflow)
        );
        assert_eq!(f(ElementType::F8E4M3FNUZ).encode(-0.0, None), Ok(0));
    }
}
