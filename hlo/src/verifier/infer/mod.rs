//! Shape inference: the result shape XLA's rules give an instruction, from its opcode, its
//! operands' shapes, its attributes and the signatures of the computations it calls.
//!
//! One function per opcode family, each returning [`Inferred`]: a shape built from the
//! operands, "like operand i" (no allocation: the elementwise case), or "the declared
//! shape" for opcodes whose result is part of their specification (`reshape`, `convert`,
//! `broadcast`, `custom-call`, ...), after checking that the declaration is consistent.

mod collective;
mod control;
mod data;
mod dot_conv;
mod elementwise;
mod gather_scatter;
mod misc;
mod reduce;

use crate::ir::{CompId, Computation, Instruction, Module};
use crate::opcode::Opcode;
use crate::shape::{ArrayShape, ElementType, Shape};

/// Why an instruction's shape cannot be inferred.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InferError {
    /// The operands, attributes or called computations break XLA's shape rules; the
    /// message says which rule.
    #[error("{0}")]
    Invalid(String),
    /// Shape inference for this opcode is not implemented (the verifier accepts the
    /// declared shape of such an instruction).
    #[error("unsupported: shape inference for `{0}` is not implemented")]
    Unsupported(Opcode),
}

/// Where inference finds the computations an instruction calls: a module, or the
/// computations the parser has finished so far.
pub(crate) trait Computations {
    /// The computation `id`, if it exists.
    fn computation(&self, id: CompId) -> Option<&Computation>;
}

impl Computations for Module {
    fn computation(&self, id: CompId) -> Option<&Computation> {
        self.get_computation(id)
    }
}

/// Computations indexed by their [`CompId`] (the parser's finished computations).
struct CompSlice<'a>(&'a [Computation]);

impl Computations for CompSlice<'_> {
    fn computation(&self, id: CompId) -> Option<&Computation> {
        self.0.get(id.index())
    }
}

/// What inference found for one instruction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Inferred {
    /// This shape.
    Shape(Shape),
    /// The dimensions of operand `i` with this element type.
    Like(usize, ElementType),
    /// Exactly the shape of operand `i`.
    Operand(usize),
    /// The instruction's declared shape (checked for consistency with the operands).
    Declared,
}

/// Inference result inside this module: a message on failure.
pub(crate) type R = Result<Inferred, String>;

/// The result shape of `instr` given its operands' shapes, by XLA's shape inference rules.
///
/// `module` resolves called computations (reducers, loop bodies, branches, fused
/// computations). For opcodes whose result shape is an input of the operation rather than
/// a consequence of its operands (`parameter`, `constant`, `reshape`, `broadcast`,
/// `convert`, `bitcast`, `bitcast-convert`, `iota`, `rng`, `custom-call`, `infeed`,
/// `dynamic-reshape`, `recv`, the element type of `dot`/`convolution` (preferred element
/// type), ...), `instr.shape()` is taken as that input: it is checked against the operands
/// and returned. Layouts of the result are not inferred (the result has none).
///
/// A pass building an instruction can therefore create it with any placeholder shape for
/// fully inferred opcodes (`add`, `dot`'s dimensions, `slice`, `reduce`, `gather`, ...)
/// and call this to get the real one.
pub fn infer_shape(
    module: &Module,
    instr: &Instruction,
    operands: &[&Shape],
) -> Result<Shape, InferError> {
    let ctx = Ctx {
        module,
        instr,
        ops: operands,
    };
    let inferred = infer(&ctx).map_err(|m| {
        if is_unsupported(instr.opcode()) {
            InferError::Unsupported(instr.opcode())
        } else {
            InferError::Invalid(m)
        }
    })?;
    Ok(match inferred {
        Inferred::Shape(s) => s,
        Inferred::Like(i, et) => Shape::array(et, operands[i].dims().to_vec()),
        Inferred::Operand(i) => strip_layouts(operands[i]),
        Inferred::Declared => strip_layouts(instr.shape()),
    })
}

