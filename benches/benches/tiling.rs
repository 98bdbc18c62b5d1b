//! Symbolic tile analysis of every fusion in XLA:CPU's optimized HLO of the largest corpus
//! program (by line count), tile-size search for each (a toy cost: programs near 64, then
//! small per-program footprints, within 48 KiB), and op-by-op tile propagation from each
//! fusion's symbolic root tile through its fused computation; reported as fusions per
//! second (target: at most 100 us per fusion analysed).
#![allow(missing_docs)] // criterion_group!/criterion_main! generate undocumented items.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use hlo::{InstrRef, Module, Opcode};
use tiling::propagate::{to_operands, Tile, TilingSpace};
use tiling::search::{search, Budget, Candidate, TileCost};

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

/// Every fusion instruction of the module.
fn fusions(module: &Module) -> Vec<InstrRef<'_>> {
    let mut out = Vec::new();
    for (cid, comp) in module.computations() {
        for (id, instr) in comp.instructions() {
            if instr.opcode() == Opcode::Fusion {
                out.extend(module.instr_ref(cid, id));
            }
        }
    }
    out
}

/// Programs near 64, then small footprints.
struct Toy;
impl TileCost for Toy {
    fn cost(&self, c: &Candidate<'_>) -> Option<f64> {
        Some((c.num_programs - 64).abs() as f64 * 1e6 + c.footprint_bytes as f64)
    }
}

/// The root tile of a fusion propagated through every instruction of its computation.
fn propagate(module: &Module, fusion: &InstrRef<'_>) -> usize {
    let Some(comp_id) = fusion.instr().calls() else {
        return 0;
    };
    let comp = module.computation(comp_id);
    let root = comp.instr(comp.root());
    if root.shape().is_tuple() {
        return 0;
    }
    let mut space = TilingSpace::parallel(root.shape().dims());
    let mut tiles: std::collections::HashMap<hlo::InstrId, Vec<Tile>> = Default::default();
    tiles.insert(comp.root(), vec![space.root_tile()]);
    let mut count = 0;
    for &id in comp.def_before_use_order().iter().rev() {
        let Some(ts) = tiles.get(&id).cloned() else {
            continue;
        };
        let Some(handle) = module.instr_ref(comp_id, id) else {
            continue;
        };
        for t in ts {
            let Ok(ops) = to_operands(&mut space, &handle, 0, &t) else {
                continue;
            };
            for (j, o) in ops.into_iter().enumerate() {
                if let (Ok(o), Some(&op)) = (o, handle.instr().operands().get(j)) {
                    count += 1;
                    let list = tiles.entry(op).or_default();
                    if !list.contains(&o) {
                        list.push(o);
                    }
                }
            }
        }
    }
    count
}

fn tiling_benches(c: &mut Criterion) {
    let (path, text) = largest_program();
    let module = hlo::parse_module(&text).expect("corpus parses");
    let list = fusions(&module);
    let analyses: Vec<_> = list
        .iter()
        .filter_map(|f| tiling::analyze(f).ok())
        .collect();
    eprintln!(
        "{path}: {} fusions, {} tileable",
        list.len(),
        analyses.len()
    );
    let budget = Budget {
        max_footprint_bytes: Some(48 * 1024),
        ..Budget::default()
    };
    let mut g = c.benchmark_group("tiling");
    g.sample_size(20);
    g.throughput(Throughput::Elements(list.len() as u64));
    g.bench_function("analyze_every_fusion", |b| {
        b.iter(|| {
            for f in &list {
                let _ = black_box(tiling::analyze(f));
            }
        })
    });
    g.bench_function("propagate_every_fusion", |b| {
        b.iter(|| {
            for f in &list {
                black_box(propagate(&module, f));
            }
        })
    });
    g.throughput(Throughput::Elements(analyses.len() as u64));
    g.bench_function("search_every_tileable_fusion", |b| {
        b.iter(|| {
            for a in &analyses {
                let _ = black_box(search(a, &budget, &Toy));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, tiling_benches);
criterion_main!(benches);
