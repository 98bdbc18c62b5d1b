//! The system C compiler: its identity (for the cache key) and compiling a module's
//! translation units to one shared object.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::error::BackendError;

/// The compiler command (`$HLOC_CC`, else `cc`).
pub fn compiler() -> String {
    std::env::var("HLOC_CC")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "cc".to_string())
}

/// Flags of every compile: optimized for this machine, IEEE semantics kept (no
/// `-ffast-math`), no `errno` from math functions so they can be inlined. `-O2` with the
/// loop vectorizer (dynamic cost model) rather than `-O3`: the kernels run as fast
/// (their loops are already shaped for vectors: local-array accumulators, tiles) and
/// compile in about two thirds of the time (`-O3`'s loop versioning, unswitching and
/// peeling of every gather loop cost the most).
pub const FLAGS: &[&str] = &[
    "-O2",
    "-ftree-vectorize",
    "-fvect-cost-model=dynamic",
    "-march=native",
    "-fno-math-errno",
    "-fPIC",
    "-shared",
    "-std=gnu11",
];

/// `cc --version`'s first line (part of the cache key), asked once per compiler command
/// and process.
pub fn version(cc: &str) -> Result<String, BackendError> {
    static SEEN: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    if let Some(v) = SEEN
        .lock()
        .ok()
        .and_then(|seen| seen.iter().find(|(c, _)| c == cc).map(|(_, v)| v.clone()))
    {
        return Ok(v);
    }
    let v = ask_version(cc)?;
    if let Ok(mut seen) = SEEN.lock() {
        seen.push((cc.to_string(), v.clone()));
    }
    Ok(v)
}

/// Runs `cc --version` and keeps its first line.
fn ask_version(cc: &str) -> Result<String, BackendError> {
    let out = Command::new(cc)
        .arg("--version")
        .output()
        .map_err(|e| BackendError::NoCompiler {
            compiler: cc.to_string(),
            reason: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(BackendError::NoCompiler {
            compiler: cc.to_string(),
            reason: format!("`{cc} --version` exited with {}", out.status),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string())
}

/// The host CPU model (from /proc/cpuinfo; empty when unknown): `-march=native` code is
/// not portable between machines sharing a cache.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default()
}

/// Who hears how far a compile has come: called with `(kernels compiled, kernels in all)`
/// as each compiler process finishes, so that a driver can show progress during a long
/// compile (`hloc compile --progress`). A compiler process is the finest step visible
/// from outside it: one per translation unit, a module has at most one per core.
#[derive(Clone)]
pub struct Listener(pub Arc<dyn Fn(usize, usize) + Send + Sync>);

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Listener")
    }
}

thread_local! {
    /// The listener of compiles on this thread ([`reporting_to`]).
    static LISTENER: RefCell<Option<Listener>> = const { RefCell::new(None) };
}

/// Runs `f` with `listener` told of every [`compile`] it makes on this thread (the
/// backend is chosen and configured elsewhere, so the listener travels beside it rather
/// than through it); the previous listener is back afterwards.
pub fn reporting_to<R>(listener: Option<Listener>, f: impl FnOnce() -> R) -> R {
    let before = LISTENER.with(|l| l.replace(listener));
    let r = f();
    LISTENER.with(|l| l.replace(before));
    r
}

/// Tells this thread's listener that `done` of `all` kernels are compiled.
fn report(done: usize, all: usize) {
    LISTENER.with(|l| {
        if let Some(Listener(f)) = &*l.borrow() {
            f(done, all);
        }
    });
}