/// The result shape of an instruction written without one (XLA's text allows that where
/// the shape follows from the operands), with `comps` the computations parsed so far.
/// `Ok(None)` when the opcode's result is part of its specification (`reshape`,
/// `broadcast`, `parameter`, `custom-call`, ...): the text must then state it.
pub(crate) fn infer_written_shape(
    comps: &[Computation],
    instr: &Instruction,
    operands: &[&Shape],
) -> Result<Option<Shape>, String> {
    use Opcode as O;
    // The result of these is an input of the operation, not a consequence of its operands.
    let declared = matches!(
        instr.opcode(),
        O::Parameter
            | O::Constant
            | O::Reshape
            | O::DynamicReshape
            | O::Broadcast
            | O::Convert
            | O::BitcastConvert
            | O::Bitcast
            | O::Iota
            | O::Rng
            | O::RngBitGenerator
            | O::RngGetAndUpdateState
            | O::CustomCall
            | O::Infeed
            | O::Recv
            | O::CopyStart
            | O::CollectivePermuteStart
            | O::AllGatherStart
            | O::AsyncStart
    );
    if declared || is_unsupported(instr.opcode()) {
        return Ok(None);
    }
    let comps = CompSlice(comps);
    let ctx = Ctx {
        module: &comps,
        instr,
        ops: operands,
    };
    Ok(match infer(&ctx)? {
        Inferred::Shape(s) => Some(s),
        Inferred::Like(i, et) => Some(Shape::array(et, operands[i].dims().to_vec())),
        Inferred::Operand(i) => Some(strip_layouts(operands[i])),
        Inferred::Declared => None,
    })
}

/// `s` without layouts (inferred shapes carry none).
fn strip_layouts(s: &Shape) -> Shape {
    match s {
        Shape::Array(a) => Shape::array_with(
            a.element_type(),
            a.dims().to_vec(),
            (0..a.dims().len()).map(|i| a.is_dynamic_dim(i)).collect(),
            None,
        ),
        Shape::Tuple(t) => Shape::tuple(t.iter().map(strip_layouts).collect()),
    }
}

/// Everything inference looks at for one instruction.
pub(crate) struct Ctx<'a> {
    pub module: &'a dyn Computations,
    pub instr: &'a Instruction,
    pub ops: &'a [&'a Shape],
}

impl<'a> Ctx<'a> {
    /// The declared result shape.
    pub fn declared(&self) -> &'a Shape {
        self.instr.shape()
    }

    /// Checks the operand count.
    pub fn arity(&self, n: usize) -> Result<(), String> {
        if self.ops.len() == n {
            Ok(())
        } else {
            Err(format!(
                "{} takes {n} operand{}, not {}",
                self.instr.opcode(),
                if n == 1 { "" } else { "s" },
                self.ops.len()
            ))
        }
    }

    /// Checks the operand count is at least `n`.
    pub fn min_arity(&self, n: usize) -> Result<(), String> {
        if self.ops.len() >= n {
            Ok(())
        } else {
            Err(format!(
                "{} takes at least {n} operand{}, not {}",
                self.instr.opcode(),
                if n == 1 { "" } else { "s" },
                self.ops.len()
            ))
        }
    }

    /// Operand `i` as an array.
    pub fn array(&self, i: usize) -> Result<&'a ArrayShape, String> {
        let s = self.ops[i];
        s.as_array()
            .filter(|a| a.element_type().is_array_type())
            .ok_or_else(|| format!("operand {i} must be an array, not {}", show(s)))
    }

    /// The declared shape as an array.
    pub fn declared_array(&self) -> Result<&'a ArrayShape, String> {
        let s = self.declared();
        s.as_array()
            .filter(|a| a.element_type().is_array_type())
            .ok_or_else(|| format!("the result must be an array, not {}", show(s)))
    }

    /// A called computation's parameter shapes and root shape.
    pub fn signature(&self, id: CompId) -> Result<Signature<'a>, String> {
        signature(self.module, id)
    }

    /// A required computation attribute.
    pub fn required_comp(&self, id: Option<CompId>, what: &str) -> Result<CompId, String> {
        id.ok_or_else(|| format!("{} needs {what}", self.instr.opcode()))
    }

    /// A required attribute, by value.
    pub fn need<T>(&self, v: Option<T>, what: &str) -> Result<T, String> {
        v.ok_or_else(|| format!("{} needs {what}", self.instr.opcode()))
    }

    /// A required attribute, by reference.
    pub fn required<'b, T: ?Sized>(&self, v: Option<&'b T>, what: &str) -> Result<&'b T, String> {
        v.ok_or_else(|| format!("{} needs {what}", self.instr.opcode()))
    }
}

/// A computation's signature.
pub(crate) struct Signature<'a> {
    pub name: &'a str,
    pub params: Vec<&'a Shape>,
    pub result: &'a Shape,
}

pub(crate) fn signature(module: &dyn Computations, id: CompId) -> Result<Signature<'_>, String> {
    let c = module
        .computation(id)
        .ok_or_else(|| format!("calls computation {} which does not exist", id.index()))?;
    let root = c
        .get(c.root())
        .ok_or_else(|| format!("computation `{}` has no root", c.name()))?;
    Ok(Signature {
        name: c.name(),
        params: c
            .parameters()
            .iter()
            .filter_map(|&p| c.get(p).map(Instruction::shape))
            .collect(),
        result: root.shape(),
    })
}

