//! Per-pass wall time and change counts, and the `--time-passes` table.

use std::fmt::Write as _;
use std::time::Duration;

/// What one pass (by name) did over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassStat {
    /// The pass name.
    pub name: String,
    /// How many times it ran.
    pub runs: u32,
    /// How many of those runs changed the module.
    pub changes: u32,
    /// Total wall time.
    pub time: Duration,
}

/// Statistics of every pass that ran, in order of first run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    entries: Vec<PassStat>,
}

impl PassStats {
    /// Adds one run of `name`.
    pub fn record(&mut self, name: &str, time: Duration, changed: bool) {
        let i = match self.entries.iter().position(|e| e.name == name) {
            Some(i) => i,
            None => {
                self.entries.push(PassStat {
                    name: name.to_string(),
                    ..PassStat::default()
                });
                self.entries.len() - 1
            }
        };
        let e = &mut self.entries[i];
        e.runs += 1;
        e.changes += u32::from(changed);
        e.time += time;
    }

    /// Every pass in order of first run.
    pub fn entries(&self) -> &[PassStat] {
        &self.entries
    }

    /// The statistics of `name`.
    pub fn get(&self, name: &str) -> Option<&PassStat> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Total wall time of all passes.
    pub fn total_time(&self) -> Duration {
        self.entries.iter().map(|e| e.time).sum()
    }

    /// The `--time-passes` table: one row per pass, slowest first (ties by name), then
    /// the totals. Columns: time in milliseconds, share of the total, runs, runs that
    /// changed the module, name.
    pub fn table(&self) -> String {
        let mut rows: Vec<&PassStat> = self.entries.iter().collect();
        rows.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.name.cmp(&b.name)));
        let total = self.total_time();
        let share = |d: Duration| {
            if total.is_zero() {
                0.0
            } else {
                100.0 * d.as_secs_f64() / total.as_secs_f64()
            }
        };
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:>10}  {:>6}  {:>5}  {:>7}  pass",
            "time (ms)", "share", "runs", "changed"
        );
        for r in &rows {
            let _ = writeln!(
                out,
                "{:>10.3}  {:>5.1}%  {:>5}  {:>7}  {}",
                r.time.as_secs_f64() * 1e3,
                share(r.time),
                r.runs,
                r.changes,
                r.name
            );
        }
        let runs: u32 = rows.iter().map(|r| r.runs).sum();
        let changes: u32 = rows.iter().map(|r| r.changes).sum();
        let _ = writeln!(
            out,
            "{:>10.3}  {:>5.1}%  {:>5}  {:>7}  total ({} passes)",
            total.as_secs_f64() * 1e3,
            if total.is_zero() { 0.0 } else { 100.0 },
            runs,
            changes,
            rows.len()
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_by_time_with_totals() {
        let mut s = PassStats::default();
        s.record("dce", Duration::from_micros(1000), true);
        s.record("cse", Duration::from_micros(3000), false);
        s.record("dce", Duration::from_micros(1000), false);
        let t = s.table();
        let expect = concat!(
            " time (ms)   share   runs  changed  pass\n",
            "     3.000   60.0%      1        0  cse\n",
            "     2.000   40.0%      2        1  dce\n",
            "     5.000  100.0%      3        1  total (2 passes)\n"
        );
        assert_eq!(t, expect);
        assert_eq!(s.get("dce").map(|e| e.changes), Some(1));
    }
}
