//! Per-step run times as a backend records them (`hloc run --profile`): time and call
//! count per step label, where the label names the step as `thunks.txt` does. The
//! driver sets them beside the cost model's predictions; the data lives here so that every
//! backend records the same thing.

use std::collections::HashMap;
use std::time::Duration;

use crate::{Program, Thunk};

/// Time and call count per thunk label, in first-run order.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    entries: Vec<(String, Duration, u64)>,
    index: HashMap<String, usize>,
}

impl Profile {
    /// Adds one call of `label` that took `took`.
    pub fn record(&mut self, label: String, took: Duration) {
        let i = *self.index.entry(label.clone()).or_insert_with(|| {
            self.entries.push((label, Duration::ZERO, 0));
            self.entries.len() - 1
        });
        self.entries[i].1 += took;
        self.entries[i].2 += 1;
    }

    /// `(label, total time, calls)` of every thunk, in first-run order.
    pub fn entries(&self) -> &[(String, Duration, u64)] {
        &self.entries
    }
}

/// The profile label of a thunk (as `thunks.txt` names it, without its buffers).
pub fn profile_label(p: &Program, t: &Thunk) -> String {
    match t {
        Thunk::Kernel { kernel, blocks, .. } => {
            format!("kernel {} blocks={blocks}", p.kernels[*kernel].name)
        }
        Thunk::StreamedGemm { producer, gemm, .. } => {
            format!(
                "streamed {} into {}",
                profile_label(p, producer),
                profile_label(p, gemm)
            )
        }
        Thunk::Gemm { shape, out, .. } => format!(
            "gemm.{} m={} n={} k={} batch={} -> %{}",
            shape.type_label(),
            shape.m,
            shape.n,
            shape.k,
            shape.batch.iter().map(|b| b.0).product::<usize>(),
            p.buffers[*out].name
        ),
        Thunk::Library { call, outputs, .. } => format!(
            "library {} -> {}",
            call.name(),
            outputs
                .iter()
                .map(|a| format!("%{}", p.buffers[a.buffer].name))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Thunk::Copy { dst, bytes, .. } => {
            format!("copy {bytes} bytes -> %{}", p.buffers[*dst].name)
        }
        Thunk::Collective(c) => c.label(),
        Thunk::While { name, .. } => format!("while {name}"),
        Thunk::Conditional { .. } => "conditional".into(),
    }
}
