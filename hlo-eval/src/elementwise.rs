//! Elementwise operations: unary and binary math over every element type, compare,
//! select and clamp. Each op is one typed loop over the storage vectors.

use super::complex;
use super::data::make;
use super::scalar::{wrap_to_width, Int, SmallFloat};
use super::special::erf;
use super::EvalError;
use hlo::attrs::{ComparisonDirection, ComparisonType};
use hlo::literal::{ArrayData, ArrayLiteral};
use hlo::shape::{ElementType, Shape};
use hlo::{Literal, Opcode};

/// Maps every float element through `f` (computed in `f64`, rounded to the element type);
/// `None` when the data is not real floating point.
pub(crate) fn map_float(
    data: &ArrayData,
    ty: ElementType,
    f: impl Fn(f64) -> f64,
) -> Option<ArrayData> {
    Some(match data {
        ArrayData::F32(v) => ArrayData::F32(v.iter().map(|&x| f(f64::from(x)) as f32).collect()),
        ArrayData::F64(v) => ArrayData::F64(v.iter().map(|&x| f(x)).collect()),
        ArrayData::Bits16(v) => {
            let c = SmallFloat::of(ty)?;
            ArrayData::Bits16(
                v.iter()
                    .map(|&b| c.encode(f(c.decode(u32::from(b)))) as u16)
                    .collect(),
            )
        }
        ArrayData::Bits8(v) => {
            let c = SmallFloat::of(ty)?;
            ArrayData::Bits8(
                v.iter()
                    .map(|&b| c.encode(f(c.decode(u32::from(b)))) as u8)
                    .collect(),
            )
        }
        _ => return None,
    })
}

/// Maps pairs of float elements through `f`.
pub(crate) fn zip_float(
    a: &ArrayData,
    b: &ArrayData,
    ty: ElementType,
    f: impl Fn(f64, f64) -> f64,
) -> Option<ArrayData> {
    Some(match (a, b) {
        (ArrayData::F32(x), ArrayData::F32(y)) => ArrayData::F32(
            x.iter()
                .zip(y)
                .map(|(&p, &q)| f(f64::from(p), f64::from(q)) as f32)
                .collect(),
        ),
        (ArrayData::F64(x), ArrayData::F64(y)) => {
            ArrayData::F64(x.iter().zip(y).map(|(&p, &q)| f(p, q)).collect())
        }
        (ArrayData::Bits16(x), ArrayData::Bits16(y)) => {
            let c = SmallFloat::of(ty)?;
            ArrayData::Bits16(
                x.iter()
                    .zip(y)
                    .map(|(&p, &q)| {
                        c.encode(f(c.decode(u32::from(p)), c.decode(u32::from(q)))) as u16
                    })
                    .collect(),
            )
        }
        (ArrayData::Bits8(x), ArrayData::Bits8(y)) => {
            let c = SmallFloat::of(ty)?;
            ArrayData::Bits8(
                x.iter()
                    .zip(y)
                    .map(|(&p, &q)| {
                        c.encode(f(c.decode(u32::from(p)), c.decode(u32::from(q)))) as u8
                    })
                    .collect(),
            )
        }
        _ => return None,
    })
}

/// Float elements as `f64` values (for compare and convert).
pub(crate) fn float_values(data: &ArrayData, ty: ElementType) -> Option<Vec<f64>> {
    Some(match data {
        ArrayData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        ArrayData::F64(v) => v.clone(),
        ArrayData::Bits16(v) => {
            let c = SmallFloat::of(ty)?;
            v.iter().map(|&b| c.decode(u32::from(b))).collect()
        }
        ArrayData::Bits8(v) => {
            let c = SmallFloat::of(ty)?;
            v.iter().map(|&b| c.decode(u32::from(b))).collect()
        }
        _ => return None,
    })
}

