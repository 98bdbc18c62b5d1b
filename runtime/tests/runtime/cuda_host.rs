//! Differential test of `--backend cuda-host`: every corpus program's kernels, each
//! emitted block a thread of a block of 128, printed as CUDA C and run by the host
//! emulation, against the reference evaluator; then again with each block's threads in
//! reverse order (`HLOC_CUDA_HOST_ORDER=reverse`), bit for bit the same outputs. No
//! program may be unsupported.

use std::path::Path;

use runtime::{CompileOptions, RuntimeError};

use super::corpus::{inputs, program_dirs};

#[test]
fn corpus_programs_on_the_cuda_host_emulation_match_the_reference_in_both_thread_orders() {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-cuda-host")),
        cuda_host: true,
        ..CompileOptions::default()
    };
    let only = std::env::var("HLOC_CORPUS_ONLY").ok();
    let (mut ran, mut unsupported, mut failures) = (0, Vec::new(), Vec::new());
    for dir in program_dirs() {
        let file = "before_optimizations.hlo";
        let name = format!(
            "{}/{file}",
            dir.file_name().unwrap_or_default().to_string_lossy()
        );
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let text = std::fs::read_to_string(dir.join(file)).expect("read");
        let module = hlo::parse_module(&text).expect("parse");
        let args = inputs(&module, &dir);
        let exe = match runtime::compile(&module, &options) {
            Ok(e) => e,
            Err(RuntimeError::Codegen(e)) if e.unsupported_op().is_some() => {
                unsupported.push(format!("{name}: {e}"));
                continue;
            }
            Err(RuntimeError::Backend(e @ backend_cpu::BackendError::Unsupported { .. })) => {
                unsupported.push(format!("{name}: {e}"));
                continue;
            }
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        std::env::set_var("HLOC_CUDA_HOST_ORDER", "forward");
        let forward = match exe.run(&args) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{name}: run: {e}"));
                continue;
            }
        };
        if let Err(e) = runtime::check_reference(&module, &args, &forward) {
            failures.push(format!("{name}: {e}"));
            continue;
        }
        std::env::set_var("HLOC_CUDA_HOST_ORDER", "reverse");
        let reverse = exe.run(&args);
        std::env::remove_var("HLOC_CUDA_HOST_ORDER");
        match reverse {
            Ok(r) if format!("{r:?}") == format!("{forward:?}") => ran += 1,
            Ok(_) => failures.push(format!("{name}: the threads' order changes the outputs")),
            Err(e) => failures.push(format!("{name}: reverse run: {e}")),
        }
    }
    println!(
        "cuda-host: {ran} programs ran; unsupported:\n{}",
        unsupported.join("\n")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every corpus program compiles for the GPU (complex values included) and runs.
    assert!(
        unsupported.is_empty(),
        "unsupported on the cuda host:\n{}",
        unsupported.join("\n")
    );
    assert!(
        only.is_some() || ran >= 51,
        "only {ran} programs ran on the cuda host"
    );
}
