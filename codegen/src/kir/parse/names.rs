//! The names of the text form: scalar types and operators.

use crate::kir::types::ScalarType;
use crate::kir::value::{BinOp, CmpOp, UnOp};

pub(super) fn scalar_type(name: &str) -> Option<ScalarType> {
    use ScalarType as T;
    Some(match name {
        "pred" => T::Pred,
        "s8" => T::S8,
        "s16" => T::S16,
        "s32" => T::S32,
        "s64" => T::S64,
        "u8" => T::U8,
        "u16" => T::U16,
        "u32" => T::U32,
        "u64" => T::U64,
        "f16" => T::F16,
        "bf16" => T::BF16,
        "f32" => T::F32,
        "f64" => T::F64,
        "f8e4m3fn" => T::F8E4M3FN,
        "f8e5m2" => T::F8E5M2,
        "c64" => T::C64,
        "c128" => T::C128,
        _ => return None,
    })
}

pub(super) fn unop(name: &str) -> Option<UnOp> {
    use UnOp as U;
    Some(match name {
        "neg" => U::Neg,
        "abs" => U::Abs,
        "not" => U::Not,
        "exp" => U::Exp,
        "expm1" => U::Expm1,
        "log" => U::Log,
        "log1p" => U::Log1p,
        "sqrt" => U::Sqrt,
        "rsqrt" => U::Rsqrt,
        "cbrt" => U::Cbrt,
        "sin" => U::Sin,
        "cos" => U::Cos,
        "tan" => U::Tan,
        "tanh" => U::Tanh,
        "logistic" => U::Logistic,
        "erf" => U::Erf,
        "floor" => U::Floor,
        "ceil" => U::Ceil,
        "round_afz" => U::RoundAfz,
        "round_even" => U::RoundEven,
        "sign" => U::Sign,
        "popcnt" => U::Popcnt,
        "clz" => U::Clz,
        "is_finite" => U::IsFinite,
        "real" => U::Real,
        "imag" => U::Imag,
        _ => return None,
    })
}

pub(super) fn binop(name: &str) -> Option<BinOp> {
    use BinOp as B;
    Some(match name {
        "add" => B::Add,
        "sub" => B::Sub,
        "mul" => B::Mul,
        "div" => B::Div,
        "rem" => B::Rem,
        "max" => B::Max,
        "min" => B::Min,
        "pow" => B::Pow,
        "atan2" => B::Atan2,
        "and" => B::And,
        "or" => B::Or,
        "xor" => B::Xor,
        "shl" => B::Shl,
        "shr_logical" => B::ShrLogical,
        "shr_arith" => B::ShrArith,
        "complex" => B::Complex,
        _ => return None,
    })
}

pub(super) fn cmpop(name: &str) -> Option<CmpOp> {
    Some(match name {
        "eq" => CmpOp::Eq,
        "ne" => CmpOp::Ne,
        "lt" => CmpOp::Lt,
        "le" => CmpOp::Le,
        "gt" => CmpOp::Gt,
        "ge" => CmpOp::Ge,
        _ => return None,
    })
}

/// The result type of a unary operation on a value of type `a` (as the emitters build
/// them and the verifier accepts them).
pub(super) fn unop_type(op: UnOp, a: ScalarType) -> ScalarType {
    match op {
        UnOp::Real | UnOp::Imag => a.component(),
        UnOp::Abs if a.is_complex() => a.component(),
        UnOp::IsFinite => ScalarType::Pred,
        _ => a,
    }
}
