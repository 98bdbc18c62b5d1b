//! What each opcode is to fusion: bookkeeping (not a kernel), fusible (and as what hero),
//! a library call, or a kernel that never fuses; and the per-opcode flops table.

use hlo::{Instruction, Module, Opcode};

/// The role of one instruction in fusion decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpClass {
    /// Not a kernel: parameter, constant, tuple, get-tuple-element, bitcast, control flow,
    /// tokens and ids (the list of issue 16).
    Bookkeeping,
    /// Fuses freely: elementwise ops and data movement.
    Loop,
    /// A reduction hero (`reduce`, `reduce-window`).
    Reduction,
    /// A transpose that moves data (a transpose hero).
    Transpose,
    /// An in-place update (`dynamic-update-slice`): the root of its fusion only, which may
    /// take in the computation of its update and indices but never of the buffer it
    /// updates.
    InPlace,
    /// A call into a library or a custom emitter (dot, convolution, custom-call, fft,
    /// linear algebra): a kernel of its own whose epilogue is not fused here.
    Library,
    /// A kernel that never fuses (side effects, collectives, rng, sort, scatter, in-place
    /// updates, tuple-shaped results).
    Unfusible,
}

/// The opcodes that issue 16 counts as bookkeeping rather than kernels.
pub fn is_bookkeeping(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        Parameter
            | Constant
            | Tuple
            | GetTupleElement
            | Bitcast
            | While
            | Conditional
            | Call
            | AfterAll
            | AddDependency
            | OptimizationBarrier
            | PartitionId
            | ReplicaId
            | Domain
    )
}

/// The class of `instr` in `module`.
pub fn classify(module: &Module, instr: &Instruction) -> OpClass {
    use Opcode::*;
    let op = instr.opcode();
    if is_bookkeeping(op) {
        return OpClass::Bookkeeping;
    }
    if matches!(
        op,
        Dot | RaggedDot | ScaledDot | Convolution | CustomCall | Fft | Cholesky | TriangularSolve
    ) {
        return OpClass::Library;
    }
    if hlo::ir::edit::has_side_effect(module, instr) {
        return OpClass::Unfusible;
    }
    if instr.shape().is_tuple() {
        // A variadic reduce is a reduction hero with a tuple result (the root of its
        // fusion, read through get-tuple-element); any other tuple result never fuses.
        return if op == Reduce {
            OpClass::Reduction
        } else {
            OpClass::Unfusible
        };
    }
    if op.is_elementwise() && op != StochasticConvert {
        return OpClass::Loop;
    }
    match op {
        Broadcast | Reshape | Slice | Concatenate | Pad | Reverse | Iota | DynamicSlice
        | Gather => OpClass::Loop,
        Transpose => OpClass::Transpose,
        DynamicUpdateSlice => OpClass::InPlace,
        Reduce | ReduceWindow => OpClass::Reduction,
        _ => OpClass::Unfusible,
    }
}

/// True for classes that may be inside a fusion.
pub fn is_fusible(class: OpClass) -> bool {
    matches!(
        class,
        OpClass::Loop | OpClass::Reduction | OpClass::Transpose | OpClass::InPlace
    )
}

/// Flops per output element of an elementwise or movement op (per input element read
/// for a reduction: one application of its reducer). Transcendentals cost what a
/// vectorized polynomial approximation costs; data movement costs nothing.
pub fn flops_per_element(op: Opcode) -> f64 {
    use Opcode::*;
    match op {
        Add | Subtract | Multiply | Maximum | Minimum | Negate | Abs | Compare | Select | And
        | Or | Xor | Not | Sign | Floor | Ceil | RoundNearestAfz | RoundNearestEven | ShiftLeft
        | ShiftRightArithmetic | ShiftRightLogical | Convert | Real | Imag | Complex | IsFinite
        | Clz | PopulationCount | ReducePrecision | BitcastConvert => 1.0,
        Clamp | Mulhi => 2.0,
        Divide | Remainder | Sqrt | Rsqrt | Cbrt => 4.0,
        Exp | Expm1 | Log | Log1p | Logistic | Tanh => 16.0,
        Sin | Cos | Tan | Erf | Atan2 | Power => 24.0,
        Acos | Acosh | Asin | Asinh | Atan | Atanh | Sinh | Cosh => 32.0,
        Reduce | ReduceWindow => 1.0,
        _ => 0.0,
    }
}

/// True when duplicating the op into several consumers is never worth it: reductions and
/// ops of at least a transcendental's cost.
pub fn is_expensive(op: Opcode) -> bool {
    matches!(op, Opcode::Reduce | Opcode::ReduceWindow) || flops_per_element(op) >= 16.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_of(text: &str, name: &str) -> OpClass {
        let m = hlo::parse_module(text).unwrap();
        let i = m.instr(name).unwrap();
        classify(&m, i.instr())
    }

    #[test]
    fn classes() {
        let module = "HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[4,8] parameter(0)
  q = f32[8,4] parameter(1)
  t = f32[8,4] transpose(p), dimensions={1,0}
  x = f32[8,4] exponential(t)
  d = f32[8,8] dot(x, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[] constant(0)
  r = f32[8] reduce(d, c), dimensions={1}, to_apply=add
  i = s32[] constant(0)
  u = f32[8,4] dynamic-update-slice(q, t, i, i)
  g = u32[8] rng-get-and-update-state(), delta=1
  ROOT tu = (f32[8], f32[8,4]) tuple(r, u)
}";
        assert_eq!(class_of(module, "p"), OpClass::Bookkeeping);
        assert_eq!(class_of(module, "t"), OpClass::Transpose);
        assert_eq!(class_of(module, "x"), OpClass::Loop);
        assert_eq!(class_of(module, "d"), OpClass::Library);
        assert_eq!(class_of(module, "r"), OpClass::Reduction);
        assert_eq!(class_of(module, "tu"), OpClass::Bookkeeping);
        assert_eq!(class_of(module, "u"), OpClass::InPlace);
        assert_eq!(class_of(module, "g"), OpClass::Unfusible);
        assert!(is_expensive(Opcode::Exp));
        assert!(!is_expensive(Opcode::Add));
        assert_eq!(flops_per_element(Opcode::Broadcast), 0.0);
    }
}
