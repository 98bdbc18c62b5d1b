//! Compile time of the default pass pipeline on the largest corpus programs (`rng`,
//! `f64_math`, `transformer_block_train_step`): parse once, clone and optimize per
//! iteration.
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use hlo::pass::Pass;

fn load(name: &str) -> hlo::Module {
    let path = format!(
        "{}/../corpus/{name}/before_optimizations.hlo",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("corpus file");
    hlo::parse_module(&text).expect("corpus parses")
}

fn default_pipeline(c: &mut Criterion) {
    let mut g = c.benchmark_group("default_pipeline");
    for name in ["rng", "f64_math", "transformer_block_train_step"] {
        let m = load(name);
        g.bench_function(name, |b| {
            b.iter_batched(
                || m.clone(),
                |mut m| {
                    let changed = hlo_transforms::default_pipeline()
                        .run(&mut m)
                        .expect("pipeline runs");
                    black_box((changed, m))
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, default_pipeline);
criterion_main!(benches);
