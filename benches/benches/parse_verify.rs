//! Parse + verify throughput (MB/s of HLO text) on the largest corpus module, and parse
//! alone and verify alone on the same module.
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use std::path::{Path, PathBuf};

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

/// The largest `corpus/*/*.hlo` file.
fn largest_corpus_module() -> (PathBuf, String) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut best: Option<(u64, PathBuf)> = None;
    for d in std::fs::read_dir(&dir).expect("corpus directory").flatten() {
        for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "hlo") {
                let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                if best.as_ref().is_none_or(|(l, _)| len > *l) {
                    best = Some((len, p));
                }
            }
        }
    }
    let (_, path) = best.expect("a corpus module");
    let text = std::fs::read_to_string(&path).expect("readable corpus module");
    (path, text)
}

fn parse_verify(c: &mut Criterion) {
    let (path, text) = largest_corpus_module();
    let module = hlo::parse_module(&text).expect("corpus module parses");
    hlo::verifier::verify(&module).expect("corpus module verifies");
    let mut g = c.benchmark_group(format!(
        "parse_verify/{}",
        path.parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    ));
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("parse+verify", |b| {
        b.iter(|| {
            let m = hlo::parse_module(black_box(&text)).expect("parses");
            black_box(hlo::verifier::verify(&m).is_ok())
        })
    });
    g.bench_function("parse", |b| {
        b.iter(|| black_box(hlo::parse_module(black_box(&text)).expect("parses")))
    });
    g.bench_function("verify", |b| {
        b.iter(|| black_box(hlo::verifier::verify(black_box(&module)).is_ok()))
    });
    g.finish();
}

criterion_group!(benches, parse_verify);
criterion_main!(benches);
