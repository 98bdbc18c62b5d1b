//! Native combination for the scalar reducer computations [`hlo::ir::reducer::classify`]
//! recognises (`add`, `multiply`, `maximum`, ... of the two parameters), so that
//! reduce-window, scatter and select-and-scatter combine values directly instead of calling
//! the computation once per element.

use super::widen::{bf16_to_f32, f32_to_bf16, f64_to_small, small_to_f64};
use super::KernelError;
use hlo::ir::reducer::Reducer;
use hlo::literal::minifloat::MiniFloat;
use hlo::literal::ArrayData;
use hlo::shape::ElementType;

fn float_op(r: Reducer, a: f64, b: f64) -> Option<f64> {
    Some(match r {
        Reducer::Add => a + b,
        Reducer::Mul => a * b,
        Reducer::Max => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        }
        Reducer::Min => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        }
        Reducer::And | Reducer::Or | Reducer::Xor => return None,
    })
}

fn f32_op(r: Reducer, a: f32, b: f32) -> Option<f32> {
    Some(match r {
        Reducer::Add => a + b,
        Reducer::Mul => a * b,
        Reducer::Max => {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else {
                a.max(b)
            }
        }
        Reducer::Min => {
            if a.is_nan() || b.is_nan() {
                f32::NAN
            } else {
                a.min(b)
            }
        }
        Reducer::And | Reducer::Or | Reducer::Xor => return None,
    })
}

macro_rules! int_op {
    ($r:expr, $a:expr, $b:expr) => {
        match $r {
            Reducer::Add => $a.wrapping_add($b),
            Reducer::Mul => $a.wrapping_mul($b),
            Reducer::Max => $a.max($b),
            Reducer::Min => $a.min($b),
            Reducer::And => $a & $b,
            Reducer::Or => $a | $b,
            Reducer::Xor => $a ^ $b,
        }
    };
}

/// `acc[ai] = r(acc[ai], src[si])` for element type `ty` (both of the same storage).
pub(crate) fn combine(
    r: Reducer,
    ty: ElementType,
    acc: &mut ArrayData,
    ai: usize,
    src: &ArrayData,
    si: usize,
) -> Result<(), KernelError> {
    let bad = || KernelError::Unsupported(format!("reducer {r:?} on {ty}"));
    match (acc, src) {
        (ArrayData::Pred(a), ArrayData::Pred(s)) => {
            let (x, y) = (a[ai], s[si]);
            a[ai] = match r {
                Reducer::Add | Reducer::Or | Reducer::Max => x | y,
                Reducer::Mul | Reducer::And | Reducer::Min => x & y,
                Reducer::Xor => x ^ y,
            };
        }
        (ArrayData::S8(a), ArrayData::S8(s)) => {
            let v = int_op!(r, a[ai], s[si]);
            // Narrow signed types wrap within their width.
            let bits = ty.bit_width().unwrap_or(8);
            let shift = 8 - bits;
            a[ai] = (v << shift) >> shift;
        }
        (ArrayData::S16(a), ArrayData::S16(s)) => a[ai] = int_op!(r, a[ai], s[si]),
        (ArrayData::S32(a), ArrayData::S32(s)) => a[ai] = int_op!(r, a[ai], s[si]),
        (ArrayData::S64(a), ArrayData::S64(s)) => a[ai] = int_op!(r, a[ai], s[si]),
        (ArrayData::U8(a), ArrayData::U8(s)) => {
            let v = int_op!(r, a[ai], s[si]);
            let bits = ty.bit_width().unwrap_or(8);
            a[ai] = if bits >= 8 {
                v
            } else {
                v & ((1u8 << bits) - 1)
            };
        }
        (ArrayData::U16(a), ArrayData::U16(s)) => a[ai] = int_op!(r, a[ai], s[si]),
        (ArrayData::U32(a), ArrayData::U32(s)) => a[ai] = int_op!(r, a[ai], s[si]),
        (ArrayData::U64(a), ArrayData::U64(s)) => a[ai] = int_op!(r, a[ai], s[si]),
        (ArrayData::F32(a), ArrayData::F32(s)) => {
            a[ai] = f32_op(r, a[ai], s[si]).ok_or_else(bad)?
        }
        (ArrayData::F64(a), ArrayData::F64(s)) => {
            a[ai] = float_op(r, a[ai], s[si]).ok_or_else(bad)?
        }
        (ArrayData::Bits16(a), ArrayData::Bits16(s)) if ty == ElementType::BF16 => {
            let v = f32_op(r, bf16_to_f32(a[ai]), bf16_to_f32(s[si])).ok_or_else(bad)?;
            a[ai] = f32_to_bf16(v);
        }
        (ArrayData::Bits16(a), ArrayData::Bits16(s)) => {
            // Computed in f32 and rounded once, as XLA:CPU does for f16.
            let x = small_to_f64(ty, u32::from(a[ai])) as f32;
            let y = small_to_f64(ty, u32::from(s[si])) as f32;
            let v = f32_op(r, x, y).ok_or_else(bad)?;
            a[ai] = f64_to_small(ty, f64::from(v)) as u16;
        }
        (ArrayData::Bits8(a), ArrayData::Bits8(s)) => {
            let m = MiniFloat::of(ty).ok_or_else(bad)?;
            let x = m.decode(u32::from(a[ai])) as f32;
            let y = m.decode(u32::from(s[si])) as f32;
            let v = f32_op(r, x, y).ok_or_else(bad)?;
            a[ai] = f64_to_small(ty, f64::from(v)) as u8;
        }
        (ArrayData::C64(a), ArrayData::C64(s)) => {
            let (x, y) = (a[ai], s[si]);
            a[ai] = match r {
                Reducer::Add => [x[0] + y[0], x[1] + y[1]],
                Reducer::Mul => [x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]],
                _ => return Err(bad()),
            };
        }
        (ArrayData::C128(a), ArrayData::C128(s)) => {
            let (x, y) = (a[ai], s[si]);
            a[ai] = match r {
                Reducer::Add => [x[0] + y[0], x[1] + y[1]],
                Reducer::Mul => [x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]],
                _ => return Err(bad()),
            };
        }
        _ => {
            return Err(KernelError::Invalid(format!(
                "reducer {r:?}: operand storage does not match {ty}"
            )))
        }
    }
    Ok(())
}
