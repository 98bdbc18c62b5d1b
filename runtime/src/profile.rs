//! Per-thunk run times (`hloc run --profile`): where a compiled program spends its time,
//! by kernel, library call and copy, summed over runs.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use codegen::thunk::{Program, Thunk};

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

    /// A table, slowest first: total milliseconds, share of the profiled total, calls and
    /// the label; `runs` divides the totals into per-run figures.
    pub fn table(&self, runs: u64) -> String {
        let runs = runs.max(1) as f64;
        let total: Duration = self.entries.iter().map(|e| e.1).sum();
        let mut rows: Vec<&(String, Duration, u64)> = self.entries.iter().collect();
        rows.sort_by_key(|e| std::cmp::Reverse(e.1));
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>10} {:>6} {:>7}  thunk (per run)",
            "ms", "%", "calls"
        );
        for (label, took, calls) in rows {
            let share = if total.is_zero() {
                0.0
            } else {
                100.0 * took.as_secs_f64() / total.as_secs_f64()
            };
            let _ = writeln!(
                out,
                "{:>10.3} {:>6.1} {:>7}  {label}",
                took.as_secs_f64() * 1e3 / runs,
                share,
                (*calls as f64 / runs).round() as u64
            );
        }
        let _ = writeln!(
            out,
            "{:>10.3} {:>6.1} {:>7}  total",
            total.as_secs_f64() * 1e3 / runs,
            100.0,
            ""
        );
        out
    }
}

/// The profile label of a thunk (as `thunks.txt` names it, without its buffers).
pub fn label(p: &Program, t: &Thunk) -> String {
    match t {
        Thunk::Kernel { kernel, blocks, .. } => {
            format!("kernel {} blocks={blocks}", p.kernels[*kernel].name)
        }
        Thunk::Gemm { shape, out, .. } => format!(
            "gemm.{} m={} n={} k={} batch={} -> %{}",
            shape.ty,
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
        Thunk::While { name, .. } => format!("while {name}"),
        Thunk::Conditional { .. } => "conditional".into(),
    }
}
