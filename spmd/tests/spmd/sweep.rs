//! Every program of the corpus (`corpus/*/before_optimizations.hlo`: attention, convolutions,
//! loops, conditionals, sorts, scatters, FFTs, linear algebra, ...) with every array
//! parameter split along one dimension — its largest 4 ways, or its first 8 ways (uneven
//! and empty shards) — partitioned and evaluated on those devices from the corpus's
//! recorded inputs, equals the global evaluation: no op is left without a correct rule
//! or fallback.

use std::path::{Path, PathBuf};

use hlo::attrs::AttrName;
use hlo::{Literal, Module};

use crate::check::check_module;

/// The corpus's program directories.
fn programs() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("before_optimizations.hlo").exists() && p.join("inputs.npz").exists())
        .collect();
    names.sort();
    names
}

/// `module` with every array parameter of rank > 0 split `tiles` ways along the dimension
/// `pick` chooses from its dimensions.
fn split_parameters(module: &Module, tiles: i64, pick: impl Fn(&[i64]) -> usize) -> Module {
    let mut m = module.clone();
    let entry = m.entry_id();
    let params = module.entry().parameters().to_vec();
    for pid in params {
        let shape = module.entry().instr(pid).shape();
        if !shape.is_array() || shape.dims().is_empty() {
            continue;
        }
        let mut t = vec![1i64; shape.dims().len()];
        t[pick(shape.dims())] = tiles;
        let t: Vec<String> = t.iter().map(i64::to_string).collect();
        let text = format!(
            "HloModule s\nENTRY e {{\n  ROOT p = f32[1] parameter(0), sharding={{devices=[{}]<=[{tiles}]}}\n}}\n",
            t.join(",")
        );
        let s = hlo::parse_module(&text).expect("sharding");
        let attr = s
            .entry()
            .root_instr()
            .attr(&AttrName::Sharding)
            .expect("sharding")
            .clone();
        m.computation_mut(entry)
            .instr_mut(pid)
            .set_attr(AttrName::Sharding, attr);
    }
    m
}

/// The corpus's recorded inputs of `module`.
fn inputs(dir: &Path, module: &Module) -> Vec<Literal> {
    let file = std::fs::File::open(dir.join("inputs.npz")).expect("inputs");
    let arrays =
        hlo_eval::npy::read_npz_from(std::io::BufReader::new(file), 1 << 30).expect("reads");
    let entry = module.entry();
    (0..entry.parameters().len())
        .map(|i| {
            let a = arrays
                .iter()
                .find(|(k, _)| *k == format!("in{i}"))
                .map(|(_, a)| a.clone())
                .expect("in<i>");
            let shape = entry.instr(entry.parameters()[i]).shape();
            Literal::Array(hlo_eval::npy::adapt_to(a, shape, "input").expect("input"))
        })
        .collect()
}

#[test]
fn corpus_programs_with_split_parameters_equal_the_global_evaluation() {
    let mut failures = Vec::new();
    let mut count = 0;
    for dir in programs() {
        let text = std::fs::read_to_string(dir.join("before_optimizations.hlo")).expect("read");
        let module = hlo::parse_module(&text).expect("parses");
        let args = inputs(&dir, &module);
        let largest = |d: &[i64]| (0..d.len()).max_by_key(|&i| (d[i], i)).unwrap_or(0);
        for (devices, m) in [
            (4, split_parameters(&module, 4, largest)),
            (8, split_parameters(&module, 8, |_| 0)),
        ] {
            count += 1;
            if let Err(e) = check_module(&m, devices, &args) {
                let first: String = e.lines().next().unwrap_or("").chars().take(300).collect();
                failures.push(format!("{} on {devices} devices: {first}", dir.display()));
            }
        }
    }
    assert!(count >= 90, "only {count} corpus runs");
    assert!(
        failures.is_empty(),
        "{} of {count} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
