//! Collectives as steps of the program (issue 35): what each device of an SPMD run
//! exchanges with the others, as data a backend executes through a
//! [`crate::Communicator`]. The replica groups of every XLA group mode are resolved at
//! build time into groups of global device ids (by [`hlo::collective_groups`], the one
//! copy of XLA's group semantics), so that a backend needs no HLO to run them.

use hlo::ir::reducer::Reducer;
use hlo::Instruction;

use codegen::CodegenError;

pub use hlo::collective_groups::Grid;

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

fn invalid(instr: &Instruction, detail: String) -> CodegenError {
    CodegenError::unsupported(instr.opcode().as_str(), instr.name(), detail)
}

/// The groups of global device ids collective `instr` forms on `grid`: each device in
/// exactly one, members in the order XLA combines and concatenates them (the semantics
/// live in [`hlo::collective_groups`], shared with the evaluator).
pub fn device_groups(instr: &Instruction, grid: Grid) -> Result<Vec<Vec<i64>>, CodegenError> {
    hlo::collective_groups::device_groups(instr, grid).map_err(|e| invalid(instr, e))
}

/// (source, target) pairs of global device ids.
pub type Pairs = hlo::collective_groups::Pairs;

/// The scopes and global (source, target) pairs of collective-permute `instr` on `grid`:
/// with a channel id the pairs number partitions, within each replica; without, they
/// number replicas, within each partition.
pub fn permute_pairs(
    instr: &Instruction,
    grid: Grid,
) -> Result<(Vec<Vec<i64>>, Pairs), CodegenError> {
    hlo::collective_groups::permute_pairs(instr, grid).map_err(|e| invalid(instr, e))
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
