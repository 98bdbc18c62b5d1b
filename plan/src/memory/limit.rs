//! Building under a memory limit (issue 32 item 6, `hloc compile|run --memory-limit`):
//! the program the builder makes by default (the lowest-peak schedule) when its
//! allocations fit; else every other candidate schedule of the entry, each with the
//! default GEMM streaming and with every GEMM lhs streamed block by block, the smallest
//! that fits; else the same again with cheap values recomputed before their late readers
//! ([`super::remat::recompute`]); else a clear error with the least the planner reached
//! and the values live at its peak. The limit bounds `buffer_bytes`, what a run allocates
//! (never less than the peak), so a program that passes never allocates past it.

use std::fmt;

use codegen::CodegenError;
use hlo::Module;

use super::schedule::schedule;
use crate::{build_program_with, BuildOptions, Program};

/// Values listed as live at the peak of a program over the limit.
const LIVE_LISTED: usize = 8;

/// No program the planner can make fits the limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverLimit {
    /// The limit, in bytes.
    pub limit: u64,
    /// The fewest bytes any tried program allocates (its `buffer_bytes`).
    pub lowest_bytes: u64,
    /// That program's live bytes at its peak step.
    pub peak_bytes: u64,
    /// How that program was made (its schedule and streaming).
    pub how: String,
    /// The largest values live at its peak step, largest first: (name, bytes).
    pub live_at_peak: Vec<(String, u64)>,
}

impl fmt::Display for OverLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no schedule fits the memory limit of {} bytes: the least the planner reached \
             is {} bytes ({} bytes live at the peak; {})",
            self.limit, self.lowest_bytes, self.peak_bytes, self.how
        )?;
        let live: Vec<String> = self
            .live_at_peak
            .iter()
            .map(|(n, b)| format!("%{n} ({b} bytes)"))
            .collect();
        if !live.is_empty() {
            write!(f, "; live at the peak: {}", live.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for OverLimit {}

/// The largest buffers of `p` live at its peak step (parameters and constants are live
/// throughout; outputs from their definition to the end).
pub fn live_at_peak(p: &Program) -> Vec<(String, u64)> {
    let finite = |t: usize| (t != usize::MAX).then_some(t);
    let last = p
        .buffers
        .iter()
        .flat_map(|b| [b.defined_at, b.last_use.and_then(finite)])
        .flatten()
        .max()
        .unwrap_or(0);
    // A buffer an in-place kernel writes over ends the step before: from there its bytes
    // are the output's.
    let range = |n: usize, b: &crate::Buffer| match b.defined_at {
        None => (0, last),
        Some(d) => match super::in_place::overwritten_at(p, n) {
            Some(t) if t > d => (d, t - 1),
            _ => (d, b.last_use.map_or(d, |u| u.min(last)).max(d)),
        },
    };
    let mut at = vec![0u64; last + 1];
    for (n, b) in p.buffers.iter().enumerate() {
        let (s, e) = range(n, b);
        for slot in &mut at[s..=e] {
            *slot += b.bytes;
        }
    }
    let step = (0..at.len()).max_by_key(|&t| (at[t], std::cmp::Reverse(t)));
    let Some(step) = step else {
        return Vec::new();
    };
    let mut live: Vec<(String, u64)> = p
        .buffers
        .iter()
        .enumerate()
        .filter(|&(n, b)| {
            let (s, e) = range(n, b);
            s <= step && step <= e
        })
        .map(|(_, b)| (b.name.clone(), b.bytes))
        .collect();
    live.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    live.truncate(LIVE_LISTED);
    live
}

/// The program of `module` whose allocations fit in `limit` bytes (see the module docs),
/// or why none does. Building errors pass through.
pub fn build_within(
    module: &Module,
    options: &BuildOptions,
    limit: u64,
) -> Result<Result<Program, OverLimit>, CodegenError> {
    let first = build_program_with(module, options)?;
    if first.buffer_bytes() <= limit {
        return Ok(Ok(first));
    }
    let candidates = schedule(module, module.entry_id(), &super::dataflow(module)).candidates;
    let stream_default = options.stream_min_bytes;
    let mut best = (
        first,
        "the lowest-peak schedule, default streaming".to_string(),
    );
    // Without recomputation first (it runs kernels twice), then with it.
    for (recompute, again) in [(false, ""), (true, ", cheap values recomputed")] {
        for (k, c) in candidates.iter().enumerate() {
            for (stream, words) in [(stream_default, "default"), (0, "every GEMM lhs")] {
                let tried = BuildOptions {
                    entry_schedule: Some(k),
                    stream_min_bytes: stream,
                    recompute,
                    ..options.clone()
                };
                let p = build_program_with(module, &tried)?;
                if p.buffer_bytes() < best.0.buffer_bytes() {
                    let how = format!("schedule {}, streaming {words}{again}", c.name);
                    best = (p, how);
                }
                if best.0.buffer_bytes() <= limit {
                    return Ok(Ok(best.0));
                }
            }
        }
    }
    let (p, how) = best;
    Ok(Err(OverLimit {
        limit,
        lowest_bytes: p.buffer_bytes(),
        peak_bytes: p.peak_bytes,
        how,
        live_at_peak: live_at_peak(&p),
    }))
}
