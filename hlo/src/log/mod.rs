//! Logging with a minimum level and per-module levels, set from the environment the way
//! seed 002 describes XLA's (`TF_CPP_MIN_LOG_LEVEL`, `TF_CPP_VMODULE`, a log file):
//!
//! - `HLOC_LOG=info,hlo::pass=debug`: comma-separated directives; a bare level sets the
//!   default, `target=level` the level of a module path and everything below it (the
//!   longest matching target wins). Levels: `off`, `error`, `warn`, `info`, `debug`,
//!   `trace`. Unset: `warn`. Unknown words are ignored with one warning.
//! - `HLOC_LOG_FILE=path`: append to that file instead of standard error.
//!
//! Lines read `LEVEL target: message` (`debug hlo::pass: ...`). Written by hand instead of
//! using the `log` facade: the configuration is the whole feature, a few dozen lines, and
//! the library needs no global logger registration by its users.
//!
//! ```
//! use hlo::log::{Level, LogConfig};
//! let c = LogConfig::parse("info,hlo::pass=debug,hlo::pass::dce=off");
//! assert!(c.enabled(Level::Debug, "hlo::pass::cse"));
//! assert!(!c.enabled(Level::Error, "hlo::pass::dce"));
//! assert!(!c.enabled(Level::Debug, "hlo::parser"));
//! assert!(c.enabled(Level::Info, "hlo::parser"));
//! ```

use std::io::Write as _;
use std::sync::{Mutex, OnceLock};

/// A log level, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Something failed.
    Error = 1,
    /// Something looks wrong but work goes on.
    Warn,
    /// Progress a user may want to see.
    Info,
    /// Details for developers (each pass run).
    Debug,
    /// Very detailed (each rewrite).
    Trace,
}

impl Level {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Error => "error",
            Level::Warn => "warn",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        }
    }

    /// A level by name; `Ok(None)` for `off`.
    fn parse(s: &str) -> Result<Option<Level>, ()> {
        Ok(Some(match s.trim().to_ascii_lowercase().as_str() {
            "off" | "none" => return Ok(None),
            "error" => Level::Error,
            "warn" | "warning" => Level::Warn,
            "info" => Level::Info,
            "debug" => Level::Debug,
            "trace" => Level::Trace,
            _ => return Err(()),
        }))
    }
}

/// The levels in force: a default and per-target overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    default: Option<Level>,
    targets: Vec<(String, Option<Level>)>,
    /// Directives that could not be read.
    pub ignored: Vec<String>,
}

impl Default for LogConfig {
    fn default() -> LogConfig {
        LogConfig {
            default: Some(Level::Warn),
            targets: Vec::new(),
            ignored: Vec::new(),
        }
    }
}

impl LogConfig {
    /// Reads directives such as `info,hlo::pass=debug`.
    pub fn parse(spec: &str) -> LogConfig {
        let mut c = LogConfig::default();
        for d in spec.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            match d.split_once('=') {
                Some((target, level)) => match Level::parse(level) {
                    Ok(l) => c.targets.push((target.trim().to_string(), l)),
                    Err(()) => c.ignored.push(d.to_string()),
                },
                None => match Level::parse(d) {
                    Ok(l) => c.default = l,
                    Err(()) => c.ignored.push(d.to_string()),
                },
            }
        }
        c
    }

    /// The level in force for `target` (`None`: off).
    pub fn level_for(&self, target: &str) -> Option<Level> {
        let matches =
            |t: &str| target == t || (target.starts_with(t) && target[t.len()..].starts_with("::"));
        self.targets
            .iter()
            .filter(|(t, _)| matches(t))
            .max_by_key(|(t, _)| t.len())
            .map_or(self.default, |(_, l)| *l)
    }

    /// True when a message of `level` from `target` is written.
    pub fn enabled(&self, level: Level, target: &str) -> bool {
        self.level_for(target).is_some_and(|l| level <= l)
    }
}

enum Sink {
    Stderr,
    File(std::fs::File),
    Memory(Vec<String>),
}

struct Logger {
    config: LogConfig,
    sink: Sink,
}

fn logger() -> &'static Mutex<Logger> {
    static LOGGER: OnceLock<Mutex<Logger>> = OnceLock::new();
    LOGGER.get_or_init(|| {
        let config = std::env::var("HLOC_LOG")
            .map(|s| LogConfig::parse(&s))
            .unwrap_or_default();
        let mut sink = Sink::Stderr;
        let mut problems: Vec<String> = config
            .ignored
            .iter()
            .map(|d| format!("warn hlo::log: ignoring HLOC_LOG directive `{d}`"))
            .collect();
        if let Ok(path) = std::env::var("HLOC_LOG_FILE") {
            match std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
            {
                Ok(f) => sink = Sink::File(f),
                Err(e) => problems.push(format!(
                    "warn hlo::log: cannot open HLOC_LOG_FILE `{path}` ({e}); logging to stderr"
                )),
            }
        }
        let mut l = Logger { config, sink };
        for p in problems {
            l.write_line(&p);
        }
        Mutex::new(l)
    })
}

