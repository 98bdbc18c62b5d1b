//! Per-opcode maps, grouped by op family, and the public entry points for one instruction.

mod concat_pad;
mod contraction;
mod dynamic;
mod elementwise;
mod movement;
mod reduce;
pub(crate) mod reshape;
mod sort;
mod structural;
pub(crate) mod util;

use hlo::{CompId, InstrId, Module, Opcode};

use crate::{GroupedIndexing, IndexingError, OperandIndexing};
use util::OpView;

/// Why an opcode has no description, or `None` when it has one.
pub(crate) fn undefined_reason(op: Opcode) -> Option<&'static str> {
    use Opcode::*;
    Some(match op {
        While => "while: the number of iterations and the loop state are data dependent",
        Conditional => "conditional: the branch taken is data dependent",
        CustomCall => "custom-call: the callee's accesses are opaque",
        AllToAll | RaggedAllToAll => "all-to-all: elements move between participants by a data-independent but device-dependent permutation not expressed here",
        RaggedDot => "ragged-dot: group sizes are data dependent",
        DynamicReshape => "dynamic-reshape: the result shape is data dependent",
        Scan => "scan: not described",
        Shuffle => "shuffle: not described",
        BatchNormGrad | BatchNormInference | BatchNormTraining => {
            "batch-norm: expanded into elementwise ops and reduces before analysis; not described"
        }
        CopyStart | CopyDone | CollectivePermuteStart | CollectivePermuteDone | AllGatherStart
        | AllGatherDone | Send | SendDone | Recv | RecvDone | Infeed | Outfeed => {
            "legacy asynchronous / communication op with context state: not described"
        }
        _ => return None,
    })
}

/// Maps from output `k` of a (non-fusion) instruction to each of its operands.
pub(crate) fn op_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    use Opcode::*;
    let op = v.instr.opcode();
    if let Some(reason) = undefined_reason(op) {
        return Ok(vec![OperandIndexing::undefined(reason); v.arity()]);
    }
    match op {
        BitcastConvert => reshape::bitcast_convert_out_to_in(v),
        _ if op.is_elementwise() || op == Map => elementwise::out_to_in(v),
        Broadcast => movement::broadcast_out_to_in(v),
        Transpose => movement::transpose_out_to_in(v),
        Reverse => movement::reverse(v),
        Slice => movement::slice_out_to_in(v),
        Reshape => reshape::reshape_out_to_in(v),
        Bitcast => reshape::bitcast_out_to_in(v),
        Concatenate => concat_pad::concat_out_to_in(v),
        Pad => concat_pad::pad_out_to_in(v),
        Reduce => reduce::reduce_out_to_in(v, k),
        ReduceWindow => reduce::reduce_window_out_to_in(v, k),
        Dot => contraction::dot_out_to_in(v),
        ScaledDot => contraction::scaled_dot_out_to_in(v),
        Convolution => contraction::conv_out_to_in(v),
        DynamicSlice => dynamic::dynamic_slice_out_to_in(v),
        DynamicUpdateSlice => dynamic::dus_out_to_in(v),
        Gather => dynamic::gather_out_to_in(v),
        Scatter => dynamic::scatter_out_to_in(v),
        Sort => sort::sort_out_to_in(v, k),
        TopK => sort::topk_out_to_in(v, k),
        SelectAndScatter => sort::sas_out_to_in(v),
        Tuple => structural::tuple_out_to_in(v, k),
        GetTupleElement | Domain | OptimizationBarrier => Ok(vec![util::identity(v.out_dims(k)?)]),
        AddDependency => Ok(vec![
            util::identity(v.out_dims(0)?),
            OperandIndexing::none(),
        ]),
        AllReduce | AllReduceStart | AllReduceDone | CollectivePermute | CollectiveBroadcast
        | CollectiveReduce => structural::per_output_identity(v, k),
        AllGather => structural::all_gather_out_to_in(v, k),
        ReduceScatter => structural::reduce_scatter_out_to_in(v, k),
        Fft => structural::fft_out_to_in(v),
        Cholesky | TriangularSolve => structural::matrix_out_to_in(v),
        Rng | RngBitGenerator => structural::whole_operands(v, k),
        // Reads only the size of the dimension, no element.
        GetDimensionSize => Ok(vec![OperandIndexing::none()]),
        SetDimensionSize => Ok(vec![
            util::identity(v.out_dims(0)?),
            util::to_scalar(v.out_dims(0)?)?,
        ]),
        AfterAll => Ok(vec![OperandIndexing::none(); v.arity()]),
        Constant | Iota | Parameter | PartitionId | ReplicaId | RngGetAndUpdateState => Ok(vec![]),
        _ => Ok(vec![
            OperandIndexing::undefined(format!(
                "{}: not described",
                op.as_str()
            ));
            v.arity()
        ]),
    }
}