impl Signature<'_> {
    /// Checks that this computation takes `expected` (compatible shapes).
    pub fn expect_params(&self, expected: &[&Shape], role: &str) -> Result<(), String> {
        if self.params.len() != expected.len() {
            return Err(format!(
                "{role} `{}` takes {} parameters but is given {}",
                self.name,
                self.params.len(),
                expected.len()
            ));
        }
        for (i, (p, e)) in self.params.iter().zip(expected).enumerate() {
            if !same_shape(p, e) {
                return Err(format!(
                    "{role} `{}` parameter {i} is {} but is given {}",
                    self.name,
                    show(p),
                    show(e)
                ));
            }
        }
        Ok(())
    }

    /// Checks that this computation returns `expected`.
    pub fn expect_result(&self, expected: &Shape, role: &str) -> Result<(), String> {
        if same_shape(self.result, expected) {
            Ok(())
        } else {
            Err(format!(
                "{role} `{}` returns {} but {} is required",
                self.name,
                show(self.result),
                show(expected)
            ))
        }
    }
}

/// The shape in messages: XLA's text without layout.
pub(crate) fn show(s: &Shape) -> String {
    s.to_string_without_layout()
}

/// Shapes are the same for the verifier when equal ignoring layouts and whether bounded
/// dimensions are dynamic (XLA's `ShapeUtil::Compatible`).
pub(crate) fn same_shape(a: &Shape, b: &Shape) -> bool {
    match (a, b) {
        (Shape::Array(x), Shape::Array(y)) => {
            x.element_type() == y.element_type() && x.dims() == y.dims()
        }
        (Shape::Tuple(x), Shape::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_shape(p, q))
        }
        _ => false,
    }
}

/// An array shape without layout.
pub(crate) fn array(et: ElementType, dims: Vec<i64>) -> Shape {
    Shape::array(et, dims)
}

/// A dimension number checked against a rank.
pub(crate) fn dim(d: i64, rank: usize, what: &str) -> Result<usize, String> {
    usize::try_from(d)
        .ok()
        .filter(|&d| d < rank)
        .ok_or_else(|| format!("{what} {d} is out of range for rank {rank}"))
}

