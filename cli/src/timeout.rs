//! The wall-clock bound of `hloc run` (`--timeout SECONDS`, `HLOC_TIMEOUT`): a watchdog
//! thread that, once the time is up, stops the whole process with one clear error and exit
//! code 2, whatever it is doing (parsing, compiling, a generated kernel, the evaluator, a
//! loop that never ends). `--max-while-iterations` bounds one loop; only a clock bounds
//! an outer loop around a heavy inner one.
//!
//! The run [`Watchdog::finish`]es before it prints or writes anything, so a run stopped
//! by the clock leaves no output file (whole or partial) and one that finished in time is
//! never cut short while writing.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};

/// The environment variable that sets the time limit when `--timeout` is absent.
pub const TIMEOUT_ENV: &str = "HLOC_TIMEOUT";

/// A time limit and where it came from (named in the error).
#[derive(Clone, Debug, PartialEq)]
pub struct TimeLimit {
    /// The limit.
    pub limit: Duration,
    /// `--timeout` or `HLOC_TIMEOUT`.
    pub source: &'static str,
}

/// Parses a number of seconds (`30`, `0.5`, or with a unit: `500ms`, `90s`, `2m`, `1h`):
/// positive and finite.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = [("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
        .iter()
        .find_map(|&(unit, scale)| t.strip_suffix(unit).map(|n| (n, scale)))
        .unwrap_or((t, 1.0));
    let bad =
        || format!("bad time limit `{text}`: give seconds (e.g. 30 or 0.5) or 500ms, 90s, 2m, 1h");
    let secs = number.trim().parse::<f64>().map_err(|_| bad())? * scale;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(bad());
    }
    Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

impl TimeLimit {
    /// `--timeout` if given, else `HLOC_TIMEOUT` if set (`env` is its value; empty means
    /// no limit), else none.
    pub fn resolve(
        flag: Option<Duration>,
        env: Result<String, std::env::VarError>,
    ) -> Result<Option<TimeLimit>> {
        if let Some(limit) = flag {
            return Ok(Some(TimeLimit {
                limit,
                source: "--timeout",
            }));
        }
        match env {
            Ok(text) if text.trim().is_empty() => Ok(None),
            Ok(text) => {
                let limit = parse_seconds(&text).map_err(|e| anyhow!("{TIMEOUT_ENV}: {e}"))?;
                Ok(Some(TimeLimit {
                    limit,
                    source: TIMEOUT_ENV,
                }))
            }
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => bail!("{TIMEOUT_ENV} is not valid text"),
        }
    }

    /// The error a run stopped by the clock reports.
    pub fn message(&self) -> String {
        format!(
            "the run did not finish within the time limit of {} s (set by {}); nothing was \
             written; raise it with --timeout SECONDS or {TIMEOUT_ENV}=SECONDS",
            hlo::literal::format_g(self.limit.as_secs_f64(), 6),
            self.source
        )
    }
}

/// The watchdog of one run: the shared flag says whether the run has finished.
pub struct Watchdog {
    state: Option<Arc<(Mutex<bool>, Condvar)>>,
}

impl Watchdog {
    /// Starts the watchdog for `limit` counted from `start` (none: no watchdog).
    pub fn start(limit: Option<TimeLimit>, start: Instant) -> Watchdog {
        let Some(limit) = limit else {
            return Watchdog { state: None };
        };
        let state = Arc::new((Mutex::new(false), Condvar::new()));
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            let (lock, cvar) = &*shared;
            let deadline = start + limit.limit;
            let Ok(mut done) = lock.lock() else { return };
            while !*done {
                let now = Instant::now();
                if now >= deadline {
                    // The lock is held: the run cannot start printing or writing now.
                    eprintln!("{}", limit.message());
                    std::process::exit(2);
                }
                match cvar.wait_timeout(done, deadline - now) {
                    Ok((guard, _)) => done = guard,
                    Err(_) => return,
                }
            }
        });
        Watchdog { state: Some(state) }
    }

    /// Marks the run finished (before it prints or writes its results): the watchdog
    /// stops. If the time ran out just now, the watchdog holds the lock and this never
    /// returns (the process exits with the error).
    pub fn finish(&self) {
        if let Some(state) = &self.state {
            let (lock, cvar) = &**state;
            if let Ok(mut done) = lock.lock() {
                *done = true;
                cvar.notify_all();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::env::VarError;

    #[test]
    fn seconds_and_units_parse() {
        assert_eq!(parse_seconds("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_seconds("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_seconds("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_seconds("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_seconds("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "0", "-1", "soon", "inf", "NaN", "1e400"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_flag_wins_over_the_variable() {
        let one = Duration::from_secs(1);
        let l = TimeLimit::resolve(Some(one), Ok("junk".into())).unwrap();
        assert_eq!(l.map(|l| l.source), Some("--timeout"));
        let l = TimeLimit::resolve(None, Ok("2".into())).unwrap().unwrap();
        assert_eq!((l.limit, l.source), (Duration::from_secs(2), TIMEOUT_ENV));
        assert_eq!(
            TimeLimit::resolve(None, Err(VarError::NotPresent)).unwrap(),
            None
        );
        assert_eq!(TimeLimit::resolve(None, Ok(" ".into())).unwrap(), None);
        let e = TimeLimit::resolve(None, Ok("later".into())).unwrap_err();
        assert!(
            e.to_string().starts_with("HLOC_TIMEOUT: bad time limit"),
            "{e}"
        );
    }

    #[test]
    fn a_finished_run_is_not_stopped() {
        let limit = TimeLimit {
            limit: Duration::from_millis(50),
            source: "--timeout",
        };
        let w = Watchdog::start(Some(limit), Instant::now());
        w.finish();
        // The watchdog saw the flag: sleeping past the deadline does not end the process.
        std::thread::sleep(Duration::from_millis(150));
    }
}