/// Maps from operand `operand` to each output of a (non-fusion) instruction.
pub(crate) fn op_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    use Opcode::*;
    let op = v.instr.opcode();
    let outputs = if v.instr.shape().is_tuple() {
        v.instr.shape().tuple_shapes().len()
    } else {
        1
    };
    if let Some(reason) = undefined_reason(op) {
        return Ok(vec![OperandIndexing::undefined(reason); outputs]);
    }
    match op {
        BitcastConvert => reshape::bitcast_convert_in_to_out(v),
        _ if op.is_elementwise() || op == Map => elementwise::in_to_out(v, operand),
        Broadcast => movement::broadcast_in_to_out(v),
        Transpose => movement::transpose_in_to_out(v),
        Reverse => movement::reverse(v),
        Slice => movement::slice_in_to_out(v),
        Reshape => reshape::reshape_in_to_out(v),
        Bitcast => reshape::bitcast_in_to_out(v),
        Concatenate => concat_pad::concat_in_to_out(v, operand),
        Pad => concat_pad::pad_in_to_out(v, operand),
        Reduce => reduce::reduce_in_to_out(v, operand),
        ReduceWindow => reduce::reduce_window_in_to_out(v, operand),
        Dot => contraction::dot_in_to_out(v, operand),
        ScaledDot => contraction::scaled_dot_in_to_out(v, operand),
        Convolution => contraction::conv_in_to_out(v, operand),
        DynamicSlice => dynamic::dynamic_slice_in_to_out(v, operand),
        DynamicUpdateSlice => dynamic::dus_in_to_out(v, operand),
        Gather => dynamic::gather_in_to_out(v, operand),
        Scatter => dynamic::scatter_in_to_out(v, operand),
        Sort => sort::sort_in_to_out(v),
        TopK => sort::topk_in_to_out(v),
        SelectAndScatter => sort::sas_in_to_out(v, operand),
        Tuple => structural::tuple_in_to_out(v, operand),
        GetTupleElement | Domain => Ok(vec![util::identity(v.out_dims(0)?)]),
        AddDependency => Ok(vec![if operand == 0 {
            util::identity(v.out_dims(0)?)
        } else {
            OperandIndexing::none()
        }]),
        AllReduce | AllReduceStart | AllReduceDone | CollectivePermute | CollectiveBroadcast
        | CollectiveReduce | OptimizationBarrier => (0..outputs)
            .map(|k| {
                Ok(if k == operand || v.arity() == 1 {
                    util::identity(v.out_dims(k)?)
                } else {
                    OperandIndexing::none()
                })
            })
            .collect(),
        AllGather | ReduceScatter | Fft | Cholesky | TriangularSolve | Rng | RngBitGenerator => {
            structural::whole_outputs(v, operand)
        }
        GetDimensionSize | AfterAll => Ok(vec![OperandIndexing::none(); outputs]),
        SetDimensionSize => Ok(vec![if operand == 0 {
            util::identity(v.out_dims(0)?)
        } else {
            util::from_scalar(v.out_dims(0)?)?
        }]),
        _ => Ok(vec![
            OperandIndexing::undefined(format!(
                "{}: not described",
                op.as_str()
            ));
            outputs
        ]),
    }
}

/// Which output of operand `j` output `k` of `instr` reads: the element a
/// get-tuple-element selects, the same element through an optimization barrier, else 0.
pub(crate) fn operand_output(instr: &hlo::Instruction, k: usize) -> usize {
    match instr.opcode() {
        Opcode::GetTupleElement => instr.tuple_index().map_or(0, |i| i.max(0) as usize),
        Opcode::OptimizationBarrier => k,
        _ => 0,
    }
}

fn outputs_of(instr: &hlo::Instruction) -> usize {
    if instr.shape().is_tuple() {
        instr.shape().tuple_shapes().len()
    } else {
        1
    }
}

/// True for instructions analysed through the computation they call.
pub(crate) fn calls_through(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::Fusion
            | Opcode::Call
            | Opcode::AsyncStart
            | Opcode::AsyncUpdate
            | Opcode::AsyncDone
    )
}

/// Output-to-input maps of instruction `id` of computation `comp`: one [`GroupedIndexing`]
/// per output (one for an array result; one per tuple element otherwise). A fusion, call or
/// async op is analysed through the computation it calls (for `async-done`, the operands
/// are those of the `async-start` of its chain). Maps are simplified, runtime variables
/// produced by constants and iotas folded.
pub fn output_to_input(
    module: &Module,
    comp: CompId,
    id: InstrId,
) -> Result<Vec<GroupedIndexing>, IndexingError> {
    let v = OpView::new(module, comp, id);
    if calls_through(v.instr.opcode()) {
        return Ok(crate::fusion::analyze_instruction(module, comp, id)?.outputs);
    }
    (0..outputs_of(v.instr))
        .map(|k| {
            let ops = op_out_to_in(&v, k)?;
            Ok(GroupedIndexing {
                operands: ops
                    .into_iter()
                    .map(|s| crate::fold::finish(module, s))
                    .collect::<Result<_, _>>()?,
            })
        })
        .collect()
}

/// Input-to-output maps from operand `operand` of instruction `id` to each of its outputs.
pub fn input_to_output(
    module: &Module,
    comp: CompId,
    id: InstrId,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    let v = OpView::new(module, comp, id);
    if operand >= v.arity() {
        return Err(IndexingError::NoSuchOperand {
            instr: v.name().to_string(),
            count: v.arity(),
            operand,
        });
    }
    if calls_through(v.instr.opcode()) {
        if matches!(v.instr.opcode(), Opcode::Fusion | Opcode::Call) {
            return crate::fusion::fusion_input_to_output(module, comp, id, operand);
        }
        return Ok(vec![
            OperandIndexing::undefined(
                "input-to-output maps of an async op: not described"
            );
            outputs_of(v.instr)
        ]);
    }
    op_in_to_out(&v, operand)?
        .into_iter()
        .map(|s| crate::fold::finish(module, s))
        .collect()
}
