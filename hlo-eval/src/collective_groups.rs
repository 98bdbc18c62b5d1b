//! Who takes part in a collective, with XLA's group modes: `replica_groups` name replicas
//! (no `channel_id`: cross-replica), partitions (a channel id on an op without
//! `use_global_device_ids`, such as all-to-all or collective-permute: cross-partition),
//! replicas whose every partition joins (a channel id and `use_global_device_ids=false`),
//! or global device ids (`use_global_device_ids=true`). Groups come as lists, iota or mesh
//! forms; an empty list means every replica (or partition).

use hlo::attrs::{AttrName, AttrValue};
use hlo::{Instruction, Opcode};

use crate::device::Device;
use crate::error::EvalError;

/// XLA's `CollectiveOpGroupMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupMode {
    /// Groups of replica ids; each partition runs its own.
    CrossReplica,
    /// Groups of partition ids; each replica runs its own.
    CrossPartition,
    /// Groups of replica ids; all partitions of those replicas join.
    CrossReplicaAndPartition,
    /// Groups of global device ids.
    FlattenedId,
}

/// The group mode of collective `instr`.
pub(crate) fn group_mode(instr: &Instruction) -> GroupMode {
    let channel = instr.channel_id().is_some();
    let global = matches!(
        instr.attr(&AttrName::UseGlobalDeviceIds),
        Some(AttrValue::Bool(true))
    );
    let takes_global_ids = matches!(
        instr.opcode(),
        Opcode::AllReduce
            | Opcode::AllReduceStart
            | Opcode::AllGather
            | Opcode::AllGatherStart
            | Opcode::ReduceScatter
    );
    match (channel, takes_global_ids, global) {
        (false, _, _) => GroupMode::CrossReplica,
        (true, false, _) => GroupMode::CrossPartition,
        (true, true, false) => GroupMode::CrossReplicaAndPartition,
        (true, true, true) => GroupMode::FlattenedId,
    }
}

/// The written groups (expanded), empty for `{}` or no `replica_groups=`.
fn groups(instr: &Instruction, max_ids: i64) -> Result<Vec<Vec<i64>>, EvalError> {
    match instr.replica_groups() {
        None => Ok(Vec::new()),
        Some(g) => g.groups(max_ids).ok_or_else(|| {
            EvalError::invalid(
                instr.name(),
                format!("replica_groups={g} do not fit {max_ids} devices"),
            )
        }),
    }
}

/// The global device ids of `dev`'s group for `instr`, in group order.
pub(crate) fn participants(instr: &Instruction, dev: &Device) -> Result<Vec<i64>, EvalError> {
    let what = instr.name();
    let g = dev.grid;
    let mode = group_mode(instr);
    let groups = groups(instr, g.count().max(1))?;
    let (mine, all) = match mode {
        GroupMode::CrossReplica | GroupMode::CrossReplicaAndPartition => (dev.replica, g.replicas),
        GroupMode::CrossPartition => (dev.partition, g.partitions),
        GroupMode::FlattenedId => (dev.id(), g.count()),
    };
    let group: Vec<i64> = if groups.iter().all(Vec::is_empty) {
        if mode == GroupMode::FlattenedId {
            return Err(EvalError::invalid(
                what,
                "use_global_device_ids=true needs explicit replica_groups",
            ));
        }
        (0..all).collect()
    } else {
        let found = groups.iter().find(|grp| grp.contains(&mine));
        found.cloned().ok_or_else(|| {
            EvalError::invalid(
                what,
                format!("{mode:?} id {mine} is in none of the replica groups {groups:?}"),
            )
        })?
    };
    if let Some(&bad) = group.iter().find(|&&i| i < 0 || i >= all) {
        return Err(EvalError::invalid(
            what,
            format!("replica group member {bad} is outside 0..{all} ({mode:?})"),
        ));
    }
    Ok(match mode {
        GroupMode::CrossReplica => group
            .iter()
            .map(|r| r * g.partitions + dev.partition)
            .collect(),
        GroupMode::CrossPartition => group
            .iter()
            .map(|p| dev.replica * g.partitions + p)
            .collect(),
        GroupMode::CrossReplicaAndPartition => group
            .iter()
            .flat_map(|r| (0..g.partitions).map(move |p| r * g.partitions + p))
            .collect(),
        GroupMode::FlattenedId => group,
    })
}

/// For collective-permute: every device that may send to or receive from `dev` (its
/// partitions with a channel id, its replicas without), and `dev`'s number among them
/// as the source-target pairs name it.
pub(crate) fn permute_scope(instr: &Instruction, dev: &Device) -> (Vec<i64>, i64) {
    let g = dev.grid;
    if instr.channel_id().is_some() {
        let scope = (0..g.partitions)
            .map(|p| dev.replica * g.partitions + p)
            .collect();
        (scope, dev.partition)
    } else {
        let scope = (0..g.replicas)
            .map(|r| r * g.partitions + dev.partition)
            .collect();
        (scope, dev.replica)
    }
}
