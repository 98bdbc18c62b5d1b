//! HLO opcodes, spelled as XLA's `hlo_opcode.h` spells them.

use std::fmt;
use std::str::FromStr;

macro_rules! opcodes {
    ($($variant:ident => $name:literal,)*) => {
        /// An HLO opcode. [`Opcode::as_str`] / [`FromStr`] use XLA's text spelling
        /// (`"add"`, `"all-reduce-start"`, `"opt-barrier"`, `"count-leading-zeros"`, ...).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opcode {
            $(#[doc = concat!("`", $name, "`")] $variant,)*
        }

        impl Opcode {
            /// Every opcode, in XLA's (alphabetical) order.
            pub const ALL: &'static [Opcode] = &[$(Opcode::$variant,)*];

            /// The opcode as printed in HLO text.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Opcode::$variant => $name,)*
                }
            }
        }

        impl FromStr for Opcode {
            type Err = UnknownOpcode;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok(Opcode::$variant),)*
                    _ => Err(UnknownOpcode(s.to_string())),
                }
            }
        }
    };
}

opcodes! {
    Abs => "abs",
    Acos => "acos",
    Acosh => "acosh",
    Add => "add",
    AddDependency => "add-dependency",
    AfterAll => "after-all",
    AllGather => "all-gather",
    AllGatherDone => "all-gather-done",
    AllGatherStart => "all-gather-start",
    AllReduce => "all-reduce",
    AllReduceDone => "all-reduce-done",
    AllReduceStart => "all-reduce-start",
    AllToAll => "all-to-all",
    And => "and",
    Asin => "asin",
    Asinh => "asinh",
    AsyncDone => "async-done",
    AsyncStart => "async-start",
    AsyncUpdate => "async-update",
    Atan => "atan",
    Atan2 => "atan2",
    Atanh => "atanh",
    BatchNormGrad => "batch-norm-grad",
    BatchNormInference => "batch-norm-inference",
    BatchNormTraining => "batch-norm-training",
    Bitcast => "bitcast",
    BitcastConvert => "bitcast-convert",
    Broadcast => "broadcast",
    Call => "call",
    Cbrt => "cbrt",
    Ceil => "ceil",
    Cholesky => "cholesky",
    Clamp => "clamp",
    Clz => "count-leading-zeros",
    CollectiveBroadcast => "collective-broadcast",
    CollectivePermute => "collective-permute",
    CollectivePermuteDone => "collective-permute-done",
    CollectivePermuteStart => "collective-permute-start",
    CollectiveReduce => "collective-reduce",
    Compare => "compare",
    Complex => "complex",
    Concatenate => "concatenate",
    Conditional => "conditional",
    Constant => "constant",
    Convert => "convert",
    Convolution => "convolution",
    Copy => "copy",
    CopyDone => "copy-done",
    CopyStart => "copy-start",
    Cos => "cosine",
    Cosh => "cosh",
    CustomCall => "custom-call",
    Divide => "divide",
    Domain => "domain",
    Dot => "dot",
    DynamicReshape => "dynamic-reshape",
    DynamicSlice => "dynamic-slice",
    DynamicUpdateSlice => "dynamic-update-slice",
    Erf => "erf",
    Exp => "exponential",
    Expm1 => "exponential-minus-one",
    Fft => "fft",
    Floor => "floor",
    Fusion => "fusion",
    Gather => "gather",
    GetDimensionSize => "get-dimension-size",
    GetTupleElement => "get-tuple-element",
    Imag => "imag",
    Infeed => "infeed",
    Iota => "iota",
    IsFinite => "is-finite",
    Log => "log",
    Log1p => "log-plus-one",
    Logistic => "logistic",
    Map => "map",
    Maximum => "maximum",
    Minimum => "minimum",
    Mulhi => "mulhi",
    Multiply => "multiply",
    Negate => "negate",
    Not => "not",
    OptimizationBarrier => "opt-barrier",
    Or => "or",
    Outfeed => "outfeed",
    Pad => "pad",
    Parameter => "parameter",
    PartitionId => "partition-id",
    PopulationCount => "popcnt",
    Power => "power",
    RaggedAllToAll => "ragged-all-to-all",
    RaggedDot => "ragged-dot",
    Real => "real",
    Recv => "recv",
    RecvDone => "recv-done",
    Reduce => "reduce",
    ReducePrecision => "reduce-precision",
    ReduceScatter => "reduce-scatter",
    ReduceWindow => "reduce-window",
    Remainder => "remainder",
    ReplicaId => "replica-id",
    Reshape => "reshape",
    Reverse => "reverse",
    Rng => "rng",
    RngBitGenerator => "rng-bit-generator",
    RngGetAndUpdateState => "rng-get-and-update-state",
    RoundNearestAfz => "round-nearest-afz",
    RoundNearestEven => "round-nearest-even",
    Rsqrt => "rsqrt",
    ScaledDot => "scaled-dot",
    Scan => "scan",
    Scatter => "scatter",
    Select => "select",
    SelectAndScatter => "select-and-scatter",
    Send => "send",
    SendDone => "send-done",
    SetDimensionSize => "set-dimension-size",
    ShiftLeft => "shift-left",
    ShiftRightArithmetic => "shift-right-arithmetic",
    ShiftRightLogical => "shift-right-logical",
    Shuffle => "shuffle",
    Sign => "sign",
    Sin => "sine",
    Sinh => "sinh",
    Slice => "slice",
    Sort => "sort",
    Sqrt => "sqrt",
    StochasticConvert => "stochastic-convert",
    Subtract => "subtract",
    Tan => "tan",
    Tanh => "tanh",
    TopK => "topk",
    Transpose => "transpose",
    TriangularSolve => "triangular-solve",
    Tuple => "tuple",
    While => "while",
    Xor => "xor",
}

