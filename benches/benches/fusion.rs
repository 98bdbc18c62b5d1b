//! Compile time of the whole fusion pipeline (`fusion::fuse`: priority, multi-output and
//! horizontal fusion, then the explain report) on the largest corpus program (`rng`) for
//! the `cpu` and `h100` descriptions. As `hloc fuse` does, the module first goes through
//! the target-independent pipeline (once, outside the measurement); each iteration fuses a
//! fresh clone of it.
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use hlo::pass::Pass;

/// The largest corpus program (by text size).
const PROGRAM: &str = "rng";

fn optimized(name: &str) -> hlo::Module {
    let path = format!(
        "{}/../corpus/{name}/before_optimizations.hlo",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("corpus file");
    let mut m = hlo::parse_module(&text).expect("corpus parses");
    hlo_transforms::default_pipeline()
        .run(&mut m)
        .expect("pipeline runs");
    m
}

fn fuse(c: &mut Criterion) {
    let m = optimized(PROGRAM);
    let mut g = c.benchmark_group("fuse");
    for target in ["cpu", "h100"] {
        let dev = device::load(target).expect("shipped description");
        g.bench_function(format!("{PROGRAM}/{target}"), |b| {
            b.iter_batched(
                || m.clone(),
                |mut m| {
                    let report = fusion::fuse(&mut m, &dev).expect("fusion runs");
                    black_box((report, m))
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, fuse);
criterion_main!(benches);
