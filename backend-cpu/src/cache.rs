//! The compiled-object cache: shared objects keyed by a content hash of (source, flags,
//! compiler version, host CPU model) under `$HLOC_CACHE_DIR` (default
//! `$XDG_CACHE_HOME/hloc`, else `~/.cache/hloc`). Entries are written to a temporary file
//! and renamed into place, so concurrent processes never see a partial object; every
//! object carries its key as the symbol `hloc_cache_key`, checked after loading, so a
//! corrupt or foreign entry is rebuilt rather than trusted.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::cc;
use crate::error::BackendError;
use crate::loaded::Loaded;

/// The cache directory: `explicit`, else `$HLOC_CACHE_DIR`, `$XDG_CACHE_HOME/hloc`,
/// `~/.cache/hloc`, or a directory under the system's temporary directory.
pub fn cache_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("HLOC_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|p| p.join("hloc")))
        .or_else(|| var("HOME").map(|p| p.join(".cache").join("hloc")))
        .unwrap_or_else(|| std::env::temp_dir().join("hloc-cache"))
}

/// The cache key of a translation unit (hex SHA-256).
pub fn key(source: &str, cc_version: &str, cpu: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"hloc-cpu-object-v2\0");
    for f in cc::FLAGS {
        h.update(f.as_bytes());
        h.update(b" ");
    }
    h.update(b"\0");
    h.update(cc_version.as_bytes());
    h.update(b"\0");
    h.update(cpu.as_bytes());
    h.update(b"\0");
    h.update(source.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The source actually compiled: the translation unit and its key symbol.
pub fn keyed_source(source: &str, key: &str) -> String {
    format!("{source}\nconst char hloc_cache_key[] = \"{key}\";\n")
}

/// Loads the object for `source` (the whole translation unit, whose hash is the key) with
/// the kernels `kernels`, from the cache or (on a miss) by compiling the translation units
/// `units()` gives (the same kernels split for compiling in parallel) with `compiler`;
/// returns it and whether it was a cache hit (a module without kernels compiles and loads
/// nothing, and reports a miss). Appends the wall time of each step to
/// `times`: `cache-lookup` (the compiler's version, the key, the
/// entry's existence), `cc` (on a miss: writing the source, compiling, renaming into
/// place) and `load` (opening and checking the object; a corrupt entry's failed open
/// included).
pub fn load_or_build(
    source: &str,
    units: &dyn Fn() -> Vec<String>,
    kernels: &[String],
    dir: &Path,
    compiler: &str,
    times: &mut Vec<(&'static str, Duration)>,
) -> Result<(Loaded, bool), BackendError> {
    if kernels.is_empty() {
        // Library calls and copies only: nothing to compile, look up or load.
        return Ok((Loaded::without_kernels(), false));
    }
    let t = Instant::now();
    let version = cc::version(compiler)?;
    let key = key(source, &version, &cc::cpu_model());
    let path = dir.join(format!("{key}.so"));
    let exists = path.exists();
    times.push(("cache-lookup", t.elapsed()));
    let mut load_time = Duration::ZERO;
    if exists {
        let t = Instant::now();
        let opened = Loaded::open(&path, &key, kernels);
        load_time = t.elapsed();
        if let Ok(l) = opened {
            times.push(("load", load_time));
            return Ok((l, true));
        }
        // Corrupt, foreign or incomplete: rebuild it.
        let _ = std::fs::remove_file(&path);
    }
    let t = Instant::now();
    std::fs::create_dir_all(dir).map_err(|source| BackendError::Cache {
        path: dir.to_path_buf(),
        source,
    })?;
    let unique = format!(
        "{key}.{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let tmp = dir.join(format!("{unique}.so.tmp"));
    let units = units();
    let mut srcs = Vec::with_capacity(units.len());
    for (i, unit) in units.iter().enumerate() {
        let src = dir.join(format!("{unique}.{i}.c"));
        // The first unit carries the key symbol.
        let text = if i == 0 {
            keyed_source(unit, &key)
        } else {
            unit.clone()
        };
        std::fs::write(&src, text).map_err(|source| BackendError::Cache {
            path: src.clone(),
            source,
        })?;
        srcs.push(src);
    }
    cc::compile(compiler, &srcs, &tmp)?;
    for src in &srcs {
        let _ = std::fs::remove_file(src);
    }
    std::fs::rename(&tmp, &path).map_err(|source| BackendError::Cache {
        path: path.clone(),
        source,
    })?;
    times.push(("cc", t.elapsed()));
    let t = Instant::now();
    let l = Loaded::open(&path, &key, kernels)?;
    times.push(("load", load_time + t.elapsed()));
    Ok((l, false))
}
