//! Per-thunk run times (`hloc run --profile`): where a compiled program spends its time,
//! by kernel, library call and copy, summed over runs, beside the cost model's prediction
//! ([`crate::Predictions`]), the rates the thunk reached (GFLOP/s, GB/s, from the work
//! [`crate::ThunkWork`] counts in the HLO) and the `op_name`s of the instructions it runs.

use std::fmt::Write as _;
use std::time::Duration;

use crate::predict::Predictions;
use crate::work::{ThunkWork, Work};

/// A backend's record of one or more runs: time and calls per step label.
pub use plan::Profile;

/// The profile's figures beside the cost model's.
pub trait ProfileTable {
    /// A table, slowest first (see [`table`]).
    fn table(&self, runs: u64, model: &Predictions, work: &ThunkWork) -> String;
    /// Model against measurement over every thunk with both figures.
    fn summary(&self, model: &Predictions) -> Summary;
}

impl ProfileTable for Profile {
    fn table(&self, runs: u64, model: &Predictions, work: &ThunkWork) -> String {
        table(self, runs, model, work)
    }

    fn summary(&self, model: &Predictions) -> Summary {
        summary(self, model)
    }
}

/// A table, slowest first: total milliseconds, share of the profiled total, calls,
/// the model's milliseconds (`model`'s prediction per call times the calls; `-` where
/// it has none), model over measured, the rates reached (GFLOP/s where `work` counts
/// flops, GB/s of the thunk's buffers), the share of the roofline reached (`roof %`: the
/// thunk's time at the machine's roofline over its measured time, in percent; see
/// [`Predictions::roofline_seconds_per_call`]), the label and, in brackets, the `op_name`s of
/// the instructions the thunk runs (the first [`OP_NAMES_SHOWN`], then how many more);
/// `runs` divides the totals into per-run figures. After the `total` row, one line
/// compares model and measurement over the thunks with both figures (see [`Summary`]).
pub fn table(profile: &Profile, runs: u64, model: &Predictions, work: &ThunkWork) -> String {
    let runs = runs.max(1) as f64;
    let total: Duration = profile.entries().iter().map(|e| e.1).sum();
    let mut rows: Vec<&(String, Duration, u64)> = profile.entries().iter().collect();
    rows.sort_by_key(|e| std::cmp::Reverse(e.1));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>10} {:>6} {:>7} {:>10} {:>14} {:>9} {:>8} {:>7}  thunk (per run) [op_name]",
        "ms", "%", "calls", "model ms", "model/measured", "GFLOP/s", "GB/s", "roof %"
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
        let rates = Rates::of(work.get(label), *calls, *took);
        let fixed = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3}"));
        let roof = roofline_share(model, label, *calls, *took);
        let _ = writeln!(
            out,
            "{:>10.3} {:>6.1} {:>7} {:>10} {:>14} {:>9} {:>8} {:>7}  {label}{}",
            took.as_secs_f64() * 1e3 / runs,
            share,
            (*calls as f64 / runs).round() as u64,
            modelled.map_or("-".into(), |m| format!("{:.4}", m * 1e3)),
            ratio.map_or("-".into(), |r| hlo::literal::format_g(r, 3)),
            fixed(rates.gflops),
            fixed(rates.gbs),
            roof.map_or("-".into(), |r| format!("{r:.1}")),
            op_names_text(work.get(label)),
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

/// The share of the roofline (percent) a thunk reached over all its `calls`: its roofline
/// seconds per call times the calls over the measured time; `None` without a figure.
fn roofline_share(model: &Predictions, label: &str, calls: u64, took: Duration) -> Option<f64> {
    let roof = model.roofline_seconds_per_call(label)?;
    let took = took.as_secs_f64();
    (took > 0.0 && roof.is_finite()).then(|| 100.0 * roof * calls as f64 / took)
}

/// `op_name`s shown per row of [`table`] (the JSON has them all).
pub const OP_NAMES_SHOWN: usize = 3;

/// ` [a, b, c +N]`, or nothing when the thunk runs no instruction with an `op_name`.
fn op_names_text(work: Option<&Work>) -> String {
    let names = work.map_or(&[][..], |w| &w.op_names[..]);
    if names.is_empty() {
        return String::new();
    }
    let shown = names[..names.len().min(OP_NAMES_SHOWN)].join(", ");
    match names.len().saturating_sub(OP_NAMES_SHOWN) {
        0 => format!(" [{shown}]"),
        more => format!(" [{shown} +{more}]"),
    }
}

/// The rates one thunk reached over all its calls.
struct Rates {
    /// Flops per second over 1e9; `None` where no flops are counted, or none are done.
    gflops: Option<f64>,
    /// Bytes per second over 1e9; `None` without a count or a measured time.
    gbs: Option<f64>,
}

impl Rates {
    fn of(work: Option<&Work>, calls: u64, took: Duration) -> Rates {
        let seconds = took.as_secs_f64();
        let rate = |per_call: f64| {
            (seconds > 0.0 && per_call > 0.0).then(|| per_call * calls as f64 / seconds / 1e9)
        };
        Rates {
            gflops: work.and_then(|w| w.flops).and_then(rate),
            gbs: work.and_then(|w| rate(w.bytes)),
        }
    }
}

/// The figures of [`table`] as JSON (`hloc run --profile-json`), for tools to read:
/// `{"runs", "total_ms", "thunks": [{"label", "ms", "share", "calls", "model_ms",
/// "model_over_measured", "flops", "bytes", "gflops_per_s", "gb_per_s",
/// "roofline_ms", "roofline_share", "op_names"}]}` (`roofline_ms` per run, the share in
/// percent),
/// per run (`flops` and `bytes` per call), slowest first; `null` where there is no
/// figure.
pub fn json(
    profile: &Profile,
    runs: u64,
    model: &Predictions,
    work: &ThunkWork,
) -> serde_json::Value {
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
            let w = work.get(label);
            let rates = Rates::of(w, *calls, *took);
            serde_json::json!({
                "label": label,
                "ms": seconds * 1e3,
                "share": share,
                "calls": *calls as f64 / per_run,
                "model_ms": modelled.map(|m| m * 1e3),
                "model_over_measured": modelled.and_then(|m| ratio(m, seconds)),
                "flops": w.and_then(|w| w.flops),
                "bytes": w.map(|w| w.bytes),
                "gflops_per_s": rates.gflops,
                "gb_per_s": rates.gbs,
                "roofline_ms": model
                    .roofline_seconds_per_call(label)
                    .map(|s| s * *calls as f64 / per_run * 1e3),
                "roofline_share": roofline_share(model, label, *calls, *took),
                "op_names": w.map_or(Vec::new(), |w| w.op_names.clone()),
            })
        })
        .collect();
    serde_json::json!({
        "runs": runs.max(1),
        "total_ms": total.as_secs_f64() * 1e3 / per_run,
        "thunks": thunks,
    })
}

