//! The compiled-object cache: shared objects keyed by a content hash of (source, flags,
//! compiler version, host CPU model) under `$HLOC_CACHE_DIR` (default
//! `$XDG_CACHE_HOME/hloc`, else `~/.cache/hloc`).
//!
//! An entry is one file, `KEY.so`: the shared object the compiler wrote, then a seal of
//! [`SEAL_LEN`] bytes (the SHA-256 of the object's bytes and the magic [`SEAL_MAGIC`];
//! the dynamic loader maps only the segments the object's headers name and ignores bytes
//! after them). A lookup reads the whole entry and checks the seal *before* the loader
//! sees it, so an entry with flipped, missing or extra bytes is never run: it is removed
//! and rebuilt with a warning (`log::warn!`, on stderr in the CLI). The object also
//! carries its key as the symbol `hloc_cache_key`, checked after loading, so a foreign
//! entry (a sealed object renamed to another key) is rebuilt too.
//!
//! Entries are compiled to a file of a name unique to the process and moment, sealed,
//! loaded from there and renamed into place, so the object and its seal appear together
//! in one step: processes writing one entry at once each load their own object, the last
//! rename wins, and no reader ever sees a partial entry.

use std::io::Write;
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
    h.update(b"hloc-cpu-object-v3\0");
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

/// The source actually compiled: the translation unit and its key symbol (declared
/// `extern` first, so that a unit compiled as C++ exports it too).
pub fn keyed_source(source: &str, key: &str) -> String {
    format!(
        "{source}\nextern const char hloc_cache_key[];\nconst char hloc_cache_key[] = \"{key}\";\n"
    )
}

/// The last bytes of every cache entry, after the object's SHA-256.
pub const SEAL_MAGIC: &[u8; 8] = b"hlocsum1";
/// Bytes of the seal at the end of every cache entry: the SHA-256, then [`SEAL_MAGIC`].
pub const SEAL_LEN: usize = 32 + SEAL_MAGIC.len();

/// The seal of an object whose bytes are `object`.
fn seal_of(object: &[u8]) -> Vec<u8> {
    let mut seal = Sha256::digest(object).to_vec();
    seal.extend_from_slice(SEAL_MAGIC);
    seal
}

/// Appends the seal of the object at `path` to it.
fn seal(path: &Path) -> Result<(), BackendError> {
    let cache_err = |source| BackendError::Cache {
        path: path.to_path_buf(),
        source,
    };
    let object = std::fs::read(path).map_err(cache_err)?;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(cache_err)?;
    file.write_all(&seal_of(&object)).map_err(cache_err)
}

/// Checks the seal of a cache entry whose bytes are `entry`: `Err` says what is wrong.
pub fn check_seal(entry: &[u8]) -> Result<(), &'static str> {
    if entry.len() < SEAL_LEN || !entry.ends_with(SEAL_MAGIC) {
        return Err("no seal: truncated, or not written by this version of hloc");
    }
    let (object, seal) = entry.split_at(entry.len() - SEAL_LEN);
    if seal_of(object) != seal {
        return Err("its content hash does not match: flipped or lost bytes");
    }
    Ok(())
}

/// Why the entry at `path` cannot be used (`None`: it is sound, or it vanished, as when
/// another process removed it, which is a plain miss).
fn unsound(path: &Path) -> Option<String> {
    match std::fs::read(path) {
        Ok(bytes) => check_seal(&bytes).err().map(str::to_string),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(format!("cannot read it: {e}")),
    }
}