/// Runs a generic integer body for every integer variant, rebuilding the variant, and
/// wraps sub-byte results to their width; other variants fall to `$other`.
macro_rules! map_int {
    ($data:expr, $bits:expr, $v:ident => $body:expr, $other:expr) => {
        match $data {
            ArrayData::S8($v) => ArrayData::S8(fix_width($body, $bits)),
            ArrayData::S16($v) => ArrayData::S16($body),
            ArrayData::S32($v) => ArrayData::S32($body),
            ArrayData::S64($v) => ArrayData::S64($body),
            ArrayData::U8($v) => ArrayData::U8(fix_width($body, $bits)),
            ArrayData::U16($v) => ArrayData::U16($body),
            ArrayData::U32($v) => ArrayData::U32($body),
            ArrayData::U64($v) => ArrayData::U64($body),
            _ => $other,
        }
    };
}

/// Like [`map_int`] for two operands of the same integer variant.
macro_rules! zip_int {
    ($a:expr, $b:expr, $bits:expr, $x:ident, $y:ident => $body:expr, $other:expr) => {
        match ($a, $b) {
            (ArrayData::S8($x), ArrayData::S8($y)) => ArrayData::S8(fix_width($body, $bits)),
            (ArrayData::S16($x), ArrayData::S16($y)) => ArrayData::S16($body),
            (ArrayData::S32($x), ArrayData::S32($y)) => ArrayData::S32($body),
            (ArrayData::S64($x), ArrayData::S64($y)) => ArrayData::S64($body),
            (ArrayData::U8($x), ArrayData::U8($y)) => ArrayData::U8(fix_width($body, $bits)),
            (ArrayData::U16($x), ArrayData::U16($y)) => ArrayData::U16($body),
            (ArrayData::U32($x), ArrayData::U32($y)) => ArrayData::U32($body),
            (ArrayData::U64($x), ArrayData::U64($y)) => ArrayData::U64($body),
            _ => $other,
        }
    };
}

/// Wraps sub-byte results (`s4` in `i8`, ...) to their element width.
pub(crate) fn fix_width<T: Int>(mut v: Vec<T>, bits: u32) -> Vec<T> {
    if bits < T::STORAGE_BITS {
        for x in &mut v {
            *x = wrap_to_width(*x, bits);
        }
    }
    v
}

/// Rounds half away from zero (XLA's `round-nearest-afz`).
fn round_afz(x: f64) -> f64 {
    x.round()
}

/// XLA's float `sign`: -1, +-0 (keeping the sign), 1, NaN for NaN.
fn float_sign(x: f64) -> f64 {
    if x.is_nan() || x == 0.0 {
        x
    } else {
        x.signum()
    }
}

