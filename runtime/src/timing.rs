//! Repeated runs with timing, and the comparison with the reference evaluator (for
//! `hloc run --repeat N --check-reference`).

use std::time::Instant;

use hlo::{Literal, Module};

use crate::error::RuntimeError;
use crate::{Executable, Stats};

/// Times of repeated runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    /// Median run time in milliseconds.
    pub median_ms: f64,
    /// Fastest run in milliseconds.
    pub min_ms: f64,
    /// Number of timed runs.
    pub runs: usize,
}

impl Timing {
    /// The exact line `hloc run --repeat N` prints after the outputs.
    pub fn line(&self, stats: &Stats) -> String {
        format!(
            "time: median {:.4} ms, min {:.4} ms over {} runs; compile {:.1} ms (cache {})",
            self.median_ms,
            self.min_ms,
            self.runs,
            stats.compile_ms,
            stats.cache_word()
        )
    }
}

/// Runs once to warm up, then `repeat` timed times; returns the last outputs and times.
/// The arguments are put in the parameters' layouts once, before the runs, and the outputs
/// become literals once, after them: a timed run is the executable's work alone (output
/// allocation included), as a caller holding device buffers sees it. With profiling on
/// ([`Executable::set_profiling`]), the profile covers the timed runs (the warm-up when
/// there are none).
pub fn run_repeated(
    exe: &Executable,
    args: &[Literal],
    repeat: usize,
) -> Result<(Vec<Literal>, Timing), RuntimeError> {
    let args = exe.flatten_arguments(args);
    let prepared = exe.prepare(&args)?;
    let mut raw = exe.run_prepared(&prepared)?;
    if repeat > 0 {
        // A profile covers the timed runs only.
        let _ = exe.take_profile();
    }
    let mut times = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let t = Instant::now();
        raw = exe.run_prepared(&prepared)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let outs = exe.literals(&raw)?;
    times.sort_by(f64::total_cmp);
    let median_ms = if times.is_empty() {
        0.0
    } else if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2.0
    };
    let min_ms = times.first().copied().unwrap_or(0.0);
    Ok((
        outs,
        Timing {
            median_ms,
            min_ms,
            runs: repeat,
        },
    ))
}

/// Compares `outputs` (flattened leaves) with the reference evaluator's on `args`, with the
/// one documented tolerance at each output's precision of last rounding
/// ([`hlo_eval::report`]); `Err` lists every differing output with its first differing
/// element.
pub fn check_reference(
    module: &Module,
    args: &[Literal],
    outputs: &[Literal],
) -> Result<(), String> {
    let reports = reference_reports(module, args, outputs)?;
    let bad: Vec<String> = reports
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.matches)
        .map(|(i, r)| {
            let shape = outputs[i]
                .as_array()
                .map(|a| a.shape().to_string_without_layout())
                .unwrap_or_default();
            r.line(&format!("out{i}"), &shape, "reference")
        })
        .collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {} outputs differ from the reference:\n{}",
            bad.len(),
            reports.len(),
            bad.join("\n")
        ))
    }
}

/// Every output (flattened leaves) compared with the reference evaluator's on `args`:
/// one [`hlo_eval::report::OutputReport`] per output; `Err` when the reference fails or
/// the outputs do not line up with its results.
pub fn reference_reports(
    module: &Module,
    args: &[Literal],
    outputs: &[Literal],
) -> Result<Vec<hlo_eval::report::OutputReport>, String> {
    // Recording eigh/svd calls: their vectors are checked by reconstruction.
    let (want, calls) = hlo_eval::numeric::eigen_check::evaluate_recording(module, args)
        .map_err(|e| format!("reference evaluator: {e}"))?;
    let mut leaves = Vec::new();
    flatten(want, &mut leaves);
    if leaves.len() != outputs.len() {
        return Err(format!(
            "{} outputs, the reference has {}",
            outputs.len(),
            leaves.len()
        ));
    }
    let precision = hlo_eval::report::rounding_types(module);
    outputs
        .iter()
        .zip(&leaves)
        .enumerate()
        .map(|(i, (g, w))| {
            let (Some(g), Some(w)) = (g.as_array(), w.as_array()) else {
                return Err(format!("out{i}: not an array"));
            };
            let p = precision.get(i).copied().flatten();
            Ok(hlo_eval::numeric::eigen_check::output_report(
                module, &calls, i, g, w, p,
            ))
        })
        .collect()
}

fn flatten(l: Literal, out: &mut Vec<Literal>) {
    match l {
        Literal::Tuple(t) => t.into_iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}
