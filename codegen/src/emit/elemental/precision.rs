//! `reduce-precision` in the elemental emitter, built from integer operations on a
//! float's bits.

use super::*;

/// XLA's `reduce-precision` of an `f32` or `f64` value as integer operations on its
/// bits: round the mantissa to `man` bits (to nearest even), then flush exponents
/// outside the reduced range to zero or infinity; NaN stays NaN (infinity when no
/// mantissa bit is left).
pub(super) fn reduce_precision(
    x: Value,
    exp_bits: i64,
    man: i64,
    bind: &mut dyn FnMut(Value) -> Value,
) -> Value {
    use crate::kir::{BinOp as B, CmpOp};
    let ft = x.ty();
    let (it, total, mb): (ScalarType, u32, u32) = if ft == ScalarType::F64 {
        (ScalarType::U64, 64, 52)
    } else {
        (ScalarType::U32, 32, 23)
    };
    let mask = if total == 64 {
        u64::MAX
    } else {
        (1u64 << total) - 1
    };
    let c = |v: u64| Value::Const(it, Const::Int(i128::from(v & mask)));
    let bin = |op: B, a: Value, b: Value| Value::Binary(op, Box::new(a), Box::new(b), it);
    let mut v = bind(Value::BitcastConvert(Box::new(x.clone()), it));
    if man < i64::from(mb) {
        let shift = mb - man as u32;
        let last = 1u64 << shift;
        let base = (last >> 1).wrapping_sub(1);
        let x_last = bin(
            B::ShrLogical,
            bin(B::And, v.clone(), c(last)),
            c(u64::from(shift)),
        );
        v = bind(bin(
            B::And,
            bin(B::Add, bin(B::Add, v, x_last), c(base)),
            c(!(last - 1)),
        ));
    }
    let fp_exp_bits = total - 1 - mb;
    if exp_bits < i64::from(fp_exp_bits) {
        let sign = 1u64 << (total - 1);
        let exp_mask = ((1u64 << fp_exp_bits) - 1) << mb;
        let bias = (1u64 << (fp_exp_bits - 1)) - 1;
        let reduced_bias = (1u64 << (exp_bits.max(1) - 1)) - 1;
        let (max_e, min_e) = (bias + reduced_bias, bias - reduced_bias);
        let e = bind(bin(B::And, v.clone(), c(exp_mask)));
        let over = Value::Compare(
            CmpOp::Gt,
            false,
            Box::new(e.clone()),
            Box::new(c(max_e << mb)),
        );
        let under = Value::Compare(CmpOp::Le, false, Box::new(e), Box::new(c(min_e << mb)));
        let signed = bind(bin(B::And, v.clone(), c(sign)));
        v = Value::Select(
            Box::new(over),
            Box::new(bin(B::Or, signed.clone(), c(exp_mask))),
            Box::new(Value::Select(
                Box::new(under),
                Box::new(signed),
                Box::new(v),
            )),
        );
    }
    let r = Value::BitcastConvert(Box::new(v), ft);
    let is_nan = Value::Compare(CmpOp::Ne, false, Box::new(x.clone()), Box::new(x.clone()));
    let nan = if man > 0 {
        x
    } else {
        Value::Const(ft, Const::Float(f64::INFINITY))
    };
    Value::Select(Box::new(is_nan), Box::new(nan), Box::new(r))
}