/// The result of a unary elementwise op on `a` with result shape `shape`.
pub(crate) fn unary(
    op: Opcode,
    a: &ArrayLiteral,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let ty = a.element_type();
    let bits = ty.bit_width().unwrap_or(8);
    let unsupported =
        || EvalError::invalid(what, format!("{} is not defined on {ty}", op.as_str()));
    let d = a.data();
    if ty.is_complex() {
        let r = complex::unary(op, d);
        return make(shape, r.ok_or_else(unsupported)?, what);
    }
    if ty.is_float() {
        if op == Opcode::IsFinite {
            let v = float_values(d, ty).ok_or_else(unsupported)?;
            return make(
                shape,
                ArrayData::Pred(v.iter().map(|x| x.is_finite()).collect()),
                what,
            );
        }
        if matches!(op, Opcode::Real) {
            return make(shape, d.clone(), what);
        }
        if matches!(op, Opcode::Imag) {
            return make(
                shape,
                map_float(d, ty, |_| 0.0).ok_or_else(unsupported)?,
                what,
            );
        }
        let f: fn(f64) -> f64 = match op {
            Opcode::Abs => f64::abs,
            Opcode::Negate => |x| -x,
            Opcode::Exp => f64::exp,
            Opcode::Expm1 => f64::exp_m1,
            Opcode::Log => f64::ln,
            Opcode::Log1p => f64::ln_1p,
            Opcode::Sqrt => f64::sqrt,
            Opcode::Rsqrt => |x| 1.0 / x.sqrt(),
            Opcode::Cbrt => f64::cbrt,
            Opcode::Sin => f64::sin,
            Opcode::Cos => f64::cos,
            Opcode::Tan => f64::tan,
            Opcode::Tanh => f64::tanh,
            Opcode::Sinh => f64::sinh,
            Opcode::Cosh => f64::cosh,
            Opcode::Asin => f64::asin,
            Opcode::Acos => f64::acos,
            Opcode::Atan => f64::atan,
            Opcode::Asinh => f64::asinh,
            Opcode::Acosh => f64::acosh,
            Opcode::Atanh => f64::atanh,
            Opcode::Floor => f64::floor,
            Opcode::Ceil => f64::ceil,
            Opcode::RoundNearestAfz => round_afz,
            Opcode::RoundNearestEven => f64::round_ties_even,
            Opcode::Sign => float_sign,
            Opcode::Logistic => |x| 1.0 / (1.0 + (-x).exp()),
            Opcode::Erf => erf,
            Opcode::Copy => |x| x,
            _ => return Err(unsupported()),
        };
        // Exact ops keep NaN payloads and need no rounding: operate on bits.
        if op == Opcode::Negate || op == Opcode::Abs {
            return make(
                shape,
                sign_bit_op(d, ty, op == Opcode::Negate).ok_or_else(unsupported)?,
                what,
            );
        }
        return make(shape, map_float(d, ty, f).ok_or_else(unsupported)?, what);
    }
    if ty == ElementType::Pred {
        let ArrayData::Pred(v) = d else {
            return Err(unsupported());
        };
        let r: Vec<bool> = match op {
            Opcode::Not => v.iter().map(|x| !x).collect(),
            Opcode::Copy | Opcode::Abs => v.clone(),
            _ => return Err(unsupported()),
        };
        return make(shape, ArrayData::Pred(r), what);
    }
    let r = match op {
        Opcode::Negate => {
            map_int!(d, bits, v => v.iter().map(|x| x.wneg()).collect(), return Err(unsupported()))
        }
        Opcode::Abs => {
            map_int!(d, bits, v => v.iter().map(|x| x.wabs()).collect(), return Err(unsupported()))
        }
        Opcode::Not => {
            map_int!(d, bits, v => v.iter().map(|x| x.bnot()).collect(), return Err(unsupported()))
        }
        Opcode::Sign => {
            map_int!(d, bits, v => v.iter().map(|x| x.sign()).collect(), return Err(unsupported()))
        }
        Opcode::PopulationCount => {
            map_int!(d, bits, v => v.iter().map(|x| x.popcnt(bits)).collect(), return Err(unsupported()))
        }
        Opcode::Clz => {
            map_int!(d, bits, v => v.iter().map(|x| x.clz(bits)).collect(), return Err(unsupported()))
        }
        Opcode::Copy => d.clone(),
        _ => return Err(unsupported()),
    };
    make(shape, r, what)
}

/// Negate or abs by flipping/clearing the sign bit (exact, keeps NaN payloads).
fn sign_bit_op(d: &ArrayData, ty: ElementType, negate: bool) -> Option<ArrayData> {
    let bits = ty.bit_width()?;
    let sign = 1u64 << (bits - 1);
    let f = |b: u64| if negate { b ^ sign } else { b & !sign };
    Some(match d {
        ArrayData::F32(v) => ArrayData::F32(
            v.iter()
                .map(|x| f32::from_bits(f(u64::from(x.to_bits())) as u32))
                .collect(),
        ),
        ArrayData::F64(v) => {
            ArrayData::F64(v.iter().map(|x| f64::from_bits(f(x.to_bits()))).collect())
        }
        ArrayData::Bits16(v) => {
            ArrayData::Bits16(v.iter().map(|&x| f(u64::from(x)) as u16).collect())
        }
        ArrayData::Bits8(v) => {
            // Formats without a sign bit or with an unsigned zero go through the value.
            let c = SmallFloat::of(ty)?;
            ArrayData::Bits8(
                v.iter()
                    .map(|&x| {
                        let y = c.decode(u32::from(x));
                        c.encode_f64_direct(if negate { -y } else { y.abs() }) as u8
                    })
                    .collect(),
            )
        }
        _ => return None,
    })
}

/// XLA's float maximum: NaN if either is NaN; `+0 > -0`.
pub(crate) fn fmax(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_negative() {
            b
        } else {
            a
        }
    } else if a > b {
        a
    } else {
        b
    }
}

/// XLA's float minimum: NaN if either is NaN; `-0 < +0`.
pub(crate) fn fmin(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else if a < b {
        a
    } else {
        b
    }
}

