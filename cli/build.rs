//! Gives the `hloc` binary a run path to the libraries `tools/setup.sh` unpacks into the
//! checkout's `.deps/` (libz3 for the `z3` feature, NVRTC for `--target h100|h200`), so the
//! built binary finds them wherever it is run from, with no `ldconfig` (no root) and no
//! `LD_LIBRARY_PATH`. Directories that do not exist are harmless; a library installed on the
//! system is still found through the loader's usual path when `.deps/` lacks it.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let Some(root) = Path::new(&manifest).parent() else {
        return;
    };
    let dirs: Vec<String> = ["z3/lib", "nvrtc/lib"]
        .iter()
        .map(|d| root.join(".deps").join(d).display().to_string())
        .collect();
    // A ':' in a directory would split the run path; such a checkout uses LD_LIBRARY_PATH.
    if dirs.iter().any(|d| d.contains(':') || d.contains(',')) {
        return;
    }
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{}", dirs.join(":"));
    }
}
