//! Splat values: constants whose elements are all equal (and broadcasts of them), read
//! as one scalar, and scalar literals built back from such values.

use hlo::ir::{Computation, InstrId};
use hlo::literal::{ArrayData, ArrayLiteral, Literal};
use hlo::shape::{ElementType, Shape};
use hlo::Opcode;

/// One element value, by kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// `pred`.
    Bool(bool),
    /// Any integer type (exact).
    Int(i128),
    /// Any real float type, widened exactly to `f64`.
    Float(f64),
}

impl Scalar {
    /// True for `0`, `-0` and `false`.
    pub fn is_zero(self) -> bool {
        match self {
            Scalar::Bool(b) => !b,
            Scalar::Int(i) => i == 0,
            Scalar::Float(f) => f == 0.0,
        }
    }

    /// True for `1` and `true`.
    pub fn is_one(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i == 1,
            Scalar::Float(f) => f == 1.0,
        }
    }

    /// True when the value equals `x` (integers and floats; `false`/`true` as 0/1).
    pub fn equals(self, x: f64) -> bool {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)) == x,
            Scalar::Int(i) => i as f64 == x && x.fract() == 0.0,
            Scalar::Float(f) => f == x,
        }
    }
}

/// Element `i` of `a` (row-major). A splat literal is read from its one stored value,
/// never expanded.
pub(super) fn element(a: &ArrayLiteral, i: usize) -> Option<Scalar> {
    if i >= a.element_count() {
        return None;
    }
    let (data, i) = match a.splat_value() {
        Some(v) => (v, 0),
        None => (a.data(), i),
    };
    Some(match data {
        ArrayData::Pred(v) => Scalar::Bool(*v.get(i)?),
        ArrayData::S8(v) => Scalar::Int(i128::from(*v.get(i)?)),
        ArrayData::S16(v) => Scalar::Int(i128::from(*v.get(i)?)),
        ArrayData::S32(v) => Scalar::Int(i128::from(*v.get(i)?)),
        ArrayData::S64(v) => Scalar::Int(i128::from(*v.get(i)?)),
        ArrayData::U8(v) => Scalar::Int(i128::from(*v.get(i)?)),
        ArrayData::U16(v) => Scalar::Int(i128::from(*v.get(i)?)),
        ArrayData::U32(v) => Scalar::Int(i128::from(*v.get(i)?)),
        ArrayData::U64(v) => Scalar::Int(i128::from(*v.get(i)?)),
        ArrayData::F32(_) | ArrayData::F64(_) | ArrayData::Bits16(_) | ArrayData::Bits8(_) => {
            // `get_f64` reads a splat's one value for every index.
            Scalar::Float(a.get_f64(i)?)
        }
        ArrayData::C64(_) | ArrayData::C128(_) => return None,
    })
}

fn same(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::Float(x), Scalar::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// The value every element of `id` has, when `id` is a constant with all elements equal
/// (bit for bit) or a broadcast of one. Empty arrays have none.
pub fn splat(comp: &Computation, id: InstrId) -> Option<Scalar> {
    let i = comp.instr(id);
    match i.opcode {
        Opcode::Broadcast => splat(comp, *i.operands.first()?),
        Opcode::Constant => {
            let a = i.literal()?.as_array()?;
            let first = element(a, 0)?;
            if a.is_splat() {
                return Some(first);
            }
            let n = a.element_count();
            // Large constants: check every element all the same (linear, no allocation).
            (1..n)
                .all(|k| element(a, k).is_some_and(|e| same(e, first)))
                .then_some(first)
        }
        _ => None,
    }
}

/// True when every element of `id` is provably `>= 0` or NaN (so `abs` is a no-op up to
/// the sign of NaN, as XLA's `IsNonNegative` assumes): unsigned integers, `abs`,
/// `x * x`, `exp`, `sqrt`, non-negative constants and broadcasts of those.
pub fn non_negative(comp: &Computation, id: InstrId) -> bool {
    let i = comp.instr(id);
    if i.shape
        .element_type()
        .is_some_and(|t| t.is_unsigned_integral() || t.is_pred())
    {
        return true;
    }
    match i.opcode {
        Opcode::Abs | Opcode::Exp | Opcode::Sqrt => true,
        Opcode::Multiply => i.operands.len() == 2 && i.operands[0] == i.operands[1],
        Opcode::Broadcast => non_negative(comp, i.operands[0]),
        Opcode::Constant => i.literal().and_then(Literal::as_array).is_some_and(|a| {
            // A splat's elements are all its first (if it has any).
            let n = if a.is_splat() {
                a.element_count().min(1)
            } else {
                a.element_count()
            };
            (0..n).all(|k| match element(a, k) {
                Some(Scalar::Int(v)) => v >= 0,
                Some(Scalar::Float(f)) => f >= 0.0 && f.is_sign_positive(),
                Some(Scalar::Bool(_)) => true,
                None => false,
            })
        }),
        _ => false,
    }
}

/// Wraps `v` to the range of integer type `ty` (two's complement, as XLA's integer
/// arithmetic wraps).
pub fn wrap_int(ty: ElementType, v: i128) -> i128 {
    let Some(bits) = ty.bit_width() else {
        return v;
    };
    let bits = bits.min(127);
    let m = 1i128 << bits;
    let r = v.rem_euclid(m);
    if ty.is_signed_integral() && r >= m / 2 {
        r - m
    } else {
        r
    }
}

/// A scalar literal of type `ty` holding `v`; `None` when it does not fit.
pub fn scalar_literal(ty: ElementType, v: Scalar) -> Option<Literal> {
    let mut d = ArrayData::new(ty)?;
    match v {
        Scalar::Bool(b) if ty.is_pred() => d.push_bool(ty, b).ok()?,
        Scalar::Bool(b) => d.push_int(ty, i128::from(u8::from(b))).ok()?,
        Scalar::Int(i) => d.push_int(ty, i).ok()?,
        Scalar::Float(f) => {
            if ty.is_integral() || ty.is_pred() {
                return None;
            }
            d.push_float(ty, f, None, &f.to_string()).ok()?
        }
    }
    Some(Literal::Array(ArrayLiteral::new(Shape::scalar(ty), d)?))
}

/// [`scalar_literal`], also for integer types given a float that is integral (never
/// lossy: `None` otherwise).
pub fn literal_or_none(ty: ElementType, v: Scalar) -> Option<Literal> {
    match v {
        Scalar::Float(f) if ty.is_integral() && f.fract() == 0.0 && f.abs() < 1e30 => {
            scalar_literal(ty, Scalar::Int(f as i128))
        }
        _ => scalar_literal(ty, v),
    }
}