/// The result of a binary elementwise op (operands of equal shapes).
pub(crate) fn binary(
    op: Opcode,
    a: &ArrayLiteral,
    b: &ArrayLiteral,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let ty = a.element_type();
    if b.element_type() != ty && op != Opcode::Complex {
        return Err(EvalError::invalid(
            what,
            format!("operand types differ: {ty} and {}", b.element_type()),
        ));
    }
    if a.data().len() != b.data().len() {
        return Err(EvalError::invalid(what, "operand shapes differ"));
    }
    let bits = ty.bit_width().unwrap_or(8);
    let unsupported =
        || EvalError::invalid(what, format!("{} is not defined on {ty}", op.as_str()));
    let (x, y) = (a.data(), b.data());
    if op == Opcode::Complex {
        let r = match (x, y) {
            (ArrayData::F32(p), ArrayData::F32(q)) => {
                ArrayData::C64(p.iter().zip(q).map(|(&r, &i)| [r, i]).collect())
            }
            (ArrayData::F64(p), ArrayData::F64(q)) => {
                ArrayData::C128(p.iter().zip(q).map(|(&r, &i)| [r, i]).collect())
            }
            _ => return Err(unsupported()),
        };
        return make(shape, r, what);
    }
    if ty.is_complex() {
        let r = complex::binary(op, x, y);
        return make(shape, r.ok_or_else(unsupported)?, what);
    }
    if ty.is_float() {
        let f: fn(f64, f64) -> f64 = match op {
            Opcode::Add => |p, q| p + q,
            Opcode::Subtract => |p, q| p - q,
            Opcode::Multiply => |p, q| p * q,
            Opcode::Divide => |p, q| p / q,
            Opcode::Remainder => |p, q| p % q,
            Opcode::Maximum => fmax,
            Opcode::Minimum => fmin,
            Opcode::Power => f64::powf,
            Opcode::Atan2 => f64::atan2,
            _ => return Err(unsupported()),
        };
        return make(shape, zip_float(x, y, ty, f).ok_or_else(unsupported)?, what);
    }
    if ty == ElementType::Pred {
        let (ArrayData::Pred(p), ArrayData::Pred(q)) = (x, y) else {
            return Err(unsupported());
        };
        let f: fn(bool, bool) -> bool = match op {
            Opcode::And | Opcode::Minimum | Opcode::Multiply => |a, b| a & b,
            Opcode::Or | Opcode::Maximum | Opcode::Add => |a, b| a | b,
            Opcode::Xor | Opcode::Subtract => |a, b| a ^ b,
            _ => return Err(unsupported()),
        };
        return make(
            shape,
            ArrayData::Pred(p.iter().zip(q).map(|(&a, &b)| f(a, b)).collect()),
            what,
        );
    }
    macro_rules! int_op {
        ($f:expr) => {
            zip_int!(x, y, bits, p, q => p.iter().zip(q).map(|(&a, &b)| $f(a, b)).collect(), return Err(unsupported()))
        };
    }
    let r = match op {
        Opcode::Add => int_op!(Int::wadd),
        Opcode::Subtract => int_op!(Int::wsub),
        Opcode::Multiply => int_op!(Int::wmul),
        Opcode::Divide => int_op!(Int::xdiv),
        Opcode::Remainder => int_op!(Int::xrem),
        Opcode::Maximum => int_op!(std::cmp::max),
        Opcode::Minimum => int_op!(std::cmp::min),
        Opcode::And => int_op!(Int::band),
        Opcode::Or => int_op!(Int::bor),
        Opcode::Xor => int_op!(Int::bxor),
        Opcode::Power => int_op!(Int::xpow),
        Opcode::ShiftLeft => int_op!(|a: _, b| Int::shl_x(a, b, bits)),
        Opcode::ShiftRightLogical => int_op!(|a: _, b| Int::shr_logical(a, b, bits)),
        Opcode::ShiftRightArithmetic => int_op!(|a: _, b| Int::shr_arith(a, b, bits)),
        _ => return Err(unsupported()),
    };
    make(shape, r, what)
}

