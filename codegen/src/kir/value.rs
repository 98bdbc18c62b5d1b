//! Scalar values of the kernel IR: constants, variables, index values, loads and the
//! operations of every element type.

use affine::Expr;

use super::types::ScalarType;

/// A let-bound or accumulator scalar variable of a kernel (`v0`, `v1`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// A constant scalar. Floats keep their value as an `f64` (exact for every type here);
/// `f16`/`bf16` constants are rounded to their type by the printer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    /// `pred` value.
    Bool(bool),
    /// An integer (fits its type).
    Int(i128),
    /// A float.
    Float(f64),
    /// A complex number (real, imaginary).
    Complex(f64, f64),
}

/// Unary operations. Semantics follow HLO (see the C prelude for the exact definitions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// `-x` (wrapping for integers).
    Neg,
    /// `|x|` (wrapping: `|MIN| = MIN`).
    Abs,
    /// Logical not for `pred`, bitwise not for integers.
    Not,
    /// `e^x`.
    Exp,
    /// `e^x - 1`.
    Expm1,
    /// Natural logarithm.
    Log,
    /// `log(1 + x)`.
    Log1p,
    /// Square root.
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// Cube root.
    Cbrt,
    /// Sine.
    Sin,
    /// Cosine.
    Cos,
    /// Tangent.
    Tan,
    /// Hyperbolic tangent.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Logistic,
    /// Error function.
    Erf,
    /// Round toward negative infinity.
    Floor,
    /// Round toward positive infinity.
    Ceil,
    /// Round half away from zero.
    RoundAfz,
    /// Round half to even.
    RoundEven,
    /// -1, 0 or 1 (floats keep signed zeros and NaN).
    Sign,
    /// Population count.
    Popcnt,
    /// Count leading zeros.
    Clz,
    /// Finite (not NaN nor infinite): gives `pred`.
    IsFinite,
    /// The real part of a complex value.
    Real,
    /// The imaginary part of a complex value.
    Imag,
}

/// Binary operations on two values of one type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// Addition (wrapping for integers; or for `pred`).
    Add,
    /// Subtraction (wrapping; xor for `pred`).
    Sub,
    /// Multiplication (wrapping; and for `pred`).
    Mul,
    /// Division: integers truncate, `x / 0 = -1`, `MIN / -1 = MIN`.
    Div,
    /// Remainder with the dividend's sign: `x % 0 = x`, `MIN % -1 = 0`.
    Rem,
    /// Maximum (NaN-propagating for floats).
    Max,
    /// Minimum (NaN-propagating for floats).
    Min,
    /// Power (integers: negative exponents give 0 unless the base is 1).
    Pow,
    /// `atan2(y, x)`.
    Atan2,
    /// Bitwise/logical and.
    And,
    /// Bitwise/logical or.
    Or,
    /// Bitwise/logical xor.
    Xor,
    /// Left shift; amounts `>=` the bit width give 0.
    Shl,
    /// Logical right shift; amounts `>=` the bit width give 0.
    ShrLogical,
    /// Arithmetic right shift; amounts `>=` the bit width fill with the sign.
    ShrArith,
    /// A complex value from its real and imaginary parts (operands of the part type;
    /// `ty` is the complex type).
    Complex,
}

/// Comparison directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

/// A conjunction of index conditions `lo <= e <= hi` (true when empty).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Guard {
    /// The conditions.
    pub conds: Vec<(Expr, i64, i64)>,
}

impl Guard {
    /// True when the guard has no condition.
    pub fn is_true(&self) -> bool {
        self.conds.is_empty()
    }
}

/// A scalar expression. Every node knows its type ([`Value::ty`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A constant of a type.
    Const(ScalarType, Const),
    /// A scalar variable.
    Var(VarId, ScalarType),
    /// An index expression over loop and runtime variables, as an `s64`.
    Index(Expr),
    /// Element `offset` (in elements, physical order) of buffer parameter `buf`.
    Load {
        /// Buffer parameter number.
        buf: usize,
        /// Element offset.
        offset: Expr,
        /// The buffer's element type.
        ty: ScalarType,
    },
    /// Element `offset` of local array `local`.
    LocalLoad {
        /// Local array number.
        local: usize,
        /// Element offset.
        offset: Expr,
        /// The array's element type.
        ty: ScalarType,
    },
    /// A unary operation; `ty` is the result type.
    Unary(UnOp, Box<Value>, ScalarType),
    /// A binary operation on two values of type `ty` (the result type).
    Binary(BinOp, Box<Value>, Box<Value>, ScalarType),
    /// A comparison (result `pred`); `total` selects the float total order.
    Compare(CmpOp, bool, Box<Value>, Box<Value>),
    /// `pred ? a : b`, both sides evaluated (no side effects, no out-of-range loads).
    Select(Box<Value>, Box<Value>, Box<Value>),
    /// `guard ? a : b`, only the chosen side evaluated (its loads may be out of range
    /// otherwise).
    Cond(Guard, Box<Value>, Box<Value>),
    /// HLO `convert` to a type.
    Convert(Box<Value>, ScalarType),
    /// Reinterpretation of the bits as another type of the same width.
    BitcastConvert(Box<Value>, ScalarType),
}

impl Value {
    /// The value's type.
    pub fn ty(&self) -> ScalarType {
        match self {
            Value::Const(t, _) | Value::Var(_, t) => *t,
            Value::Index(_) => ScalarType::S64,
            Value::Load { ty, .. } | Value::LocalLoad { ty, .. } => *ty,
            Value::Unary(_, _, t) | Value::Binary(_, _, _, t) => *t,
            Value::Compare(..) => ScalarType::Pred,
            Value::Select(_, a, _) | Value::Cond(_, a, _) => a.ty(),
            Value::Convert(_, t) | Value::BitcastConvert(_, t) => *t,
        }
    }

    /// Number of nodes (to refuse exploding expression trees).
    pub fn size(&self) -> usize {
        match self {
            Value::Const(..)
            | Value::Var(..)
            | Value::Index(_)
            | Value::Load { .. }
            | Value::LocalLoad { .. } => 1,
            Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
                1 + a.size()
            }
            Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => {
                1 + a.size() + b.size()
            }
            Value::Select(p, a, b) => 1 + p.size() + a.size() + b.size(),
        }
    }

    /// Whether the value reads scalar variable `id`.
    pub fn reads(&self, id: VarId) -> bool {
        match self {
            Value::Var(v, _) => *v == id,
            Value::Const(..) | Value::Index(_) | Value::Load { .. } | Value::LocalLoad { .. } => {
                false
            }
            Value::Unary(_, a, _) | Value::Convert(a, _) | Value::BitcastConvert(a, _) => {
                a.reads(id)
            }
            Value::Binary(_, a, b, _) | Value::Compare(_, _, a, b) | Value::Cond(_, a, b) => {
                a.reads(id) || b.reads(id)
            }
            Value::Select(p, a, b) => p.reads(id) || a.reads(id) || b.reads(id),
        }
    }

    /// True for leaves that are cheap to repeat (no need to bind them to a variable).
    pub fn is_trivial(&self) -> bool {
        matches!(self, Value::Const(..) | Value::Var(..))
    }
}
