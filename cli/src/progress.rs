//! Progress of long commands (`hloc run`, `hloc compile`; issue 36 item 15): which stage
//! is running and for how long, so that a compile or run of minutes does not look hung.
//!
//! On a terminal (`--progress auto`, the default, when stderr is one) a status line is
//! redrawn in place a few times a second once the command has taken half a second, and
//! erased when it ends, so nothing of it stays on the screen or in the command's output.
//! Piped, nothing is shown. `--progress always` shows it anyway: on a terminal as above,
//! elsewhere one `progress: STAGE` line per stage as it starts (no times, so logs and
//! tests can read it); `--progress never` shows nothing. While the C compiler runs, the
//! status line counts the kernels compiled (`compiling: kernels compiled 1250/2500`, after
//! each compiler process; [`Progress::compile_listener`]); the lines do not, since a cache
//! hit compiles nothing and the lines would depend on the cache.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// When to show progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressMode {
    /// On a terminal only.
    #[default]
    Auto,
    /// Always: a status line on a terminal, else a line per stage.
    Always,
    /// Never.
    Never,
}

/// How long a command runs before the status line appears (no flicker for quick ones).
const SHOW_AFTER: Duration = Duration::from_millis(500);
/// How often the status line is redrawn.
const REDRAW_EVERY: Duration = Duration::from_millis(200);

/// The progress display of one command; dropping it erases the status line.
pub struct Progress {
    kind: Kind,
}

enum Kind {
    Off,
    /// One line per stage on stderr.
    Lines,
    /// A status line redrawn by a thread.
    Status(Arc<Shared>, Option<std::thread::JoinHandle<()>>),
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    stage: String,
    start: Instant,
    stage_start: Instant,
    done: bool,
    drawn: bool,
}

impl Progress {
    /// The display `mode` asks for, given whether stderr is a terminal.
    pub fn new(mode: ProgressMode) -> Progress {
        Progress::for_terminal(mode, std::io::stderr().is_terminal())
    }

    fn for_terminal(mode: ProgressMode, terminal: bool) -> Progress {
        let kind = match (mode, terminal) {
            (ProgressMode::Never, _) | (ProgressMode::Auto, false) => Kind::Off,
            (ProgressMode::Always, false) => Kind::Lines,
            (_, true) => {
                let now = Instant::now();
                let shared = Arc::new(Shared {
                    state: Mutex::new(State {
                        stage: String::new(),
                        start: now,
                        stage_start: now,
                        done: false,
                        drawn: false,
                    }),
                    wake: Condvar::new(),
                });
                let drawer = Arc::clone(&shared);
                let thread = std::thread::Builder::new()
                    .name("hloc-progress".into())
                    .spawn(move || draw_until_done(&drawer))
                    .ok();
                Kind::Status(shared, thread)
            }
        };
        Progress { kind }
    }

    /// Starts stage `what` (a short phrase: `compiling 12 kernels`).
    pub fn stage(&self, what: &str) {
        match &self.kind {
            Kind::Off => {}
            Kind::Lines => eprintln!("progress: {what}"),
            Kind::Status(shared, _) => {
                if let Ok(mut s) = shared.state.lock() {
                    s.stage = what.to_string();
                    s.stage_start = Instant::now();
                }
            }
        }
    }

    /// What the runtime tells of the C compiler's progress
    /// ([`runtime::CompileOptions::progress`]): on the status line, the compile stage
    /// becomes `compiling: kernels compiled N/M` (its time keeps running); `None` when no
    /// status line is drawn.
    pub fn compile_listener(&self) -> Option<runtime::CompileListener> {
        let Kind::Status(shared, _) = &self.kind else {
            return None;
        };
        let shared = Arc::clone(shared);
        Some(runtime::CompileListener(Arc::new(move |done, all| {
            if let Ok(mut s) = shared.state.lock() {
                s.stage = kernels_compiled(done, all);
            }
        })))
    }

    /// Erases the status line and stops its thread (before anything else is printed).
    pub fn finish(&mut self) {
        if let Kind::Status(shared, thread) = &mut self.kind {
            if let Ok(mut s) = shared.state.lock() {
                s.done = true;
            }
            shared.wake.notify_all();
            if let Some(t) = thread.take() {
                let _ = t.join();
            }
        }
        self.kind = Kind::Off;
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The drawing thread: redraws the status line until the command is done, then erases it.
fn draw_until_done(shared: &Shared) {
    let Ok(mut s) = shared.state.lock() else {
        return;
    };
    loop {
        if s.done {
            if s.drawn {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[K");
                let _ = err.flush();
            }
            return;
        }
        if s.start.elapsed() >= SHOW_AFTER && !s.stage.is_empty() {
            let line = status_line(&s.stage, s.stage_start.elapsed(), s.start.elapsed());
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K{line}");
            let _ = err.flush();
            s.drawn = true;
        }
        s = match shared.wake.wait_timeout(s, REDRAW_EVERY) {
            Ok((s, _)) => s,
            Err(_) => return,
        };
    }
}

/// The compile stage's phrase: `compiling 1 kernel`, `compiling 12 kernels`.
pub fn compiling(kernels: usize) -> String {
    match kernels {
        1 => "compiling 1 kernel".into(),
        n => format!("compiling {n} kernels"),
    }
}

/// The compile stage's phrase once the compiler reports: `compiling: kernels compiled 3/12`.
fn kernels_compiled(done: usize, all: usize) -> String {
    format!("compiling: kernels compiled {done}/{all}")
}

/// `hloc: STAGE (3.2 s; 10.5 s in all)`.
fn status_line(stage: &str, in_stage: Duration, in_all: Duration) -> String {
    format!(
        "hloc: {stage} ({:.1} s; {:.1} s in all)",
        in_stage.as_secs_f64(),
        in_all.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piped_output_shows_progress_only_when_asked() {
        assert!(matches!(
            Progress::for_terminal(ProgressMode::Auto, false).kind,
            Kind::Off
        ));
        assert!(matches!(
            Progress::for_terminal(ProgressMode::Never, true).kind,
            Kind::Off
        ));
        assert!(matches!(
            Progress::for_terminal(ProgressMode::Always, false).kind,
            Kind::Lines
        ));
        let mut p = Progress::for_terminal(ProgressMode::Auto, true);
        assert!(matches!(p.kind, Kind::Status(..)));
        p.stage("compiling");
        // Finishing before the line is due stops the thread without drawing.
        p.finish();
        assert!(matches!(p.kind, Kind::Off));
    }

    #[test]
    fn the_compilers_reports_count_kernels_on_the_status_line_only() {
        assert!(Progress::for_terminal(ProgressMode::Always, false)
            .compile_listener()
            .is_none());
        assert!(Progress::for_terminal(ProgressMode::Never, true)
            .compile_listener()
            .is_none());
        let mut p = Progress::for_terminal(ProgressMode::Always, true);
        p.stage(&compiling(12));
        let listener = p.compile_listener().expect("a status line has a listener");
        (listener.0)(5, 12);
        let Kind::Status(shared, _) = &p.kind else {
            panic!("not a status line")
        };
        let s = shared.state.lock().unwrap();
        assert_eq!(s.stage, "compiling: kernels compiled 5/12");
        drop(s);
        p.finish();
    }

    #[test]
    fn the_status_line_gives_the_stage_and_both_times() {
        assert_eq!(
            status_line(
                "compiling 3 kernels",
                Duration::from_millis(3210),
                Duration::from_millis(10_500)
            ),
            "hloc: compiling 3 kernels (3.2 s; 10.5 s in all)"
        );
    }
}
