//! Who takes part in a collective, with XLA's group modes (`CollectiveOpGroupMode`): the
//! one copy of these semantics, shared by the evaluator (`hlo-eval`) and the program's
//! collective steps (`plan`). `replica_groups` name replicas (no `channel_id`:
//! cross-replica), partitions (a channel id on an op that takes no
//! `use_global_device_ids`, such as all-to-all or collective-permute: cross-partition),
//! replicas whose every partition joins (a channel id and `use_global_device_ids=false`),
//! or global device ids (`use_global_device_ids=true`). Groups come as lists, iota or mesh
//! forms; an empty list means every replica (or partition). Device `r * partitions + p` is
//! replica `r`, partition `p` (XLA's default device assignment).
//!
//! ```
//! use hlo::collective_groups::{device_groups, Grid};
//! let m = hlo::parse_module(
//!     "HloModule m, num_partitions=4\nadd { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n\
//!      ENTRY e { p = f32[2] parameter(0)\n ROOT r = f32[2] all-reduce(p), channel_id=1, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=add }",
//! ).unwrap();
//! let r = m.instr("r").unwrap();
//! let grid = Grid { replicas: 1, partitions: 4 };
//! assert_eq!(device_groups(r.instr(), grid).unwrap(), vec![vec![0, 2], vec![1, 3]]);
//! ```

use crate::attrs::{AttrName, AttrValue};
use crate::ir::ModuleAttrValue;
use crate::{Instruction, Module, Opcode};

/// How many replicas and partitions a program runs on (the module header's
/// `replica_count` and `num_partitions`, 1 each when absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Replicas.
    pub replicas: i64,
    /// Partitions.
    pub partitions: i64,
}

impl Grid {
    /// The grid `module`'s header asks for.
    pub fn of_module(module: &Module) -> Grid {
        let int = |name| match module.attr(name) {
            Some(ModuleAttrValue::Int(n)) if *n > 0 => *n,
            _ => 1,
        };
        Grid {
            replicas: int("replica_count"),
            partitions: int("num_partitions"),
        }
    }

    /// The number of devices.
    pub fn count(&self) -> i64 {
        self.replicas.saturating_mul(self.partitions)
    }
}

/// XLA's `CollectiveOpGroupMode`: what the ids of `replica_groups` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMode {
    /// Replica ids; each partition runs its own groups (no `channel_id`).
    CrossReplica,
    /// Partition ids; each replica runs its own (a channel id on an op that takes no
    /// `use_global_device_ids`).
    CrossPartition,
    /// Replica ids whose every partition joins (a channel id,
    /// `use_global_device_ids=false`).
    CrossReplicaAndPartition,
    /// Global device ids (`use_global_device_ids=true`).
    FlattenedId,
}

/// The group mode of collective `instr`.
pub fn group_mode(instr: &Instruction) -> GroupMode {
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

/// The groups of global device ids collective `instr` forms on `grid`: each device in
/// exactly one, members in the order XLA combines and concatenates them; or why the
/// written groups do not fit the grid.
pub fn device_groups(instr: &Instruction, grid: Grid) -> Result<Vec<Vec<i64>>, String> {
    let mode = group_mode(instr);
    let written = match instr.replica_groups() {
        None => Vec::new(),
        Some(g) => g
            .groups(grid.count().max(1))
            .ok_or_else(|| format!("replica_groups={g} do not fit {} devices", grid.count()))?,
    };
    let (ids, outer) = match mode {
        GroupMode::CrossReplica | GroupMode::CrossReplicaAndPartition => {
            (grid.replicas, grid.partitions)
        }
        GroupMode::CrossPartition => (grid.partitions, grid.replicas),
        GroupMode::FlattenedId => (grid.count(), 1),
    };
    let written: Vec<Vec<i64>> = if written.iter().all(Vec::is_empty) {
        if mode == GroupMode::FlattenedId {
            return Err("use_global_device_ids=true needs explicit replica_groups".into());
        }
        vec![(0..ids).collect()]
    } else {
        written
    };
    let mut seen = vec![false; ids.max(0) as usize];
    for &i in written.iter().flatten() {
        match seen.get_mut(usize::try_from(i).unwrap_or(usize::MAX)) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(format!(
                    "replica group member {i} is outside 0..{ids} or repeated ({mode:?})"
                ))
            }
        }
    }
    if seen.contains(&false) {
        return Err(format!(
            "replica_groups {written:?} leave out some of 0..{ids} ({mode:?})"
        ));
    }
    let p = grid.partitions;
    Ok(match mode {
        GroupMode::CrossReplica => (0..outer)
            .flat_map(|part| {
                written
                    .iter()
                    .map(move |g| g.iter().map(|r| r * p + part).collect())
            })
            .collect(),
        GroupMode::CrossPartition => (0..outer)
            .flat_map(|rep| {
                written
                    .iter()
                    .map(move |g| g.iter().map(|q| rep * p + q).collect())
            })
            .collect(),
        GroupMode::CrossReplicaAndPartition => written
            .iter()
            .map(|g| {
                g.iter()
                    .flat_map(|r| (0..p).map(move |q| r * p + q))
                    .collect()
            })
            .collect(),
        GroupMode::FlattenedId => written,
    })
}

/// The global device ids of `device`'s group for collective `instr`, in group order.
pub fn group_of(instr: &Instruction, grid: Grid, device: i64) -> Result<Vec<i64>, String> {
    device_groups(instr, grid)?
        .into_iter()
        .find(|g| g.contains(&device))
        .ok_or_else(|| format!("device {device} is in none of the groups"))
}

/// (source, target) pairs of global device ids.
pub type Pairs = Vec<(i64, i64)>;

/// The scopes of collective-permute `instr` on `grid`: with a channel id the
/// source-target pairs number partitions, within each replica (one scope per replica);
/// without, they number replicas, within each partition.
pub fn permute_scopes(instr: &Instruction, grid: Grid) -> Vec<Vec<i64>> {
    let p = grid.partitions;
    match instr.channel_id().is_some() {
        true => (0..grid.replicas)
            .map(|r| (0..p).map(|q| r * p + q).collect())
            .collect(),
        false => (0..p)
            .map(|q| (0..grid.replicas).map(|r| r * p + q).collect())
            .collect(),
    }
}

/// The scopes ([`permute_scopes`]) and global (source, target) pairs of
/// collective-permute `instr` on `grid`, or why its pairs are malformed.
pub fn permute_pairs(instr: &Instruction, grid: Grid) -> Result<(Vec<Vec<i64>>, Pairs), String> {
    let written = match instr.attr(&AttrName::SourceTargetPairs) {
        Some(AttrValue::IntListList(p)) => p.clone(),
        None => Vec::new(),
        _ => return Err("malformed source_target_pairs".into()),
    };
    let scopes = permute_scopes(instr, grid);
    let size = scopes.first().map_or(0, Vec::len) as i64;
    let mut targets = Vec::new();
    for pair in &written {
        match pair[..] {
            [s, t] if (0..size).contains(&s) && (0..size).contains(&t) => {
                if targets.contains(&t) {
                    return Err(format!("target {t} receives twice"));
                }
                targets.push(t);
            }
            _ => return Err(format!("source-target pair {pair:?} is outside 0..{size}")),
        }
    }
    let pairs = scopes
        .iter()
        .flat_map(|scope| {
            written
                .iter()
                .map(move |q| (scope[q[0] as usize], scope[q[1] as usize]))
        })
        .collect();
    Ok((scopes, pairs))
}
