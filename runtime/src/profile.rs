//! Per-thunk run times (`hloc run --profile`): where a compiled program spends its time,
//! by kernel, library call and copy, summed over runs, beside the cost model's prediction
//! ([`crate::Predictions`]).

use std::fmt::Write as _;
use std::time::Duration;

use crate::predict::Predictions;

/// A backend's record of one or more runs: time and calls per step label.
pub use plan::Profile;

/// The profile's figures beside the cost model's.
pub trait ProfileTable {
    /// A table, slowest first (see [`table`]).
    fn table(&self, runs: u64, model: &Predictions) -> String;
    /// Model against measurement over every thunk with both figures.
    fn summary(&self, model: &Predictions) -> Summary;
}

impl ProfileTable for Profile {
    fn table(&self, runs: u64, model: &Predictions) -> String {
        table(self, runs, model)
    }

    fn summary(&self, model: &Predictions) -> Summary {
        summary(self, model)
    }
}

/// A table, slowest first: total milliseconds, share of the profiled total, calls,
/// the model's milliseconds (`model`'s prediction per call times the calls; `-` where
/// it has none), model over measured, and the label; `runs` divides the totals into
/// per-run figures. After the `total` row, one line compares model and measurement
/// over the thunks with both figures (see [`Summary`]).
pub fn table(profile: &Profile, runs: u64, model: &Predictions) -> String {
    let runs = runs.max(1) as f64;
    let total: Duration = profile.entries().iter().map(|e| e.1).sum();
    let mut rows: Vec<&(String, Duration, u64)> = profile.entries().iter().collect();
    rows.sort_by_key(|e| std::cmp::Reverse(e.1));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>10} {:>6} {:>7} {:>10} {:>14}  thunk (per run)",
        "ms", "%", "calls", "model ms", "model/measured"
    );
    for (label, took, calls) in rows {
        let share = if total.is_zero() {
            0.0
        } else {
            100.0 * took.as_secs_f64() / total.as_secs_f64()
        };
        let modelled = model
            .seconds_per_call(label)
            .map(|s| s * *calls as f64 / runs);
        let ratio = modelled.and_then(|m| ratio(m, took.as_secs_f64() / runs));
        let _ = writeln!(
            out,
            "{:>10.3} {:>6.1} {:>7} {:>10} {:>14}  {label}",
            took.as_secs_f64() * 1e3 / runs,
            share,
            (*calls as f64 / runs).round() as u64,
            modelled.map_or("-".into(), |m| format!("{:.4}", m * 1e3)),
            ratio.map_or("-".into(), |r| hlo::literal::format_g(r, 3)),
        );
    }
    let _ = writeln!(
        out,
        "{:>10.3} {:>6.1} {:>7}  total",
        total.as_secs_f64() * 1e3 / runs,
        100.0,
        ""
    );
    let _ = writeln!(out, "{}", summary(profile, model).line());
    out
}

/// The figures of [`table`] as JSON (`hloc run --profile-json`), for tools to read:
/// `{"runs", "total_ms", "thunks": [{"label", "ms", "share", "calls", "model_ms",
/// "model_over_measured"}]}`, per run, slowest first; `null` where the model has no figure.
pub fn json(profile: &Profile, runs: u64, model: &Predictions) -> serde_json::Value {
    let per_run = runs.max(1) as f64;
    let total: Duration = profile.entries().iter().map(|e| e.1).sum();
    let mut rows: Vec<&(String, Duration, u64)> = profile.entries().iter().collect();
    rows.sort_by_key(|e| std::cmp::Reverse(e.1));
    let thunks: Vec<serde_json::Value> = rows
        .into_iter()
        .map(|(label, took, calls)| {
            let seconds = took.as_secs_f64() / per_run;
            let modelled = model
                .seconds_per_call(label)
                .map(|s| s * *calls as f64 / per_run);
            let share = if total.is_zero() {
                0.0
            } else {
                100.0 * took.as_secs_f64() / total.as_secs_f64()
            };
            serde_json::json!({
                "label": label,
                "ms": seconds * 1e3,
                "share": share,
                "calls": *calls as f64 / per_run,
                "model_ms": modelled.map(|m| m * 1e3),
                "model_over_measured": modelled.and_then(|m| ratio(m, seconds)),
            })
        })
        .collect();
    serde_json::json!({
        "runs": runs.max(1),
        "total_ms": total.as_secs_f64() * 1e3 / per_run,
        "thunks": thunks,
    })
}

