//! Simplifier throughput on realistic maps (maps per second), compose + simplify latency, and
//! the rule-based simplifier against the e-graph on the same maps.
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};

use affine::egraph;
use affine::gen::realistic_maps;
use hloc_benches::reshape_pair;

const MAPS: usize = 256;

fn simplify_throughput(c: &mut Criterion) {
    let maps = realistic_maps(7, MAPS);
    let mut g = c.benchmark_group("simplify");
    g.throughput(Throughput::Elements(maps.len() as u64));
    g.bench_function("realistic_maps", |b| {
        b.iter_batched(
            || maps.clone(),
            |mut ms| {
                for m in &mut ms {
                    m.simplify();
                }
                black_box(ms)
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn compose_latency(c: &mut Criterion) {
    let (collapse, expand) = reshape_pair(10, 50, 20);
    c.bench_function("compose_and_simplify/reshape_pair", |b| {
        b.iter(|| {
            let mut m = black_box(&collapse)
                .compose(black_box(&expand))
                .expect("arity fits");
            m.simplify();
            black_box(m)
        })
    });
}

fn egraph_vs_rules(c: &mut Criterion) {
    let maps = realistic_maps(11, 32);
    let limits = egraph::Limits::default();
    let mut g = c.benchmark_group("egraph_vs_rules");
    g.throughput(Throughput::Elements(maps.len() as u64));
    g.sample_size(10);
    g.bench_function("rules", |b| {
        b.iter(|| maps.iter().map(|m| m.simplified()).collect::<Vec<_>>())
    });
    g.bench_function("egraph", |b| {
        b.iter(|| {
            maps.iter()
                .map(|m| egraph::simplify_map(m, &limits))
                .collect::<Vec<_>>()
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    simplify_throughput,
    compose_latency,
    egraph_vs_rules
);
criterion_main!(benches);