/// Distinct dimension numbers, each below `rank`.
pub(crate) fn distinct_dims(ds: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, String> {
    let mut seen = vec![false; rank];
    let mut out = Vec::with_capacity(ds.len());
    for &d in ds {
        let u = dim(d, rank, what)?;
        if std::mem::replace(&mut seen[u], true) {
            return Err(format!("{what} {d} appears twice"));
        }
        out.push(u);
    }
    Ok(out)
}

/// A permutation of `0..rank`.
pub(crate) fn permutation(ds: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, String> {
    if ds.len() != rank {
        return Err(format!(
            "{what} {{{}}} must be a permutation of the {rank} dimensions",
            join(ds)
        ));
    }
    distinct_dims(ds, rank, what)
}

/// `a,b,c`.
pub(crate) fn join(ds: &[i64]) -> String {
    ds.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// A scalar of an integral type.
pub(crate) fn is_int_scalar(s: &Shape) -> bool {
    s.as_array()
        .is_some_and(|a| a.dims().is_empty() && a.element_type().is_integral())
}

/// The element type of a real or complex part.
pub(crate) fn complex_component(et: ElementType) -> ElementType {
    match et {
        ElementType::C64 => ElementType::F32,
        ElementType::C128 => ElementType::F64,
        other => other,
    }
}

pub(crate) fn infer(ctx: &Ctx<'_>) -> R {
    use Opcode::*;
    let op = ctx.instr.opcode();
    if op.is_elementwise() {
        return elementwise::infer(ctx);
    }
    match op {
        Parameter => Ok(Inferred::Declared),
        Constant => data::constant(ctx),
        Iota => data::iota(ctx),
        Broadcast => data::broadcast(ctx),
        Reshape => data::reshape(ctx),
        DynamicReshape => data::dynamic_reshape(ctx),
        Transpose => data::transpose(ctx),
        Reverse => data::reverse(ctx),
        Slice => data::slice(ctx),
        DynamicSlice => data::dynamic_slice(ctx),
        DynamicUpdateSlice => data::dynamic_update_slice(ctx),
        Concatenate => data::concatenate(ctx),
        Pad => data::pad(ctx),
        Bitcast => data::bitcast(ctx),
        Tuple => data::tuple(ctx),
        GetTupleElement => data::get_tuple_element(ctx),
        GetDimensionSize => data::get_dimension_size(ctx),
        SetDimensionSize => data::set_dimension_size(ctx),
        Gather => gather_scatter::gather(ctx),
        Scatter => gather_scatter::scatter(ctx),
        Reduce => reduce::reduce(ctx),
        ReduceWindow => reduce::reduce_window(ctx),
        SelectAndScatter => reduce::select_and_scatter(ctx),
        Sort => reduce::sort(ctx),
        TopK => reduce::topk(ctx),
        Map => reduce::map(ctx),
        Dot => dot_conv::dot(ctx),
        RaggedDot => dot_conv::ragged_dot(ctx),
        Convolution => dot_conv::convolution(ctx),
        While => control::while_loop(ctx),
        Conditional => control::conditional(ctx),
        Call => control::call(ctx),
        Fusion => control::fusion(ctx),
        CustomCall => control::custom_call(ctx),
        AsyncStart => control::async_start(ctx),
        AsyncUpdate => control::async_update(ctx),
        AsyncDone => control::async_done(ctx),
        AllReduce | CollectiveReduce => collective::all_reduce(ctx),
        AllReduceStart => collective::all_reduce(ctx),
        AllGather => collective::all_gather(ctx),
        AllGatherStart => collective::all_gather_start(ctx),
        ReduceScatter => collective::reduce_scatter(ctx),
        AllToAll => collective::all_to_all(ctx),
        RaggedAllToAll => collective::ragged_all_to_all(ctx),
        CollectivePermute | CollectiveBroadcast => collective::collective_permute(ctx),
        CollectivePermuteStart => collective::collective_permute_start(ctx),
        AllReduceDone => collective::same_as_operand_done(ctx),
        AllGatherDone | CollectivePermuteDone => collective::tuple_element_done(ctx, 1),
        CopyStart => collective::copy_start(ctx),
        CopyDone => collective::tuple_element_done(ctx, 0),
        Rng => misc::rng(ctx),
        RngBitGenerator => misc::rng_bit_generator(ctx),
        RngGetAndUpdateState => misc::rng_get_and_update_state(ctx),
        ReplicaId | PartitionId => misc::id_scalar(ctx),
        Fft => misc::fft(ctx),
        Cholesky => misc::cholesky(ctx),
        TriangularSolve => misc::triangular_solve(ctx),
        BatchNormTraining => misc::batch_norm_training(ctx),
        BatchNormInference => misc::batch_norm_inference(ctx),
        BatchNormGrad => misc::batch_norm_grad(ctx),
        OptimizationBarrier | Domain => misc::same_as_operand(ctx),
        AfterAll => misc::after_all(ctx),
        AddDependency => misc::add_dependency(ctx),
        Infeed => misc::infeed(ctx),
        Outfeed => misc::outfeed(ctx),
        Send => misc::send(ctx),
        SendDone => misc::send_done(ctx),
        Recv => misc::recv(ctx),
        RecvDone => misc::recv_done(ctx),
        ScaledDot => dot_conv::scaled_dot(ctx),
        Scan => control::scan(ctx),
        Shuffle => Err(format!(
            "unsupported: shape inference for `{op}` is not implemented"
        )),
        _ => Err(format!(
            "unsupported: shape inference for `{op}` is not implemented"
        )),
    }
}

/// True when inference for `op` is not implemented (the verifier then accepts the
/// declared shape and reports nothing for it).
pub(crate) fn is_unsupported(op: Opcode) -> bool {
    matches!(op, Opcode::Shuffle)
}

/// Checks a declared shape against an inference result; the message on mismatch.
pub(crate) fn check_declared(
    declared: &Shape,
    inferred: &Inferred,
    ops: &[&Shape],
) -> Result<(), String> {
    let ok = match inferred {
        Inferred::Declared => true,
        Inferred::Shape(s) => same_shape(declared, s),
        Inferred::Operand(i) => same_shape(declared, ops[*i]),
        Inferred::Like(i, et) => {
            declared.element_type() == Some(*et) && declared.dims() == ops[*i].dims()
        }
    };
    if ok {
        return Ok(());
    }
    let expected = match inferred {
        Inferred::Shape(s) => show(s),
        Inferred::Operand(i) => show(ops[*i]),
        Inferred::Like(i, et) => show(&Shape::array(*et, ops[*i].dims().to_vec())),
        Inferred::Declared => unreachable_declared(),
    };
    Err(format!(
        "shape is {} but should be {expected}",
        show(declared)
    ))
}

/// `Declared` always matches, so it never needs a message.
fn unreachable_declared() -> String {
    String::from("the declared shape")
}