/// Loads the object for `source` (the whole translation unit, whose hash is the key) with
/// the kernels `kernels`, from the cache or (on a miss) by compiling the translation units
/// `units()` gives (the same kernels split for compiling in parallel) with `compiler`;
/// returns it and whether it was a cache hit (a module without kernels compiles and loads
/// nothing, and reports a miss). An entry whose seal or key does not check is removed and
/// rebuilt, with a warning. Appends the wall time of each step to
/// `times`: `cache-lookup` (the compiler's version, the key, the
/// entry's existence), `cc` (on a miss: writing the source, compiling, sealing, renaming
/// into place) and `load` (checking the seal, opening the object and checking its key; a
/// corrupt entry's failed checks included).
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
        // The seal is checked before the loader maps a byte of the object.
        let problem = match unsound(&path) {
            None => match Loaded::open(&path, &key, kernels) {
                Ok(l) => {
                    touch(&path);
                    times.push(("load", t.elapsed()));
                    return Ok((l, true));
                }
                Err(BackendError::Load { message, .. }) => Some(message),
                Err(e) => Some(e.to_string()),
            },
            problem => problem,
        };
        load_time = t.elapsed();
        if let Some(problem) = problem {
            if path.exists() {
                log::warn!(
                    target: "hloc::cache",
                    "the cached object {} is corrupt ({problem}); rebuilding it",
                    path.display()
                );
            }
        }
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
    let per_unit = cc::kernels_in(&units, kernels);
    let compiled = cc::compile(compiler, &srcs, &per_unit, &tmp).and_then(|()| seal(&tmp));
    for src in &srcs {
        let _ = std::fs::remove_file(src);
    }
    if let Err(e) = compiled {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let cc_time = t.elapsed();
    // Loaded from the file only this process wrote, then published: another process
    // replacing or removing the entry meanwhile cannot change what this one runs.
    let t = Instant::now();
    let loaded = Loaded::open(&tmp, &key, kernels);
    let open_time = t.elapsed();
    let t = Instant::now();
    let renamed = std::fs::rename(&tmp, &path);
    if loaded.is_err() || renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    let l = loaded?;
    renamed.map_err(|source| BackendError::Cache {
        path: path.clone(),
        source,
    })?;
    // Keep the directory within the default cap (a failure to prune is no failure to
    // compile).
    let _ = prune(dir, DEFAULT_MAX_BYTES);
    times.push(("cc", cc_time + t.elapsed()));
    times.push(("load", load_time + open_time));
    Ok((l, false))
}

/// The default cap on a cache directory's objects: after each new entry, the least
/// recently used ones beyond it are removed.
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;

/// One cached object.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The entry's file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// When it was last written or loaded.
    pub used: std::time::SystemTime,
}

/// The objects of the cache directory `dir` (none when it does not exist), least recently
/// used first.
pub fn entries(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let read = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for e in read {
        let e = e?;
        let path = e.path();
        if path.extension().is_none_or(|x| x != "so") {
            continue;
        }
        let meta = e.metadata()?;
        out.push(Entry {
            path,
            bytes: meta.len(),
            used: meta.modified()?,
        });
    }
    out.sort_by(|a, b| a.used.cmp(&b.used).then_with(|| a.path.cmp(&b.path)));
    Ok(out)
}