/// The total-order key of a float: `-NaN < -inf < ... < -0 < +0 < ... < inf < NaN`.
fn total_key(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ (((b >> 63) as u64) >> 1) as i64
}

/// The total-order key of a 16-bit float: sign, then the other bits as an integer.
fn small_total_key(bits: u16) -> i32 {
    let magnitude = i32::from(bits & 0x7fff);
    if bits & 0x8000 != 0 {
        -magnitude - 1
    } else {
        magnitude
    }
}

/// `compare` with a direction and comparison type.
pub(crate) fn compare(
    a: &ArrayLiteral,
    b: &ArrayLiteral,
    dir: ComparisonDirection,
    cmp_type: Option<ComparisonType>,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    use std::cmp::Ordering;
    let ty = a.element_type();
    if b.element_type() != ty || a.data().len() != b.data().len() {
        return Err(EvalError::invalid(
            what,
            "compare operands differ in type or shape",
        ));
    }
    let holds = |o: Ordering| match dir {
        ComparisonDirection::Eq => o == Ordering::Equal,
        ComparisonDirection::Ne => o != Ordering::Equal,
        ComparisonDirection::Lt => o == Ordering::Less,
        ComparisonDirection::Le => o != Ordering::Greater,
        ComparisonDirection::Gt => o == Ordering::Greater,
        ComparisonDirection::Ge => o != Ordering::Less,
    };
    fn ords<T: Copy>(x: &[T], y: &[T], f: impl Fn(T, T) -> bool) -> Vec<bool> {
        x.iter().zip(y).map(|(&p, &q)| f(p, q)).collect()
    }
    let r: Vec<bool> = if ty.is_complex() {
        let eq: Vec<bool> = match (a.data(), b.data()) {
            (ArrayData::C64(x), ArrayData::C64(y)) => {
                ords(x, y, |p, q| p[0] == q[0] && p[1] == q[1])
            }
            (ArrayData::C128(x), ArrayData::C128(y)) => {
                ords(x, y, |p, q| p[0] == q[0] && p[1] == q[1])
            }
            _ => return Err(EvalError::invalid(what, "bad complex data")),
        };
        match dir {
            ComparisonDirection::Eq => eq,
            ComparisonDirection::Ne => eq.iter().map(|e| !e).collect(),
            _ => {
                return Err(EvalError::invalid(
                    what,
                    "complex values compare only EQ or NE",
                ))
            }
        }
    } else if ty.is_float() {
        let total = cmp_type == Some(ComparisonType::TotalOrder);
        match (a.data(), b.data()) {
            (ArrayData::F32(x), ArrayData::F32(y)) if !total => ords(x, y, |p, q| {
                p.partial_cmp(&q).is_some_and(holds)
                    || (dir == ComparisonDirection::Ne && (p.is_nan() || q.is_nan()))
            }),
            (ArrayData::F64(x), ArrayData::F64(y)) if !total => ords(x, y, |p, q| {
                p.partial_cmp(&q).is_some_and(holds)
                    || (dir == ComparisonDirection::Ne && (p.is_nan() || q.is_nan()))
            }),
            (ArrayData::F32(x), ArrayData::F32(y)) => ords(x, y, |p, q| holds(p.total_cmp(&q))),
            (ArrayData::F64(x), ArrayData::F64(y)) => ords(x, y, |p, q| holds(p.total_cmp(&q))),
            // f16 and bf16 in total order compare their bits (sign, then magnitude), so a
            // NaN's quiet bit and payload count, as in XLA; widening would set the quiet bit.
            (ArrayData::Bits16(x), ArrayData::Bits16(y)) if total => ords(x, y, |p, q| {
                holds(small_total_key(p).cmp(&small_total_key(q)))
            }),
            (p, q) => {
                let x = float_values(p, ty)
                    .ok_or_else(|| EvalError::invalid(what, "bad float data"))?;
                let y = float_values(q, ty)
                    .ok_or_else(|| EvalError::invalid(what, "bad float data"))?;
                if total {
                    ords(&x, &y, |p, q| holds(total_key(p).cmp(&total_key(q))))
                } else {
                    ords(&x, &y, |p, q| {
                        p.partial_cmp(&q).is_some_and(holds)
                            || (dir == ComparisonDirection::Ne && (p.is_nan() || q.is_nan()))
                    })
                }
            }
        }
    } else {
        let unsigned = cmp_type == Some(ComparisonType::Unsigned);
        let signed = cmp_type == Some(ComparisonType::Signed);
        macro_rules! int_cmp {
            ($x:expr, $y:expr) => {
                ords($x, $y, |p, q| {
                    let o = if unsigned {
                        (Int::ubits(p) & super::scalar::mask(ty.bit_width().unwrap_or(64))).cmp(
                            &(Int::ubits(q) & super::scalar::mask(ty.bit_width().unwrap_or(64))),
                        )
                    } else if signed {
                        let w = ty.bit_width().unwrap_or(64);
                        wrap_to_width(Int::to_i128(p) as i64, w)
                            .cmp(&wrap_to_width(Int::to_i128(q) as i64, w))
                    } else {
                        p.cmp(&q)
                    };
                    holds(o)
                })
            };
        }
        match (a.data(), b.data()) {
            (ArrayData::Pred(x), ArrayData::Pred(y)) => ords(x, y, |p, q| holds(p.cmp(&q))),
            (ArrayData::S8(x), ArrayData::S8(y)) => int_cmp!(x, y),
            (ArrayData::S16(x), ArrayData::S16(y)) => int_cmp!(x, y),
            (ArrayData::S32(x), ArrayData::S32(y)) => int_cmp!(x, y),
            (ArrayData::S64(x), ArrayData::S64(y)) => int_cmp!(x, y),
            (ArrayData::U8(x), ArrayData::U8(y)) => int_cmp!(x, y),
            (ArrayData::U16(x), ArrayData::U16(y)) => int_cmp!(x, y),
            (ArrayData::U32(x), ArrayData::U32(y)) => int_cmp!(x, y),
            (ArrayData::U64(x), ArrayData::U64(y)) => int_cmp!(x, y),
            _ => return Err(EvalError::invalid(what, "bad integer data")),
        }
    };
    make(shape, ArrayData::Pred(r), what)
}

