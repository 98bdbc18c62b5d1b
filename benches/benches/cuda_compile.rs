//! Compile time of the CUDA path on the corpus program with the most kernels (`rng`,
//! 74 kernels on h200): the plan with the GPU emitters (passes, fusion, kernels), printing
//! the CUDA module, and NVRTC compiling it to an sm_90 cubin. NVRTC is loaded at run time;
//! without it (tools/setup.sh installs it) only the planning and printing are measured.
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use std::time::Instant;

use criterion::{black_box, criterion_group, criterion_main, Criterion};

/// The corpus program with the most GPU kernels.
const PROGRAM: &str = "rng";

fn module() -> hlo::Module {
    let path = format!(
        "{}/../corpus/{PROGRAM}/before_optimizations.hlo",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("corpus file");
    hlo::parse_module(&text).expect("corpus parses")
}

fn cuda_compile(c: &mut Criterion) {
    let m = module();
    let options = runtime::CompileOptions {
        gpu: Some("h200".into()),
        ..Default::default()
    };
    let mut g = c.benchmark_group("cuda_compile");
    g.sample_size(10);
    g.bench_function(format!("{PROGRAM}/plan_and_print"), |b| {
        b.iter(|| black_box(runtime::plan(&m, &options).expect("plans")))
    });
    if runtime::nvrtc_present() {
        let plan = runtime::plan(&m, &options).expect("plans");
        g.bench_function(format!("{PROGRAM}/nvrtc"), |b| {
            b.iter(|| {
                black_box(
                    runtime::compile_gpu_plan(plan.clone(), &options, Instant::now())
                        .expect("NVRTC compiles the module"),
                )
            })
        });
    } else {
        eprintln!("cuda_compile: NVRTC not found, only planning and printing measured");
    }
    g.finish();
}

criterion_group!(benches, cuda_compile);
criterion_main!(benches);
