//! Grouped output-to-input indexing of every fusion in XLA:CPU's optimized HLO of the
//! largest corpus program (by line count), reported as fused instructions per second.
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use hlo::{CompId, InstrId, Module, Opcode};

/// The corpus program with the most lines of optimized HLO.
fn largest_program() -> (String, String) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus");
    let mut best = (String::new(), String::new());
    for entry in std::fs::read_dir(dir).expect("corpus") {
        let path = entry.expect("entry").path().join("after_optimizations.hlo");
        if let Ok(text) = std::fs::read_to_string(&path) {
            if text.lines().count() > best.1.lines().count() {
                best = (path.display().to_string(), text);
            }
        }
    }
    best
}

/// Every fusion instruction of the module with its computation, and the number of
/// instructions inside the fused computations.
fn fusions(module: &Module) -> (Vec<(CompId, InstrId)>, u64) {
    let mut out = Vec::new();
    let mut fused = 0u64;
    for (cid, comp) in module.computations() {
        for (id, instr) in comp.instructions() {
            if instr.opcode() == Opcode::Fusion {
                out.push((cid, id));
                if let Some(called) = instr.calls() {
                    fused += module.computation(called).instruction_count() as u64;
                }
            }
        }
    }
    (out, fused)
}

fn grouped_indexing(c: &mut Criterion) {
    let (path, text) = largest_program();
    let module = hlo::parse_module(&text).expect("corpus parses");
    let (list, fused) = fusions(&module);
    eprintln!("{path}: {} fusions, {fused} fused instructions", list.len());
    let mut g = c.benchmark_group("indexing");
    g.throughput(Throughput::Elements(fused));
    g.sample_size(20);
    g.bench_function("all_fusions_of_largest_corpus_program", |b| {
        b.iter(|| {
            for &(comp, id) in &list {
                black_box(indexing::analyze(&module, comp, id).expect("analysis"));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, grouped_indexing);
criterion_main!(benches);