/// The calls of a tracing profile ([`Profile::set_tracing`]) in the Chrome trace event
/// format (`hloc run --trace`; chrome://tracing, <https://ui.perfetto.dev>): one complete
/// event (`"ph": "X"`) per call, in microseconds from the first call, named by its label,
/// its category the label's first word (`kernel`, `gemm.f32`, `library`, `copy`), its
/// `args` the work of one call (`flops`, `bytes`, `op_names`; see [`ThunkWork`]); `None`
/// when the profile kept no calls. `name` names the process (the module).
pub fn chrome_trace(profile: &Profile, work: &ThunkWork, name: &str) -> Option<serde_json::Value> {
    let calls = profile.calls()?;
    let origin = calls.iter().map(|c| c.start).min().unwrap_or_default();
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let mut events = vec![serde_json::json!({
        "name": "process_name", "ph": "M", "pid": 1, "tid": 1,
        "args": {"name": name},
    })];
    for c in calls {
        let Some((label, _, _)) = profile.entries().get(c.entry) else {
            continue;
        };
        let w = work.get(label);
        events.push(serde_json::json!({
            "name": label,
            "cat": label.split(' ').next().unwrap_or_default(),
            "ph": "X",
            "ts": micros(c.start - origin),
            "dur": micros(c.took),
            "pid": 1,
            "tid": 1,
            "args": {
                "flops": w.and_then(|w| w.flops),
                "bytes": w.map(|w| w.bytes),
                "op_names": w.map_or(Vec::new(), |w| w.op_names.clone()),
            },
        }));
    }
    Some(serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ms" }))
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
        ])
        // Roofline per call: a 0.1 ms (0.2 of its measured 1 ms per call), b 1 ms.
        .with_roofline([
            ("kernel a".to_string(), Some(0.1e-3)),
            ("gemm b".to_string(), Some(1e-3)),
        ]);
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect();
        let work = ThunkWork::from_parts([
            (
                "kernel a".to_string(),
                Work {
                    flops: Some(1e6),
                    bytes: 2e6,
                    op_names: names(&["f/a", "f/b", "f/c", "f/d"]),
                },
            ),
            (
                "gemm b".to_string(),
                Work {
                    flops: Some(8e6),
                    bytes: 4e6,
                    op_names: names(&["f/matmul"]),
                },
            ),
            (
                "copy 8 bytes -> %c".to_string(),
                Work {
                    flops: Some(0.0),
                    bytes: 16.0,
                    op_names: Vec::new(),
                },
            ),
        ]);
        let table = p.table(2, &model, &work);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines,
            [
                "        ms      %   calls   model ms model/measured   GFLOP/s     GB/s  roof %  thunk (per run) [op_name]",
                "     4.000   50.0       1    16.0000              4     2.000    1.000    25.0  gemm b [f/matmul]",
                "     2.000   25.0       2     1.0000            0.5     1.000    2.000    10.0  kernel a [f/a, f/b, f/c +1]",
                "     2.000   25.0       1          -              -         -    0.000       -  copy 8 bytes -> %c",
                "     8.000  100.0          total",
                "model/measured: geomean 1.41 over 2 of 3 thunks (75.0% of the time); kernels 0.5 over 1 (25.0%)",
            ],
            "{table}"
        );
        let json = json(&p, 2, &model, &work);
        let rows = json["thunks"].as_array().unwrap();
        assert_eq!(rows[0]["label"], "gemm b");
        assert_eq!(rows[0]["gflops_per_s"].as_f64(), Some(2.0));
        assert_eq!(rows[1]["op_names"].as_array().unwrap().len(), 4);
        assert!(rows[2]["gflops_per_s"].is_null());
        let near = |v: &serde_json::Value, want: f64| (v.as_f64().unwrap() - want).abs() < 1e-9;
        assert!(near(&rows[0]["roofline_ms"], 1.0), "{json}");
        assert!(near(&rows[1]["roofline_share"], 10.0), "{json}");
        assert!(rows[2]["roofline_share"].is_null());
        let s = p.summary(&model);
        assert_eq!((s.compared, s.kernels), (2, 1));
        assert!((s.geomean.unwrap() - 2f64.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn a_tracing_profile_becomes_one_event_per_call() {
        Profile::set_tracing(true);
        let mut p = Profile::default();
        Profile::set_tracing(false);
        assert!(Profile::default().calls().is_none());
        let t0 = std::time::Instant::now();
        p.record_call("kernel a".into(), t0, ms(1.0));
        p.record_call("gemm.f32 b".into(), t0 + ms(1.5), ms(2.0));
        p.record_call("kernel a".into(), t0 + ms(4.0), ms(1.0));
        assert_eq!(p.entries().len(), 2);
        let trace = chrome_trace(&p, &ThunkWork::default(), "m").unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        assert_eq!(events.len(), 4, "{trace}");
        assert_eq!(events[0]["ph"], "M");
        let x: Vec<(&str, &str, f64, f64)> = events[1..]
            .iter()
            .map(|e| {
                assert_eq!(e["ph"], "X");
                (
                    e["name"].as_str().unwrap(),
                    e["cat"].as_str().unwrap(),
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                )
            })
            .collect();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert_eq!(x[0].0, "kernel a");
        assert_eq!(x[1].1, "gemm.f32");
        assert!(close(x[0].2, 0.0) && close(x[0].3, 1000.0), "{x:?}");
        assert!(close(x[1].2, 1500.0) && close(x[1].3, 2000.0), "{x:?}");
        assert!(close(x[2].2, 4000.0), "{x:?}");
        // Without tracing, no calls are kept and there is no trace.
        let mut q = Profile::default();
        q.record_call("kernel a".into(), t0, ms(1.0));
        assert!(chrome_trace(&q, &ThunkWork::default(), "m").is_none());
    }

    #[test]
    fn without_predictions_nothing_is_compared() {
        let mut p = Profile::default();
        p.record("kernel a".into(), ms(1.0));
        let table = p.table(1, &Predictions::default(), &ThunkWork::default());
        assert!(
            table.contains("          -              -         -        -       -  kernel a"),
            "{table}"
        );
        assert_eq!(
            table.lines().last(),
            Some("model/measured: no thunk of 1 has both figures")
        );
    }
}