/// Compiles the C files `srcs` (translation units of one module) to the shared object
/// `out`: one file in one step; several each to an object file, all at once (one compiler
/// process per file, so the machine's cores share the work), then linked. `kernels[i]` is
/// how many kernels `srcs[i]` defines: after each process the [`reporting_to`] listener
/// hears how many are compiled.
pub fn compile(
    cc: &str,
    srcs: &[PathBuf],
    kernels: &[usize],
    out: &Path,
) -> Result<(), BackendError> {
    let all: usize = kernels.iter().sum();
    report(0, all);
    if srcs.is_empty() {
        return Err(BackendError::Internal(
            "no translation unit to compile".into(),
        ));
    }
    if let [src] = srcs {
        let mut cmd = Command::new(cc);
        cmd.args(FLAGS).arg("-o").arg(out).arg(src).arg("-lm");
        let r = finish(cc, cmd.output(), src);
        if r.is_ok() {
            report(all, all);
        }
        return r;
    }
    let compile_flags: Vec<&str> = FLAGS.iter().copied().filter(|f| *f != "-shared").collect();
    let objects: Vec<PathBuf> = srcs.iter().map(|s| s.with_extension("o")).collect();
    let mut running = Vec::with_capacity(srcs.len());
    for (src, obj) in srcs.iter().zip(&objects) {
        let child = Command::new(cc)
            .args(&compile_flags)
            .arg("-c")
            .arg("-o")
            .arg(obj)
            .arg(src)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        running.push((src, child));
    }
    let mut first_error = None;
    let mut done = 0;
    for (i, (src, child)) in running.into_iter().enumerate() {
        let result = child.and_then(|c| c.wait_with_output());
        if let Err(e) = finish(cc, result, src) {
            first_error.get_or_insert(e);
        } else if first_error.is_none() {
            done += kernels.get(i).copied().unwrap_or(0);
            report(done, all);
        }
    }
    let linked = match first_error {
        Some(e) => Err(e),
        None => {
            let mut cmd = Command::new(cc);
            cmd.args(FLAGS).arg("-o").arg(out).args(&objects).arg("-lm");
            finish(cc, cmd.output(), &srcs[0])
        }
    };
    for obj in &objects {
        let _ = std::fs::remove_file(obj);
    }
    linked
}

/// How many of the entry points `names` each translation unit of `units` defines (for
/// [`compile`]'s progress): a name counts for the first unit in which it appears as a whole
/// identifier; a name found in none counts for the last unit.
pub fn kernels_in(units: &[String], names: &[String]) -> Vec<usize> {
    let mut left: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
    let mut counts: Vec<usize> = units
        .iter()
        .map(|unit| {
            let before = left.len();
            let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
            for word in unit.split(|c: char| !ident(c)) {
                if !word.is_empty() {
                    left.remove(word);
                }
            }
            before - left.len()
        })
        .collect();
    if let Some(last) = counts.last_mut() {
        *last += left.len();
    }
    counts
}

/// The result of one compiler process: success, or the compiler's complaint naming the
/// kernel it was in (the source `src` kept for the dump).
fn finish(
    cc: &str,
    result: std::io::Result<std::process::Output>,
    src: &Path,
) -> Result<(), BackendError> {
    let result = result.map_err(|e| BackendError::NoCompiler {
        compiler: cc.to_string(),
        reason: e.to_string(),
    })?;
    if result.status.success() {
        return Ok(());
    }
    let message = String::from_utf8_lossy(&result.stderr).to_string();
    let kernel = message
        .lines()
        .find_map(|l| {
            let rest = &l[l.find("In function ")? + "In function ".len()..];
            let name: String = rest
                .trim_start_matches(['\'', '\u{2018}'])
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .unwrap_or_else(|| "?".to_string());
    Err(BackendError::CompilerRejected {
        kernel,
        message,
        source_path: src.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn kernels_count_for_the_unit_that_names_them() {
        let units = vec![
            "void k_1_body(int);\nvoid k_1(void *const *bufs) {}\nvoid k_2(void *const *bufs) \
             __attribute__((alias(\"k_1\")));"
                .to_string(),
            "/* k_1 again */ void k_3(void *const *bufs) {}".to_string(),
        ];
        let names: Vec<String> = ["k_1", "k_2", "k_3", "k_9"].map(String::from).to_vec();
        // k_1 counts once (in the first unit), k_1_body is not k_1, the unfound k_9 counts
        // for the last unit.
        assert_eq!(kernels_in(&units, &names), vec![2, 2]);
    }

    #[test]
    fn each_finished_compiler_process_is_reported() {
        let dir = std::env::temp_dir().join(format!("hloc-cc-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let srcs: Vec<PathBuf> = (0..2)
            .map(|i| {
                let src = dir.join(format!("u{i}.c"));
                std::fs::write(&src, format!("int k{i}(void) {{ return {i}; }}\n")).unwrap();
                src
            })
            .collect();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = Arc::clone(&heard);
        let listener = Listener(Arc::new(move |done, all| {
            h.lock().unwrap().push((done, all))
        }));
        let out = dir.join("m.so");
        reporting_to(Some(listener), || {
            compile(&compiler(), &srcs, &[3, 1], &out)
        })
        .unwrap();
        assert_eq!(*heard.lock().unwrap(), vec![(0, 4), (3, 4), (4, 4)]);
        // Outside `reporting_to` nobody is told.
        compile(&compiler(), &srcs, &[3, 1], &out).unwrap();
        assert_eq!(heard.lock().unwrap().len(), 3);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
