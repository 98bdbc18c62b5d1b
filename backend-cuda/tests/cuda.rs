//! The CUDA printer: golden text of printed kernels (the kernel IR in, the threaded kernel
//! IR and its CUDA C out), and every kernel the emitters' golden file holds, threaded,
//! printed and compiled by NVRTC for sm_90, with no spills where a kernel keeps no
//! per-thread scratch arrays.

use std::path::Path;

use backend_cuda::{compile_cubin, kernel_cu, module_cu, nvrtc_present, CudaError};
use codegen::kir::{blocks_as_threads, kernel_text, parse_kernel, parse_kernels, verify};

const EMITTED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../plan/tests/golden/kir.test"
));

#[test]
fn printed_kernels_match_golden_text() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/print.test");
    testkit::golden::check_file(&path, |case| {
        let threads: i64 = case
            .header_value("threads")
            .and_then(|t| t.parse().ok())
            .unwrap_or(1);
        let k = match parse_kernel(&case.input) {
            Ok(k) => k,
            Err(e) => return format!("error: {e}"),
        };
        let k = blocks_as_threads(&k, threads);
        if let Err(e) = verify(&k) {
            return format!("error: {e}");
        }
        match kernel_cu(&k) {
            Ok(cu) => format!("{}{cu}", kernel_text(&k)),
            Err(e) => format!("error: {e}"),
        }
    });
}

/// Whether tests must find NVRTC (CI installs it with tools/setup.sh).
fn nvrtc_required() -> bool {
    std::env::var_os("CI").is_some()
}

#[test]
fn every_emitted_kernel_compiles_with_nvrtc_without_spills() {
    if !nvrtc_present() {
        assert!(!nvrtc_required(), "CI must have NVRTC (tools/setup.sh)");
        eprintln!("skipped: NVRTC not found");
        return;
    }
    let file = testkit::golden::parse(EMITTED).expect("kir.test parses");
    let mut kernels = Vec::new();
    for case in file
        .cases
        .iter()
        .filter(|c| c.expected.starts_with("kernel "))
    {
        let text = format!("{}\n", case.expected);
        for (i, k) in parse_kernels(&text)
            .expect("golden kernels parse")
            .into_iter()
            .enumerate()
        {
            let mut k = blocks_as_threads(&k, 128);
            verify(&k).unwrap_or_else(|e| panic!("case `{}`: {e}", case.title));
            // One module: names must be unique.
            k.name = format!("{}_c{}_{i}", k.name, kernels.len());
            kernels.push(k);
        }
    }
    let printable: Vec<_> = kernels
        .into_iter()
        .filter(|k| !matches!(kernel_cu(k), Err(CudaError::Unsupported { .. })))
        .collect();
    assert!(printable.len() > 30, "only {} kernels", printable.len());
    let module = module_cu(&printable).expect("prints");
    let cubin = compile_cubin(&module, "sm_90").unwrap_or_else(|e| panic!("{e}"));
    assert!(!cubin.image.is_empty());
    assert_eq!(cubin.kernels.len(), printable.len(), "{}", cubin.log);
    for r in &cubin.kernels {
        let k = printable
            .iter()
            .find(|k| k.name == r.name)
            .expect("a printed kernel");
        // The generic threaded form keeps a block's scratch arrays per thread: those may
        // spill until an emitter gives the kernel shared tiles.
        if !k.locals.is_empty() {
            continue;
        }
        assert_eq!(
            (r.spill_stores, r.spill_loads),
            (0, 0),
            "kernel {} spills",
            r.name
        );
        assert!(r.registers > 0, "kernel {}: {}", r.name, cubin.log);
    }
}

#[test]
fn nvrtc_rejection_names_the_kernel() {
    if !nvrtc_present() {
        return;
    }
    let err = compile_cubin(
        "extern \"C\" __global__ void broken(float *x) { x[0] = undefined_name; }",
        "sm_90",
    )
    .unwrap_err();
    match err {
        CudaError::Rejected { log, .. } => assert!(log.contains("undefined_name"), "{log}"),
        e => panic!("{e}"),
    }
}