/// Error of [`Opcode::from_str`]: the text names no opcode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown opcode `{0}`")]
pub struct UnknownOpcode(pub String);

impl Opcode {
    /// True for `async-start`, `async-update` and `async-done`.
    pub fn is_async(self) -> bool {
        matches!(
            self,
            Opcode::AsyncStart | Opcode::AsyncUpdate | Opcode::AsyncDone
        )
    }

    /// True for elementwise operations on arrays (unary, binary, ternary maps that apply the
    /// same scalar function at every index).
    pub fn is_elementwise(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            Abs | Acos
                | Acosh
                | Add
                | And
                | Asin
                | Asinh
                | Atan
                | Atan2
                | Atanh
                | BitcastConvert
                | Cbrt
                | Ceil
                | Clamp
                | Clz
                | Compare
                | Complex
                | Convert
                | Copy
                | Cos
                | Cosh
                | Divide
                | Erf
                | Exp
                | Expm1
                | Floor
                | Imag
                | IsFinite
                | Log
                | Log1p
                | Logistic
                | Maximum
                | Minimum
                | Mulhi
                | Multiply
                | Negate
                | Not
                | Or
                | PopulationCount
                | Power
                | Real
                | ReducePrecision
                | Remainder
                | RoundNearestAfz
                | RoundNearestEven
                | Rsqrt
                | Select
                | ShiftLeft
                | ShiftRightArithmetic
                | ShiftRightLogical
                | Sign
                | Sin
                | Sinh
                | Sqrt
                | StochasticConvert
                | Subtract
                | Tan
                | Tanh
                | Xor
        )
    }

    /// True for the opcodes with their own asynchronous forms (`all-reduce-start`,
    /// `copy-start`, `send`/`send-done`, ...), which the generic async ops must not wrap.
    pub fn has_native_async_form(self) -> bool {
        matches!(
            self,
            Opcode::AllReduce
                | Opcode::AllGather
                | Opcode::CollectivePermute
                | Opcode::Copy
                | Opcode::Send
                | Opcode::Recv
        )
    }

    /// True for the opcodes with a fixed operand count, returning it; `None` for variadic
    /// opcodes (XLA's `HloOpcodeArity`).
    pub fn arity(self) -> Option<usize> {
        use Opcode::*;
        Some(match self {
            Constant | Iota | Parameter | PartitionId | ReplicaId | RngGetAndUpdateState => 0,
            Abs
            | Acos
            | Acosh
            | AllGatherDone
            | AllReduceDone
            | Asin
            | Asinh
            | AsyncDone
            | Atan
            | Atanh
            | Bitcast
            | BitcastConvert
            | Broadcast
            | Cbrt
            | Ceil
            | Cholesky
            | Clz
            | CollectivePermuteDone
            | Convert
            | Copy
            | CopyDone
            | CopyStart
            | Cos
            | Cosh
            | Domain
            | Erf
            | Exp
            | Expm1
            | Fft
            | Floor
            | GetDimensionSize
            | GetTupleElement
            | Imag
            | Infeed
            | IsFinite
            | Log
            | Log1p
            | Logistic
            | Negate
            | Not
            | OptimizationBarrier
            | PopulationCount
            | Real
            | Recv
            | RecvDone
            | ReducePrecision
            | Reshape
            | Reverse
            | RngBitGenerator
            | RoundNearestAfz
            | RoundNearestEven
            | Rsqrt
            | SendDone
            | Shuffle
            | Sign
            | Sin
            | Sinh
            | Slice
            | Sqrt
            | Tan
            | Tanh
            | TopK
            | Transpose
            | While => 1,
            Add | AddDependency | And | Atan2 | Compare | Complex | Divide | Dot | Gather
            | Maximum | Minimum | Mulhi | Multiply | Or | Outfeed | Pad | Power | Remainder
            | Send | SetDimensionSize | ShiftLeft | ShiftRightArithmetic | ShiftRightLogical
            | StochasticConvert | Subtract | TriangularSolve | Xor => 2,
            BatchNormTraining | Clamp | RaggedDot | Select | SelectAndScatter => 3,
            ScaledDot => 4,
            BatchNormGrad | BatchNormInference => 5,
            RaggedAllToAll => 6,
            _ => return None,
        })
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for &op in Opcode::ALL {
            assert_eq!(op.as_str().parse::<Opcode>(), Ok(op));
        }
        assert_eq!("opt-barrier".parse(), Ok(Opcode::OptimizationBarrier));
        assert!("all-to-all-start".parse::<Opcode>().is_err());
        assert_eq!(Opcode::Add.arity(), Some(2));
        assert_eq!(Opcode::Tuple.arity(), None);
    }
}
