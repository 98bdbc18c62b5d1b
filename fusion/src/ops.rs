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

/// A `reduce-window` that computes a cumulative scan (`jnp.cumsum`, `cumprod`, `cummax`,
/// `cummin`): a window that, along exactly one dimension, covers the whole prefix
/// `[0, o]` of every output position `o` (size `w >= n`, padding `w - 1` low and 0 high,
/// over an extent `n >= 2`) or its whole suffix `[o, n - 1]` (padding 0 low and `w - 1`
/// high), and a window of size 1 without padding along every other dimension; strides
/// and dilations 1, no reversal. Its output has its input's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// The scanned dimension.
    pub dim: usize,
    /// Its extent.
    pub len: i64,
    /// A suffix scan (`reverse=True`): output `o` combines positions `o..n`.
    pub reverse: bool,
}

/// The scan `instr` computes, if it is one (see [`Scan`]); `None` for any other op.
///
/// A prefix scan's output `o` is the left fold, in order, of its init value and input
/// positions `0..=o` (what the reduce-window's window order gives), so a sequential walk
/// carrying the running value computes every output exactly, for any reducer. A suffix
/// scan's window folds `o..n` in increasing order, so only an associative and commutative
/// reducer gives the same value walking from the end.
///
/// ```
/// let m = hlo::parse_module("HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[4,8] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[4,8] reduce-window(p, z), window={size=1x8 pad=0_0x7_0}, to_apply=add\n}").unwrap();
/// let r = m.instr("r").unwrap();
/// let scan = fusion::ops::scan(r.instr()).unwrap();
/// assert_eq!((scan.dim, scan.len, scan.reverse), (1, 8, false));
/// ```
pub fn scan(instr: &Instruction) -> Option<Scan> {
    if instr.opcode() != Opcode::ReduceWindow {
        return None;
    }
    let out = if instr.shape().is_tuple() {
        instr.shape().tuple_shapes().first()?.dims().to_vec()
    } else {
        instr.shape().dims().to_vec()
    };
    let window = instr.window()?;
    if window.dims.len() != out.len() {
        return None;
    }
    let mut found = None;
    for (d, (w, &n)) in window.dims.iter().zip(&out).enumerate() {
        if w.stride != 1 || w.base_dilation != 1 || w.window_dilation != 1 || w.reversal {
            return None;
        }
        if w.size == 1 && w.padding_low == 0 && w.padding_high == 0 {
            continue;
        }
        let reach = w.size - 1;
        let reverse = match (w.padding_low, w.padding_high) {
            (lo, 0) if lo == reach => false,
            (0, hi) if hi == reach => true,
            _ => return None,
        };
        if found.is_some() || n < 2 || reach < n - 1 {
            return None;
        }
        found = Some(Scan {
            dim: d,
            len: n,
            reverse,
        });
    }
    found
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

    /// The scan of `reduce-window(p, z)` of `f32[4,8]` with window `window`.
    fn scan_of(window: &str) -> Option<Scan> {
        let text = format!(
            "HloModule m\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
             ROOT s = f32[] add(a, b)\n}}\nENTRY e {{\n  p = f32[4,8] parameter(0)\n  \
             z = f32[] constant(0)\n  ROOT r = f32[4,8] reduce-window(p, z), \
             window={{{window}}}, to_apply=add\n}}"
        );
        let m = hlo::parse_module(&text).unwrap();
        scan(m.instr("r").unwrap().instr())
    }

    #[test]
    fn scans() {
        let at = |dim, len, reverse| Some(Scan { dim, len, reverse });
        assert_eq!(scan_of("size=1x8 pad=0_0x7_0"), at(1, 8, false));
        assert_eq!(scan_of("size=4x1 pad=0_3x0_0"), at(0, 4, true));
        // A window longer than the dimension still covers every prefix.
        assert_eq!(scan_of("size=1x10 pad=0_0x9_0"), at(1, 8, false));
        // Windows that leave out part of a prefix, or move.
        assert_eq!(scan_of("size=1x7 pad=0_0x6_0"), None);
        assert_eq!(scan_of("size=1x8 pad=0_0x6_1"), None);
        assert_eq!(scan_of("size=1x8 stride=1x2 pad=0_0x7_0"), None);
        assert_eq!(scan_of("size=1x8 pad=0_0x7_0 rhs_reversal=0x1"), None);
        // Two scanned dimensions, or a window elsewhere.
        assert_eq!(scan_of("size=4x8 pad=3_0x7_0"), None);
        assert_eq!(scan_of("size=2x8 pad=0_1x7_0"), None);
        assert_eq!(scan_of("size=1x1"), None);
    }
}
