//! Cubins cached by content hash, as the CPU backend caches its objects: the key hashes
//! the CUDA module, the architecture and NVRTC's version, so a changed kernel, target or
//! compiler misses and anything else loads the cubin without running NVRTC.

use std::path::Path;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::error::CudaError;
use codegen::kir::Kernel;

use crate::bounds::compile_without_spills;
use crate::nvrtc::nvrtc_version;

/// The cache key of `source` compiled for `arch` by NVRTC `version`.
pub fn cubin_key(source: &str, arch: &str, version: (i32, i32)) -> String {
    let mut h = Sha256::new();
    h.update(format!(
        "hloc-cubin-1 {arch} nvrtc {}.{}\n",
        version.0, version.1
    ));
    h.update(source.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The cubin of `source` (`module_cu(kernels)`) for `arch`: from `dir` when cached, else
/// compiled by NVRTC (with launch bounds for kernels that spill,
/// [`crate::bounds::compile_without_spills`]) and stored there under `source`'s key; with
/// whether it was a cache hit. A cache that cannot be written is no
/// failure (the cubin is compiled again next time). Stages: `cache-lookup`, `nvrtc`.
pub fn cached_cubin(
    kernels: &[Kernel],
    source: &str,
    arch: &str,
    dir: &Path,
    stages: &mut Vec<(&'static str, Duration)>,
) -> Result<(Vec<u8>, bool), CudaError> {
    let t = Instant::now();
    let version = nvrtc_version().ok_or(CudaError::NoNvrtc)?;
    let path = dir.join(format!("{}.cubin", cubin_key(source, arch, version)));
    let cached = std::fs::read(&path)
        .ok()
        .filter(|b| b.starts_with(b"\x7fELF"));
    stages.push(("cache-lookup", t.elapsed()));
    if let Some(image) = cached {
        return Ok((image, true));
    }
    let t = Instant::now();
    let (_, cubin) = compile_without_spills(kernels, source, arch)?;
    stages.push(("nvrtc", t.elapsed()));
    let tmp = dir.join(format!(
        "{}.cubin.{}.tmp",
        path.display(),
        std::process::id()
    ));
    let stored = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&tmp, &cubin.image))
        .and_then(|()| std::fs::rename(&tmp, &path));
    if stored.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok((cubin.image, false))
}
