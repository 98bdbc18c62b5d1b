//! Which ops make or mark manual regions: the custom calls that enter and leave one, the
//! ops whose value is each device's own (ids, collectives), and the `Sharding` calls that
//! mark a value as a region's.

use hlo::sharding::{ShardingKind, SubgroupKind};
use hlo::{Instruction, Opcode};

/// Custom calls that enter a manual region.
pub(crate) fn enters(instr: &Instruction) -> bool {
    matches!(
        instr.custom_call_target(),
        Some("xla.sdy.GlobalToLocalShape" | "SPMDFullToShardShape")
    ) && instr.opcode() == Opcode::CustomCall
}

/// Custom calls that leave a manual region.
pub(crate) fn leaves(instr: &Instruction) -> bool {
    matches!(
        instr.custom_call_target(),
        Some("xla.sdy.LocalToGlobalShape" | "SPMDShardToFullShape")
    ) && instr.opcode() == Opcode::CustomCall
}

/// Ops whose value is each device's own in any program: the ids and the collectives
/// (which an unpartitioned module holds only inside manual regions).
pub(crate) fn per_device(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        PartitionId
            | ReplicaId
            | AllReduce
            | AllReduceStart
            | AllReduceDone
            | AllGather
            | AllGatherStart
            | AllGatherDone
            | ReduceScatter
            | AllToAll
            | RaggedAllToAll
            | CollectivePermute
            | CollectivePermuteStart
            | CollectivePermuteDone
            | CollectiveBroadcast
    )
}

/// A `Sharding` call that marks its value as a manual region's (`{manual}`, or a
/// partially manual sharding with a `manual` subgroup), even where its operand is made
/// in the region from whole values (a constant broadcast in the body).
pub(crate) fn manual_constraint(instr: &Instruction) -> bool {
    instr.opcode() == Opcode::CustomCall
        && instr.custom_call_target() == Some("Sharding")
        && instr.sharding().is_some_and(|s| match &s.kind {
            ShardingKind::Manual => true,
            ShardingKind::Tiled(t) => t.subgroups.contains(&SubgroupKind::Manual),
            _ => false,
        })
}
