//! `hloc run --backend cuda`: on a machine without a CUDA driver, a clear error (exit 2,
//! no panic, naming the way out); with one, the program runs on the GPU and matches the
//! reference evaluator.

use std::process::Command;

#[test]
fn run_on_the_cuda_backend_is_a_clear_error_without_a_driver() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cli/gpu/row_epilogue.hlo"
    );
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-cli-cuda");
    let out = Command::new(env!("CARGO_BIN_EXE_hloc"))
        .args([
            "run",
            file,
            "--backend",
            "cuda",
            "--check-reference",
            "--no-timing",
        ])
        .env("HLOC_CACHE_DIR", &cache)
        .output()
        .expect("run hloc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stderr.contains("panicked"), "{stderr}");
    match out.status.code() {
        Some(2) => assert!(
            stderr
                .contains("no CUDA driver (libcuda.so.1) on this machine; use --backend cuda-host"),
            "{stderr}"
        ),
        Some(0) => assert!(
            stdout.contains("check-reference: 2 outputs match"),
            "{stdout}"
        ),
        other => panic!("exit {other:?}:\n{stdout}\n{stderr}"),
    }
}