/// `select(pred, on_true, on_false)`; `pred` may be a scalar.
pub(crate) fn select(
    p: &ArrayLiteral,
    t: &ArrayLiteral,
    f: &ArrayLiteral,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let ArrayData::Pred(pv) = p.data() else {
        return Err(EvalError::invalid(what, "select predicate must be pred"));
    };
    let n = t.data().len();
    if f.data().len() != n || (pv.len() != n && pv.len() != 1) {
        return Err(EvalError::invalid(what, "select operand shapes differ"));
    }
    let scalar = pv.len() == 1 && n != 1;
    let mismatch = EvalError::invalid(what, "select branches differ in type");
    let r = super::data::zip_data!(t.data(), f.data(), x, y => x.iter().zip(y).enumerate()
        .map(|(i, (&a, &b))| if pv[if scalar { 0 } else { i }] { a } else { b }).collect(), mismatch);
    make(shape, r, what)
}

/// `clamp(min, x, max)`; `min` and `max` may be scalars. Floats propagate NaN.
pub(crate) fn clamp(
    lo: &ArrayLiteral,
    x: &ArrayLiteral,
    hi: &ArrayLiteral,
    shape: &Shape,
    what: &str,
) -> Result<Literal, EvalError> {
    let n = x.data().len();
    let expand = |a: &ArrayLiteral| -> Result<ArrayLiteral, EvalError> {
        if a.data().len() == n {
            Ok(a.clone())
        } else if a.data().len() == 1 {
            let data = super::data::splat(a.data(), 0, n);
            match make(x.shape(), data, what)? {
                Literal::Array(l) => Ok(l),
                _ => Err(EvalError::invalid(what, "internal: clamp bound")),
            }
        } else {
            Err(EvalError::invalid(
                what,
                "clamp bounds must be scalars or of the operand's shape",
            ))
        }
    };
    let (lo, hi) = (expand(lo)?, expand(hi)?);
    let x_shape = x.shape().clone();
    let m = binary(Opcode::Maximum, x, &lo, &x_shape, what)?;
    let m = super::data::array(&m, what)?.clone();
    binary(Opcode::Minimum, &m, &hi, shape, what)
}
