//! Collectives as steps of the program (issue 35): what each device of an SPMD run
//! exchanges with the others, as data a backend executes through a
//! [`crate::Communicator`]. The replica groups of every XLA group mode are resolved here,
//! once, into groups of global device ids (device `r * partitions + p` is replica `r`,
//! partition `p`, XLA's default assignment), so that a backend needs no HLO to run them.

use hlo::attrs::{AttrName, AttrValue};
use hlo::ir::reducer::Reducer;
use hlo::ir::ModuleAttrValue;
use hlo::{Instruction, Module, Opcode};

use codegen::CodegenError;

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

/// What a collective step computes on each device.
#[derive(Clone, Debug, PartialEq)]
pub enum CollectiveKind {
    /// Every operand combined element by element over the group, in group order.
    AllReduce {
        /// The combining op (`to_apply`, recognized by [`hlo::ir::reducer::classify`]).
        reducer: Reducer,
    },
    /// The group's operands concatenated along `dim`, in group order.
    AllGather {
        /// The gathered dimension.
        dim: usize,
    },
    /// The reduced operand split in group-size pieces along `dim`; member `k` keeps piece
    /// `k`.
    ReduceScatter {
        /// The scattered dimension.
        dim: usize,
        /// The combining op.
        reducer: Reducer,
    },
    /// With a dimension: piece `j` (along it) of every operand goes to member `j`, and
    /// the pieces received are concatenated along it in group order. Without: operand
    /// `j` goes to member `j`, result `i` is what member `i` sent.
    AllToAll {
        /// The split and concatenated dimension (`dimensions={d}`), if any.
        split_dim: Option<usize>,
    },
    /// Each device receives the operand of the source paired with it, zeros when none
    /// is; `groups` holds the scopes within which the pairs are numbered.
    CollectivePermute {
        /// (source, target) global device ids.
        pairs: Vec<(i64, i64)>,
    },
    /// Every member receives the group's first member's operands.
    CollectiveBroadcast,
    /// Writes this device's replica id (`u32`), no exchange.
    ReplicaId,
    /// Writes this device's partition id (`u32`), no exchange.
    PartitionId,
}

impl CollectiveKind {
    /// The name dumps print.
    pub fn name(&self) -> &'static str {
        match self {
            CollectiveKind::AllReduce { .. } => "all-reduce",
            CollectiveKind::AllGather { .. } => "all-gather",
            CollectiveKind::ReduceScatter { .. } => "reduce-scatter",
            CollectiveKind::AllToAll { .. } => "all-to-all",
            CollectiveKind::CollectivePermute { .. } => "collective-permute",
            CollectiveKind::CollectiveBroadcast => "collective-broadcast",
            CollectiveKind::ReplicaId => "replica-id",
            CollectiveKind::PartitionId => "partition-id",
        }
    }
}

/// Whether a step is a whole collective or one half of an async pair (`-start` posts the
/// operands and returns, `-done` waits and writes the results: independent work the
/// schedule puts between them overlaps with the exchange).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Posts and waits in one step.
    Sync,
    /// Posts the operands under pair number `id` (unique within the program).
    Start(usize),
    /// Waits for pair `id` and writes the results.
    Done(usize),
}

/// One collective step of the program (see [`crate::Thunk::Collective`], which holds its
/// operands and results).
#[derive(Clone, Debug, PartialEq)]
pub struct Collective {
    /// The instruction (for messages and dumps).
    pub name: String,
    /// What it computes.
    pub kind: CollectiveKind,
    /// The groups of global device ids (every device in exactly one); for
    /// collective-permute the scopes every device of which meets at this step.
    pub groups: Vec<Vec<i64>>,
    /// Start or done of an async pair, or both at once.
    pub phase: Phase,
}

impl Collective {
    /// The group `device` belongs to.
    pub fn group_of(&self, device: i64) -> Option<&[i64]> {
        self.groups
            .iter()
            .find(|g| g.contains(&device))
            .map(Vec::as_slice)
    }
}

/// XLA's `CollectiveOpGroupMode`: what the ids of `replica_groups` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GroupMode {
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

