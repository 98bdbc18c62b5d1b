//! HLO elementwise opcodes as kernel-IR scalar operations, and which of them the kernels
//! compute on complex values.

use hlo::Opcode;

use crate::kir::{BinOp, CmpOp, UnOp};

/// Whether the elemental emitter computes `op` (the table its dispatch follows: an op
/// outside it is `Unsupported`, and `codegen::HlocReach` keeps such ops out of fusions).
pub fn computes(op: Opcode) -> bool {
    use Opcode::*;
    unary(op).is_some()
        || binary(op).is_some()
        || matches!(
            op,
            Parameter
                | Constant
                | ReplicaId
                | PartitionId
                | Iota
                | Reduce
                | ReduceWindow
                | Dot
                | Convolution
                | ReducePrecision
                | Broadcast
                | Transpose
                | Reshape
                | Bitcast
                | Slice
                | Reverse
                | Copy
                | DynamicSlice
                | Gather
                | GetTupleElement
                | Tuple
                | Convert
                | BitcastConvert
                | Compare
                | Select
                | Clamp
                | Pad
                | DynamicUpdateSlice
                | Concatenate
                | Map
        )
}

/// The unary operation of an elementwise opcode.
pub fn unary(op: Opcode) -> Option<UnOp> {
    Some(match op {
        Opcode::Negate => UnOp::Neg,
        Opcode::Abs => UnOp::Abs,
        Opcode::Not => UnOp::Not,
        Opcode::Exp => UnOp::Exp,
        Opcode::Expm1 => UnOp::Expm1,
        Opcode::Log => UnOp::Log,
        Opcode::Log1p => UnOp::Log1p,
        Opcode::Sqrt => UnOp::Sqrt,
        Opcode::Rsqrt => UnOp::Rsqrt,
        Opcode::Cbrt => UnOp::Cbrt,
        Opcode::Sin => UnOp::Sin,
        Opcode::Cos => UnOp::Cos,
        Opcode::Tan => UnOp::Tan,
        Opcode::Tanh => UnOp::Tanh,
        Opcode::Logistic => UnOp::Logistic,
        Opcode::Erf => UnOp::Erf,
        Opcode::Floor => UnOp::Floor,
        Opcode::Ceil => UnOp::Ceil,
        Opcode::RoundNearestAfz => UnOp::RoundAfz,
        Opcode::RoundNearestEven => UnOp::RoundEven,
        Opcode::Sign => UnOp::Sign,
        Opcode::PopulationCount => UnOp::Popcnt,
        Opcode::Clz => UnOp::Clz,
        Opcode::IsFinite => UnOp::IsFinite,
        Opcode::Real => UnOp::Real,
        Opcode::Imag => UnOp::Imag,
        _ => return None,
    })
}

/// The binary operation of an elementwise opcode.
pub fn binary(op: Opcode) -> Option<BinOp> {
    Some(match op {
        Opcode::Add => BinOp::Add,
        Opcode::Subtract => BinOp::Sub,
        Opcode::Multiply => BinOp::Mul,
        Opcode::Divide => BinOp::Div,
        Opcode::Remainder => BinOp::Rem,
        Opcode::Maximum => BinOp::Max,
        Opcode::Minimum => BinOp::Min,
        Opcode::Power => BinOp::Pow,
        Opcode::Atan2 => BinOp::Atan2,
        Opcode::And => BinOp::And,
        Opcode::Or => BinOp::Or,
        Opcode::Xor => BinOp::Xor,
        Opcode::ShiftLeft => BinOp::Shl,
        Opcode::ShiftRightLogical => BinOp::ShrLogical,
        Opcode::ShiftRightArithmetic => BinOp::ShrArith,
        Opcode::Complex => BinOp::Complex,
        _ => return None,
    })
}

/// The comparison of a `direction=`.
pub fn compare(dir: hlo::attrs::ComparisonDirection) -> CmpOp {
    use hlo::attrs::ComparisonDirection as D;
    match dir {
        D::Eq => CmpOp::Eq,
        D::Ne => CmpOp::Ne,
        D::Lt => CmpOp::Lt,
        D::Le => CmpOp::Le,
        D::Gt => CmpOp::Gt,
        D::Ge => CmpOp::Ge,
    }
}

/// Whether kernels compute unary operation `u` on complex values (`real`/`imag` of a real
/// value are handled apart).
pub fn unary_on_complex(u: UnOp) -> bool {
    matches!(
        u,
        UnOp::Real
            | UnOp::Imag
            | UnOp::Abs
            | UnOp::Neg
            | UnOp::Exp
            | UnOp::Log
            | UnOp::Sqrt
            | UnOp::Sign
    )
}

/// Whether kernels compute binary operation `b` on complex values.
pub fn binary_on_complex(b: BinOp) -> bool {
    matches!(
        b,
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Complex
    )
}

/// Whether kernels compare complex values in direction `dir` (equality only: complex
/// values have no order).
pub fn compare_on_complex(dir: hlo::attrs::ComparisonDirection) -> bool {
    use hlo::attrs::ComparisonDirection as D;
    matches!(dir, D::Eq | D::Ne)
}
