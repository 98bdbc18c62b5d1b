//! Grouped output-to-input indexing of every fusion in XLA:CPU's optimized HLO of the
//! largest corpus program (by line count), reported as fused instructions per second.
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use hlo::{InstrRef, Module, Opcode};

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

/// Every fusion instruction of the module, and the number of instructions inside the fused
/// computations.
fn fusions(module: &Module) -> (Vec<InstrRef<'_>>, u64) {
    let mut out = Vec::new();
    let mut fused = 0u64;
    for (cid, comp) in module.computations() {
        for (id, instr) in comp.instructions() {
            if instr.opcode() == Opcode::Fusion {
                out.extend(module.instr_ref(cid, id));
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
            for fusion in &list {
                black_box(indexing::analyze(fusion).expect("analysis"));
            }
        })
    });
    g.finish();
}

/// A fusion of `n` instructions alternating transpose and exponential over f32[16,32],
/// with a reshape every fourth step: fusion size grows, the map stays one expression.
fn chain_module(n: usize) -> String {
    let mut body = vec!["  v0 = f32[16,32] parameter(0)".to_string()];
    let mut dims = [16, 32];
    for k in 1..n {
        let v = k - 1;
        let line = match k % 4 {
            1 => {
                dims.swap(0, 1);
                format!("transpose(v{v}), dimensions={{1,0}}")
            }
            3 => {
                dims = [dims[1], dims[0]];
                format!("reshape(v{v})")
            }
            _ => format!("exponential(v{v})"),
        };
        let root = if k + 1 == n { "ROOT " } else { "" };
        body.push(format!(
            "  {root}v{k} = f32[{},{}] {line}",
            dims[0], dims[1]
        ));
    }
    format!(
        "HloModule chain\nf {{\n{}\n}}\nENTRY e {{\n  p = f32[16,32] parameter(0)\n  ROOT r = f32[{},{}] fusion(p), kind=kLoop, calls=f\n}}\n",
        body.join("\n"),
        dims[0],
        dims[1]
    )
}

/// Time per fused instruction as the fusion grows: linear scaling shows as flat throughput.
fn chain_scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("indexing_chain");
    g.sample_size(20);
    for n in [16usize, 64, 256] {
        let module = hlo::parse_module(&chain_module(n)).expect("chain parses");
        let fusion = module.instr("r").expect("the chain's fusion");
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(format!("{n}_instructions"), |b| {
            b.iter(|| black_box(indexing::analyze(&fusion).expect("analysis")))
        });
    }
    g.finish();
}

criterion_group!(benches, grouped_indexing, chain_scaling);
criterion_main!(benches);