/// Model against measurement over every thunk with both figures.
pub fn summary(profile: &Profile, model: &Predictions) -> Summary {
    let total: f64 = profile.entries().iter().map(|e| e.1.as_secs_f64()).sum();
    let mut all = Accumulator::default();
    let mut kernels = Accumulator::default();
    for (label, took, calls) in profile.entries() {
        let measured = took.as_secs_f64();
        let Some(r) = model
            .seconds_per_call(label)
            .and_then(|s| ratio(s * *calls as f64, measured))
        else {
            continue;
        };
        all.add(r, measured);
        if label.starts_with("kernel ") {
            kernels.add(r, measured);
        }
    }
    let share = |a: &Accumulator| {
        if total > 0.0 {
            100.0 * a.seconds / total
        } else {
            0.0
        }
    };
    Summary {
        thunks: profile.entries().len(),
        compared: all.count,
        geomean: all.geomean(),
        share: share(&all),
        kernels: kernels.count,
        kernel_geomean: kernels.geomean(),
        kernel_share: share(&kernels),
    }
}

/// `model / measured`, when both are positive.
fn ratio(model: f64, measured: f64) -> Option<f64> {
    (model > 0.0 && measured > 0.0 && model.is_finite()).then(|| model / measured)
}

/// Sums of log ratios and measured time.
#[derive(Default)]
struct Accumulator {
    count: usize,
    log_sum: f64,
    seconds: f64,
}

impl Accumulator {
    fn add(&mut self, ratio: f64, measured: f64) {
        self.count += 1;
        self.log_sum += ratio.ln();
        self.seconds += measured;
    }

    fn geomean(&self) -> Option<f64> {
        (self.count > 0).then(|| (self.log_sum / self.count as f64).exp())
    }
}

/// The cost model against the measured times of one profile ([`Profile::summary`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Thunk labels in the profile.
    pub thunks: usize,
    /// Those with a model figure and a measured time.
    pub compared: usize,
    /// Geometric mean of model / measured over them.
    pub geomean: Option<f64>,
    /// Their share of the profiled time, in percent.
    pub share: f64,
    /// Of those, the generated kernels (`kernel ...` labels; not library calls).
    pub kernels: usize,
    /// Geometric mean of model / measured over the generated kernels.
    pub kernel_geomean: Option<f64>,
    /// The generated kernels' share of the profiled time, in percent.
    pub kernel_share: f64,
}

impl Summary {
    /// `model/measured: geomean G over N of M thunks (S% of the time); kernels G over N
    /// (S%)`, or that no thunk has both figures.
    pub fn line(&self) -> String {
        let g = |x: Option<f64>| x.map_or("-".into(), |x| hlo::literal::format_g(x, 3));
        if self.compared == 0 {
            return format!(
                "model/measured: no thunk of {} has both figures",
                self.thunks
            );
        }
        format!(
            "model/measured: geomean {} over {} of {} thunks ({:.1}% of the time); kernels {} over {} ({:.1}%)",
            g(self.geomean),
            self.compared,
            self.thunks,
            self.share,
            g(self.kernel_geomean),
            self.kernels,
            self.kernel_share
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: f64) -> Duration {
        Duration::from_secs_f64(x * 1e-3)
    }

    #[test]
    fn the_table_sets_the_model_beside_the_measurement() {
        let mut p = Profile::default();
        // Two runs: `kernel a` twice per run at 1 ms, `gemm b` once at 4 ms, a copy.
        for _ in 0..2 {
            p.record("kernel a".into(), ms(1.0));
            p.record("kernel a".into(), ms(1.0));
            p.record("gemm b".into(), ms(4.0));
            p.record("copy 8 bytes -> %c".into(), ms(2.0));
        }
        // Per call: a 0.5 ms (model 1 ms per run, half the measured 2 ms), b 16 ms.
        let model = Predictions::from_seconds([
            ("kernel a".to_string(), Some(0.5e-3)),
            ("gemm b".to_string(), Some(16e-3)),
            ("copy 8 bytes -> %c".to_string(), None),
        ]);
        let table = p.table(2, &model);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines,
            [
                "        ms      %   calls   model ms model/measured  thunk (per run)",
                "     4.000   50.0       1    16.0000              4  gemm b",
                "     2.000   25.0       2     1.0000            0.5  kernel a",
                "     2.000   25.0       1          -              -  copy 8 bytes -> %c",
                "     8.000  100.0          total",
                "model/measured: geomean 1.41 over 2 of 3 thunks (75.0% of the time); kernels 0.5 over 1 (25.0%)",
            ],
            "{table}"
        );
        let s = p.summary(&model);
        assert_eq!((s.compared, s.kernels), (2, 1));
        assert!((s.geomean.unwrap() - 2f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn without_predictions_nothing_is_compared() {
        let mut p = Profile::default();
        p.record("kernel a".into(), ms(1.0));
        let table = p.table(1, &Predictions::default());
        assert!(
            table.contains("          -              -  kernel a"),
            "{table}"
        );
        assert_eq!(
            table.lines().last(),
            Some("model/measured: no thunk of 1 has both figures")
        );
    }
}
