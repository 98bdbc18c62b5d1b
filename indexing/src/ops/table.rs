//! The per-opcode tables: which function of which op family gives the maps of an
//! instruction, in each direction.

use hlo::Opcode;

use super::util::{self, output_count, OpView};
use super::{
    batch_norm, concat_pad, contraction, dynamic, elementwise, movement, reduce, reshape, scan,
    sort, structural, undefined_reason,
};
use crate::{IndexingError, OperandIndexing};

/// True for the opcodes that have no per-op table because they run a computation
/// (`fusion`, `call`, and the async ops wrapping one): their maps are the composition of
/// the called computation's maps (`indexing::output_to_input` does it), and the functions
/// here give UNDEFINED for them.
pub fn calls_computation(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::Fusion
            | Opcode::Call
            | Opcode::AsyncStart
            | Opcode::AsyncUpdate
            | Opcode::AsyncDone
    )
}

/// The set an op that calls a computation gets from the per-op tables: its maps are the
/// composition of the called computation's maps, which the layer above computes.
fn composed_elsewhere(op: Opcode) -> OperandIndexing {
    OperandIndexing::undefined(format!(
        "{}: composed through the called computation, not a per-op table",
        op.as_str()
    ))
}

/// Maps from output `k` of one instruction to each of its operands, by opcode. Not
/// simplified; runtime variables not folded.
pub(crate) fn op_out_to_in(
    v: &OpView<'_>,
    k: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    use Opcode::*;
    let op = v.instr.opcode();
    if let Some(reason) = undefined_reason(op) {
        return Ok(vec![OperandIndexing::undefined(reason); v.arity()]);
    }
    if calls_computation(op) {
        return Ok(vec![composed_elsewhere(op); v.arity()]);
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
        Scan => scan::scan_out_to_in(v, k),
        Sort => sort::sort_out_to_in(v, k),
        TopK => sort::topk_out_to_in(v, k),
        SelectAndScatter => sort::sas_out_to_in(v),
        Tuple => structural::tuple_out_to_in(v, k),
        GetTupleElement | Domain | OptimizationBarrier | CopyDone => {
            Ok(vec![util::identity(v.out_dims(k)?)])
        }
        // copy-start -> (destination, source, context): both buffers hold the operand.
        CopyStart => Ok(vec![if k < 2 {
            util::identity(v.out_dims(k)?)
        } else {
            OperandIndexing::none()
        }]),
        BatchNormInference | BatchNormTraining | BatchNormGrad => batch_norm::out_to_in(v, k),
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

/// Maps from operand `operand` of one instruction to each of its outputs, by opcode. Not
/// simplified; runtime variables not folded.
pub(crate) fn op_in_to_out(
    v: &OpView<'_>,
    operand: usize,
) -> Result<Vec<OperandIndexing>, IndexingError> {
    use Opcode::*;
    let op = v.instr.opcode();
    let outputs = output_count(v.instr);
    if let Some(reason) = undefined_reason(op) {
        return Ok(vec![OperandIndexing::undefined(reason); outputs]);
    }
    if calls_computation(op) {
        return Ok(vec![composed_elsewhere(op); outputs]);
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
        Scan => scan::scan_in_to_out(v, operand),
        Sort => sort::sort_in_to_out(v),
        TopK => sort::topk_in_to_out(v),
        SelectAndScatter => sort::sas_in_to_out(v, operand),
        Tuple => structural::tuple_in_to_out(v, operand),
        GetTupleElement | Domain | CopyDone => Ok(vec![util::identity(v.out_dims(0)?)]),
        CopyStart => (0..outputs)
            .map(|k| {
                Ok(if k < 2 {
                    util::identity(v.out_dims(k)?)
                } else {
                    OperandIndexing::none()
                })
            })
            .collect(),
        BatchNormInference | BatchNormTraining | BatchNormGrad => batch_norm::in_to_out(v, operand),
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
