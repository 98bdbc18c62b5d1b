//! Shape inference: the result shape XLA's rules give an instruction, from its opcode, its
//! operands' shapes, its attributes and the signatures of the computations it calls.
//!
//! One function per opcode family, each returning [`Inferred`]: a shape built from the
//! operands, "like operand i" (no allocation: the elementwise case), or "the declared
//! shape" for opcodes whose result is part of their specification (`reshape`, `convert`,
//! `broadcast`, `custom-call`, ...), after checking that the declaration is consistent.

mod async_chain;
mod collective;
mod control;
mod ctx;
mod data;
mod dot_conv;
mod elementwise;
mod gather_scatter;
mod misc;
mod ragged_dot;
mod reduce;
mod shapes;

pub(crate) use ctx::{Ctx, Inferred, R};
pub(crate) use shapes::{
    array, complex_component, dim, distinct_dims, is_int_scalar, join, permutation, same_shape,
    show, strip_layouts,
};

use crate::ir::{Computation, Instruction, Module};
use crate::opcode::Opcode;
use crate::shape::Shape;
use ctx::CompSlice;

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
        RaggedDot => ragged_dot::ragged_dot(ctx),
        Convolution => dot_conv::convolution(ctx),
        While => control::while_loop(ctx),
        Conditional => control::conditional(ctx),
        Call => control::call(ctx),
        Fusion => control::fusion(ctx),
        CustomCall => control::custom_call(ctx),
        AsyncStart => async_chain::start(ctx),
        AsyncUpdate => async_chain::update(ctx),
        AsyncDone => async_chain::done(ctx),
        AllReduce => collective::all_reduce(ctx),
        CollectiveReduce => collective::with_dynamic_root(ctx, collective::all_reduce),
        AllReduceStart => collective::all_reduce(ctx),
        AllGather => collective::all_gather(ctx),
        AllGatherStart => collective::all_gather_start(ctx),
        ReduceScatter => collective::reduce_scatter(ctx),
        AllToAll => collective::all_to_all(ctx),
        RaggedAllToAll => collective::ragged_all_to_all(ctx),
        CollectivePermute => collective::collective_permute(ctx),
        CollectiveBroadcast => collective::with_dynamic_root(ctx, collective::collective_permute),
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
