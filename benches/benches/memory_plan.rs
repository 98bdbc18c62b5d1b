//! The memory planner's time (issue 32, "Done when": scheduling and assignment of the
//! largest corpus module within 5 ms) on the corpus program whose planned module has the
//! most instructions in its entry (`transformer_block_train_step`): its dataflow values,
//! the entry's candidate schedules costed by the heap simulation, and the buffer
//! assignment (outputs holding temporaries, the temp block best fit) of its program's
//! buffers. The module is the one the builder sees, after the passes and fusion.
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use plan::{AllocationKind, Program};

/// The corpus program with the largest planned entry computation.
const PROGRAM: &str = "transformer_block_train_step";

fn planned() -> runtime::Plan {
    let path = format!(
        "{}/../corpus/{PROGRAM}/before_optimizations.hlo",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("corpus file");
    let m = hlo::parse_module(&text).expect("corpus parses");
    runtime::plan(&m, &runtime::CompileOptions::default()).expect("plans")
}

/// The program's fixed allocations and buffers as the builder hands them to the
/// assignment (temporaries and outputs not yet placed), with the output buffers.
fn unassigned(p: &Program) -> (Vec<plan::Allocation>, Vec<plan::Buffer>, Vec<usize>) {
    let fixed: Vec<usize> = (0..p.allocations.len())
        .filter(|&a| {
            matches!(
                p.allocations[a].kind,
                AllocationKind::Parameter(_) | AllocationKind::Constant(_)
            )
        })
        .collect();
    let allocations = fixed.iter().map(|&a| p.allocations[a].clone()).collect();
    let buffers = p
        .buffers
        .iter()
        .map(|b| {
            let mut b = b.clone();
            b.allocation = match b.defined_at {
                Some(_) => usize::MAX,
                None => fixed.iter().position(|&a| a == b.allocation).unwrap_or(0),
            };
            b
        })
        .collect();
    let outputs = p.outputs.iter().map(|o| o.buffer).collect();
    (allocations, buffers, outputs)
}

fn memory_plan(c: &mut Criterion) {
    let plan = planned();
    let m = &plan.module;
    let entry = m.entry();
    eprintln!(
        "memory_plan: {PROGRAM}: {} entry instructions, {} buffers",
        entry.instructions().count(),
        plan.program.buffers.len()
    );
    let mut g = c.benchmark_group("memory_plan");
    g.bench_function(format!("{PROGRAM}/dataflow_and_schedule"), |b| {
        b.iter(|| {
            let flow = plan::memory::dataflow(m);
            black_box(plan::memory::schedule::schedule(m, m.entry_id(), &flow))
        })
    });
    let (allocations, buffers, outputs) = unassigned(&plan.program);
    g.bench_function(format!("{PROGRAM}/assign"), |b| {
        b.iter(|| {
            let (mut bs, mut als) = (buffers.clone(), allocations.clone());
            // No in-place pairs: the bench times the offset search alone.
            black_box(plan::memory::assign::assign(
                &mut bs,
                &mut als,
                &outputs,
                &[],
            ))
        })
    });
    g.finish();
}

criterion_group!(benches, memory_plan);
criterion_main!(benches);
