//! Per-step run times as a backend records them (`hloc run --profile`): time and call
//! count per step label, where the label names the step as `thunks.txt` does. The
//! driver sets them beside the cost model's predictions; the data lives here so that every
//! backend records the same thing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::{Program, Thunk};

/// Whether profiles created from now on keep every call ([`Profile::set_tracing`]).
static TRACING: AtomicBool = AtomicBool::new(false);

/// The instant trace times count from: the first use in this process, so that the
/// calls of every profile lie on one time line.
fn trace_origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// One call of a thunk, kept when tracing ([`Profile::set_tracing`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Call {
    /// Index of its label in [`Profile::entries`].
    pub entry: usize,
    /// When it started, from the process's trace origin.
    pub start: Duration,
    /// How long it ran.
    pub took: Duration,
}

/// Time and call count per thunk label, in first-run order (and, when tracing, every
/// call, [`Profile::set_tracing`]).
#[derive(Clone, Debug)]
pub struct Profile {
    entries: Vec<(String, Duration, u64)>,
    index: HashMap<String, usize>,
    calls: Option<Vec<Call>>,
}

impl Default for Profile {
    /// An empty profile, keeping every call when tracing is on ([`Profile::set_tracing`]).
    fn default() -> Profile {
        let tracing = TRACING.load(Ordering::Relaxed);
        if tracing {
            trace_origin();
        }
        Profile {
            entries: Vec::new(),
            index: HashMap::new(),
            calls: tracing.then(Vec::new),
        }
    }
}

impl Profile {
    /// Makes every profile created from now on, in this process, keep each call's start
    /// and duration as well as the totals ([`Profile::calls`]; `hloc run --trace`). A
    /// switch for the process rather than a backend option: a backend creates its
    /// profiles itself, and a trace is asked for by the one command running. Off, a
    /// recorded call costs one branch more.
    pub fn set_tracing(on: bool) {
        TRACING.store(on, Ordering::Relaxed);
    }

    /// Adds one call of `label` that took `took`.
    pub fn record(&mut self, label: String, took: Duration) {
        self.entry(label, took);
    }

    /// Adds one call of `label` that started at `start` and took `took`; when tracing,
    /// keeps the call itself too.
    pub fn record_call(&mut self, label: String, start: Instant, took: Duration) {
        let entry = self.entry(label, took);
        if let Some(calls) = &mut self.calls {
            calls.push(Call {
                entry,
                start: start.saturating_duration_since(trace_origin()),
                took,
            });
        }
    }

    /// Adds `took` to `label`'s entry; returns its index.
    fn entry(&mut self, label: String, took: Duration) -> usize {
        let i = *self.index.entry(label.clone()).or_insert_with(|| {
            self.entries.push((label, Duration::ZERO, 0));
            self.entries.len() - 1
        });
        self.entries[i].1 += took;
        self.entries[i].2 += 1;
        i
    }

    /// Every call in the order they ran, when the profile was created tracing.
    pub fn calls(&self) -> Option<&[Call]> {
        self.calls.as_deref()
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
        Thunk::Collective { step, .. } => step.label(),
        Thunk::While { name, .. } => format!("while {name}"),
        Thunk::Conditional { .. } => "conditional".into(),
    }
}