/// Removes the least recently used objects of `dir` until the rest hold at most
/// `max_bytes` (the most recent one always stays); returns how many and how many bytes
/// it removed.
pub fn prune(dir: &Path, max_bytes: u64) -> std::io::Result<(usize, u64)> {
    let all = entries(dir)?;
    let mut total: u64 = all.iter().map(|e| e.bytes).sum();
    let (mut count, mut freed) = (0, 0);
    for e in &all[..all.len().saturating_sub(1)] {
        if total <= max_bytes {
            break;
        }
        match std::fs::remove_file(&e.path) {
            Ok(()) => {
                count += 1;
                freed += e.bytes;
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        total -= e.bytes;
    }
    Ok((count, freed))
}

/// Marks the entry at `path` as just used (its modification time), for [`prune`].
fn touch(path: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(path) {
        let _ = f.set_modified(std::time::SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-kernel unit: `hloc_test_k` stores `value` in the first element of buffer 0.
    fn unit(value: i32) -> String {
        format!(
            "#include <stdint.h>\n\
             void hloc_test_k(void *const *bufs, int64_t b, int64_t e) {{\n\
             (void)b; (void)e; ((int32_t *)bufs[0])[0] = {value};\n}}\n"
        )
    }

    /// A fresh directory for one test's cache.
    fn fresh_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hloc-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// Loads (or builds) the unit storing `value` in `dir`; returns what its kernel stores
    /// and whether it was a cache hit.
    #[allow(unsafe_code)]
    fn load_and_call(dir: &Path, value: i32) -> (i32, bool) {
        let source = unit(value);
        let units = || vec![source.clone()];
        let mut times = Vec::new();
        let (loaded, hit) = load_or_build(
            &source,
            &units,
            &["hloc_test_k".to_string()],
            dir,
            &cc::compiler(),
            &mut times,
        )
        .expect("compiles and loads");
        let mut out = [0i32; 1];
        let bufs = [out.as_mut_ptr().cast::<std::ffi::c_void>()];
        // SAFETY: `hloc_test_k` has the kernel signature and writes one i32 to bufs[0],
        // which points at `out`.
        unsafe { (loaded.kernels[0])(bufs.as_ptr(), 0, 1) };
        (out[0], hit)
    }

    /// The one entry of a cache directory (temporary files are gone).
    fn the_entry(dir: &Path) -> PathBuf {
        let entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("cache dir")
            .map(|e| e.expect("entry").path())
            .collect();
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(entries[0].extension().and_then(|e| e.to_str()), Some("so"));
        entries[0].clone()
    }

    #[test]
    fn a_corrupt_entry_is_rebuilt_not_run() {
        let dir = fresh_dir("corrupt");
        assert_eq!(load_and_call(&dir, 42), (42, false));
        assert_eq!(load_and_call(&dir, 42), (42, true));
        let entry = the_entry(&dir);
        let good = std::fs::read(&entry).expect("entry");
        assert_eq!(check_seal(&good), Ok(()));
        let damaged: [(&str, Vec<u8>); 4] = [
            ("flipped bytes in the object", {
                let mut b = good.clone();
                let mid = (b.len() - SEAL_LEN) / 2;
                for x in &mut b[mid..mid + 64] {
                    *x ^= 0xa5;
                }
                b
            }),
            ("a flipped bit in the seal", {
                let mut b = good.clone();
                let at = b.len() - SEAL_LEN;
                b[at] ^= 1;
                b
            }),
            ("truncated", good[..good.len() / 2].to_vec()),
            (
                "unsealed, as an older hloc wrote",
                good[..good.len() - SEAL_LEN].to_vec(),
            ),
        ];
        for (what, bytes) in damaged {
            assert!(check_seal(&bytes).is_err(), "{what}");
            std::fs::write(&entry, &bytes).expect("write");
            assert_eq!(load_and_call(&dir, 42), (42, false), "{what}");
            assert_eq!(the_entry(&dir), entry, "{what}");
            let rebuilt = std::fs::read(&entry).expect("entry");
            assert_eq!(check_seal(&rebuilt), Ok(()), "{what}");
            assert_eq!(load_and_call(&dir, 42), (42, true), "{what}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_sealed_entry_under_another_key_is_rebuilt() {
        let dir = fresh_dir("foreign");
        assert_eq!(load_and_call(&dir, 7), (7, false));
        let seven = the_entry(&dir);
        assert_eq!(load_and_call(&dir, 8), (8, false));
        let eight = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .find(|p| *p != seven)
            .expect("second entry");
        // A sound object under the wrong name: its seal checks, its key does not.
        std::fs::copy(&seven, &eight).expect("copy");
        assert_eq!(load_and_call(&dir, 8), (8, false));
        assert_eq!(load_and_call(&dir, 8), (8, true));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn processes_writing_one_entry_at_once_each_get_a_sound_object() {
        let dir = fresh_dir("concurrent");
        let n = 4;
        let barrier = std::sync::Barrier::new(n);
        let results: Vec<(i32, bool)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        load_and_call(&dir, 5)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        });
        assert!(results.iter().all(|&(v, _)| v == 5), "{results:?}");
        // One entry remains, sealed; no temporary file is left behind.
        let entry = the_entry(&dir);
        assert_eq!(check_seal(&std::fs::read(entry).expect("entry")), Ok(()));
        assert_eq!(load_and_call(&dir, 5), (5, true));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