impl Logger {
    fn write_line(&mut self, line: &str) {
        match &mut self.sink {
            Sink::Stderr => {
                let _ = writeln!(std::io::stderr().lock(), "{line}");
            }
            Sink::File(f) => {
                let _ = writeln!(f, "{line}");
            }
            Sink::Memory(v) => v.push(line.to_string()),
        }
    }
}

/// Replaces the configuration read from `HLOC_LOG` (the command line may override it).
pub fn set_config(config: LogConfig) {
    if let Ok(mut l) = logger().lock() {
        l.config = config;
    }
}

/// The configuration in force.
pub fn config() -> LogConfig {
    logger()
        .lock()
        .map(|l| l.config.clone())
        .unwrap_or_default()
}

/// Keeps log lines in memory from now on (for tests); [`take_captured`] returns them.
pub fn capture() {
    if let Ok(mut l) = logger().lock() {
        l.sink = Sink::Memory(Vec::new());
    }
}

/// The lines captured since [`capture`] (empty when not capturing), clearing them.
pub fn take_captured() -> Vec<String> {
    match logger().lock() {
        Ok(mut l) => match &mut l.sink {
            Sink::Memory(v) => std::mem::take(v),
            _ => Vec::new(),
        },
        Err(_) => Vec::new(),
    }
}

/// True when a message of `level` from `target` would be written.
pub fn enabled(level: Level, target: &str) -> bool {
    logger()
        .lock()
        .map(|l| l.config.enabled(level, target))
        .unwrap_or(false)
}

/// Writes one message (used by the `log_*!` macros, which check [`enabled`] first so
/// that disabled messages are never formatted).
pub fn write(level: Level, target: &str, message: std::fmt::Arguments<'_>) {
    if let Ok(mut l) = logger().lock() {
        if l.config.enabled(level, target) {
            let line = format!("{} {target}: {message}", level.as_str());
            l.write_line(&line);
        }
    }
}

/// Logs at `level` for `target`: `log_at!(Level::Info, "hlo::pass", "x = {}", x)`.
#[macro_export]
macro_rules! log_at {
    ($level:expr, $target:expr, $($arg:tt)+) => {{
        let level = $level;
        let target: &str = $target;
        if $crate::log::enabled(level, target) {
            $crate::log::write(level, target, format_args!($($arg)+));
        }
    }};
}

/// Logs an error: `log_error!("hlo::pass", "...", args)`.
#[macro_export]
macro_rules! log_error {
    ($target:expr, $($arg:tt)+) => { $crate::log_at!($crate::log::Level::Error, $target, $($arg)+) };
}

/// Logs a warning.
#[macro_export]
macro_rules! log_warn {
    ($target:expr, $($arg:tt)+) => { $crate::log_at!($crate::log::Level::Warn, $target, $($arg)+) };
}

/// Logs progress information.
#[macro_export]
macro_rules! log_info {
    ($target:expr, $($arg:tt)+) => { $crate::log_at!($crate::log::Level::Info, $target, $($arg)+) };
}

/// Logs a debugging detail.
#[macro_export]
macro_rules! log_debug {
    ($target:expr, $($arg:tt)+) => { $crate::log_at!($crate::log::Level::Debug, $target, $($arg)+) };
}

/// Logs a very detailed trace.
#[macro_export]
macro_rules! log_trace {
    ($target:expr, $($arg:tt)+) => { $crate::log_at!($crate::log::Level::Trace, $target, $($arg)+) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives() {
        let c = LogConfig::parse("debug, hlo::pass=warn, bogus, x=loud");
        assert_eq!(c.level_for("hlo::parser"), Some(Level::Debug));
        assert_eq!(c.level_for("hlo::pass"), Some(Level::Warn));
        assert_eq!(c.level_for("hlo::passes"), Some(Level::Debug));
        assert_eq!(c.ignored, vec!["bogus".to_string(), "x=loud".to_string()]);
        let off = LogConfig::parse("off");
        assert!(!off.enabled(Level::Error, "a"));
        assert_eq!(LogConfig::parse(""), LogConfig::default());
    }

    #[test]
    fn capture_and_filter() {
        capture();
        set_config(LogConfig::parse("warn,hlo::pass=trace"));
        crate::log_trace!("hlo::pass::x", "seen {}", 1);
        crate::log_info!("hlo::other", "not seen");
        let mut lines = take_captured();
        // Other tests of this binary may log meanwhile; keep this test's targets.
        lines.retain(|l| l.contains("hlo::pass::x") || l.contains("hlo::other"));
        assert_eq!(lines, vec!["trace hlo::pass::x: seen 1".to_string()]);
        set_config(LogConfig::default());
    }
}
