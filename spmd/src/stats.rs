//! `collective_bytes` (issue 35's quality bar: hloc's partitioned modules move no more
//! than XLA's): the bytes one device's collectives move in one run of a per-device
//! module. Each collective counts the larger of its result and its operands (tuples
//! summed; the `-start` halves of async pairs count their largest result element, the
//! `-done` halves nothing), and a collective inside a loop body counts once per trip of
//! the loop's known trip count (XLA's `known_trip_count` backend config, or the count of
//! a counted loop, `hlo::trip_count`).

use std::collections::BTreeMap;

use hlo::{CompId, Computation, Instruction, Module, Opcode, Shape};

use crate::error::SpmdError;

/// The collectives of a module and the bytes they move per device per run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollectiveStats {
    /// Bytes over every collective.
    pub bytes: u64,
    /// Per opcode (`all-reduce`, ...): how many run, and their bytes.
    pub by_kind: BTreeMap<String, (u64, u64)>,
}

impl CollectiveStats {
    /// `collective_bytes: X` and one line per kind (`  all-reduce: 2 x, 1024 bytes`).
    pub fn text(&self) -> String {
        let mut out = format!("collective_bytes: {}\n", self.bytes);
        for (kind, (count, bytes)) in &self.by_kind {
            out.push_str(&format!("  {kind}: {count} run(s), {bytes} bytes\n"));
        }
        out
    }
}

/// The collectives `module`'s entry computation runs (and what it calls, loops times
/// their trip count), or why a loop's count is unknown.
pub fn collective_stats(module: &Module) -> Result<CollectiveStats, SpmdError> {
    let mut stats = CollectiveStats::default();
    visit(module, module.entry_id(), 1, &mut stats, 0)?;
    Ok(stats)
}

fn visit(
    module: &Module,
    comp: CompId,
    times: u64,
    stats: &mut CollectiveStats,
    depth: usize,
) -> Result<(), SpmdError> {
    if depth > 64 {
        return Err(SpmdError::invalid("module", "calls nest deeper than 64"));
    }
    let c = module.computation(comp);
    for (_, instr) in c.instructions() {
        if let Some(bytes) = moved(c, instr)? {
            let e = stats
                .by_kind
                .entry(
                    instr
                        .opcode()
                        .as_str()
                        .trim_end_matches("-start")
                        .to_string(),
                )
                .or_default();
            e.0 += times;
            e.1 += bytes * times;
            stats.bytes += bytes * times;
        }
        let trips = match instr.opcode() {
            Opcode::While => trip_count(module, c, instr)?,
            _ => 1,
        };
        for called in instr.called_computations() {
            // A while's condition moves nothing worth counting apart from its body's.
            visit(module, called, times * trips, stats, depth + 1)?;
        }
    }
    Ok(())
}

/// The bytes collective `instr` moves, `None` for any other instruction.
fn moved(c: &Computation, instr: &Instruction) -> Result<Option<u64>, SpmdError> {
    use Opcode::*;
    let comp_shape = |s: &Shape| bytes(s, instr);
    match instr.opcode() {
        AllReduce | AllGather | ReduceScatter | AllToAll | CollectivePermute
        | CollectiveBroadcast | RaggedAllToAll | AllReduceStart => {
            let result = comp_shape(instr.shape())?;
            let mut operands = 0;
            for &o in instr.operands() {
                operands += bytes(c.instr(o).shape(), instr)?;
            }
            Ok(Some(result.max(operands)))
        }
        AllGatherStart | CollectivePermuteStart => {
            let leaves = match instr.shape().is_tuple() {
                true => instr.shape().tuple_shapes().to_vec(),
                false => vec![instr.shape().clone()],
            };
            let mut largest = 0;
            for s in &leaves {
                largest = largest.max(comp_shape(s)?);
            }
            Ok(Some(largest))
        }
        _ => Ok(None),
    }
}

/// The bytes of `s` (tuples summed).
fn bytes(s: &Shape, instr: &Instruction) -> Result<u64, SpmdError> {
    if s.is_tuple() {
        return s
            .tuple_shapes()
            .iter()
            .map(|e| bytes(e, instr))
            .sum::<Result<u64, _>>();
    }
    if s.is_token() {
        return Ok(0);
    }
    s.byte_size()
        .map(|b| b.max(0) as u64)
        .map_err(|e| SpmdError::invalid(instr.name(), e.to_string()))
}

/// A while loop's known trip count (`hlo::trip_count`): its `known_trip_count` backend
/// config, else the count of a counted loop.
fn trip_count(module: &Module, c: &Computation, instr: &Instruction) -> Result<u64, SpmdError> {
    hlo::trip_count::known_trips(module, c, instr).ok_or_else(|| {
        SpmdError::unsupported(
            instr,
            "a loop without a known trip count (its collectives' bytes per run are unknown)",
        )
    })
}
