//! The system C compiler: its identity (for the cache key) and compiling a module's
//! translation units to one shared object.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// Compiles the C files `srcs` (translation units of one module) to the shared object
/// `out`: one file in one step; several each to an object file, all at once (one compiler
/// process per file, so the machine's cores share the work), then linked.
pub fn compile(cc: &str, srcs: &[PathBuf], out: &Path) -> Result<(), BackendError> {
    if srcs.is_empty() {
        return Err(BackendError::Internal(
            "no translation unit to compile".into(),
        ));
    }
    if let [src] = srcs {
        let mut cmd = Command::new(cc);
        cmd.args(FLAGS).arg("-o").arg(out).arg(src).arg("-lm");
        return finish(cc, cmd.output(), src);
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
    for (src, child) in running {
        let result = child.and_then(|c| c.wait_with_output());
        if let Err(e) = finish(cc, result, src) {
            first_error.get_or_insert(e);
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