fn group_mode(instr: &Instruction) -> GroupMode {
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

fn invalid(instr: &Instruction, detail: String) -> CodegenError {
    CodegenError::unsupported(instr.opcode().as_str(), instr.name(), detail)
}

/// The groups of global device ids collective `instr` forms on `grid`: each device in
/// exactly one, members in the order XLA combines and concatenates them.
pub fn device_groups(instr: &Instruction, grid: Grid) -> Result<Vec<Vec<i64>>, CodegenError> {
    let mode = group_mode(instr);
    let written = match instr.replica_groups() {
        None => Vec::new(),
        Some(g) => g.groups(grid.count().max(1)).ok_or_else(|| {
            invalid(
                instr,
                format!("replica_groups={g} do not fit {} devices", grid.count()),
            )
        })?,
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
            return Err(invalid(
                instr,
                "use_global_device_ids=true needs explicit replica_groups".into(),
            ));
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
                return Err(invalid(
                    instr,
                    format!("replica group member {i} is outside 0..{ids} or repeated ({mode:?})"),
                ))
            }
        }
    }
    if seen.contains(&false) {
        return Err(invalid(
            instr,
            format!("replica_groups {written:?} leave out some of 0..{ids} ({mode:?})"),
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

/// (source, target) pairs of global device ids.
pub type Pairs = Vec<(i64, i64)>;

/// The scopes and global (source, target) pairs of collective-permute `instr` on `grid`:
/// with a channel id the pairs number partitions, within each replica; without, they
/// number replicas, within each partition.
pub fn permute_pairs(
    instr: &Instruction,
    grid: Grid,
) -> Result<(Vec<Vec<i64>>, Pairs), CodegenError> {
    let written = match instr.attr(&AttrName::SourceTargetPairs) {
        Some(AttrValue::IntListList(p)) => p.clone(),
        None => Vec::new(),
        _ => return Err(invalid(instr, "malformed source_target_pairs".into())),
    };
    let p = grid.partitions;
    let cross_partition = instr.channel_id().is_some();
    let (size, outer) = match cross_partition {
        true => (grid.partitions, grid.replicas),
        false => (grid.replicas, grid.partitions),
    };
    let global = |o: i64, i: i64| match cross_partition {
        true => o * p + i,
        false => i * p + o,
    };
    let mut targets = Vec::new();
    for pair in &written {
        match pair[..] {
            [s, t] if (0..size).contains(&s) && (0..size).contains(&t) => {
                if targets.contains(&t) {
                    return Err(invalid(instr, format!("target {t} receives twice")));
                }
                targets.push(t);
            }
            _ => {
                return Err(invalid(
                    instr,
                    format!("source-target pair {pair:?} is outside 0..{size}"),
                ))
            }
        }
    }
    let scopes = (0..outer)
        .map(|o| (0..size).map(|i| global(o, i)).collect())
        .collect();
    let pairs = (0..outer)
        .flat_map(|o| {
            written
                .iter()
                .map(move |q| (global(o, q[0]), global(o, q[1])))
        })
        .collect();
    Ok((scopes, pairs))
}

impl Collective {
    /// The step's name with its phase and parameters, as `thunks.txt` and profiles show
    /// it: `all-reduce add`, `all-gather-start#0 dim=1`, `all-reduce-done#0`.
    pub fn label(&self) -> String {
        let base = self.kind.name();
        let head = match self.phase {
            Phase::Sync => base.to_string(),
            Phase::Start(id) => format!("{base}-start#{id}"),
            Phase::Done(id) => return format!("{base}-done#{id}"),
        };
        let reducer = |r: &Reducer| format!("{:?}", r).to_lowercase();
        match &self.kind {
            CollectiveKind::AllReduce { reducer: r } => format!("{head} {}", reducer(r)),
            CollectiveKind::AllGather { dim } => format!("{head} dim={dim}"),
            CollectiveKind::ReduceScatter { dim, reducer: r } => {
                format!("{head} {} dim={dim}", reducer(r))
            }
            CollectiveKind::AllToAll { split_dim: Some(d) } => format!("{head} dim={d}"),
            CollectiveKind::CollectivePermute { pairs } => {
                let p: Vec<String> = pairs.iter().map(|(s, t)| format!("{s}->{t}")).collect();
                format!("{head} pairs={{{}}}", p.join(","))
            }
            _ => head,
        }
    }

    /// The groups as `thunks.txt` prints them: `{0,1},{2,3}`.
    pub fn groups_text(&self) -> String {
        self.groups
            .iter()
            .map(|g| {
                let ids: Vec<String> = g.iter().map(i64::to_string).collect();
                format!("{{{}}}", ids.join(","))
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}
