//! The system C compiler: its identity (for the cache key) and compiling one translation
//! unit to a shared object.

use std::path::Path;
use std::process::Command;

use crate::error::RuntimeError;

/// The compiler command (`$HLOC_CC`, else `cc`).
pub fn compiler() -> String {
    std::env::var("HLOC_CC")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "cc".to_string())
}

/// Flags of every compile: optimized for this machine, IEEE semantics kept (no
/// `-ffast-math`), no `errno` from math functions so they can be inlined.
pub const FLAGS: &[&str] = &[
    "-O3",
    "-march=native",
    "-fno-math-errno",
    "-fPIC",
    "-shared",
    "-std=gnu11",
];

/// `cc --version`'s first line (part of the cache key).
pub fn version(cc: &str) -> Result<String, RuntimeError> {
    let out = Command::new(cc)
        .arg("--version")
        .output()
        .map_err(|e| RuntimeError::NoCompiler {
            compiler: cc.to_string(),
            reason: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(RuntimeError::NoCompiler {
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

/// Compiles `src` (a C file) to the shared object `out`.
pub fn compile(cc: &str, src: &Path, out: &Path) -> Result<(), RuntimeError> {
    let result = Command::new(cc)
        .args(FLAGS)
        .arg("-o")
        .arg(out)
        .arg(src)
        .arg("-lm")
        .output()
        .map_err(|e| RuntimeError::NoCompiler {
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
    Err(RuntimeError::CompilerRejected {
        kernel,
        message,
        source_path: src.to_path_buf(),
    })
}
