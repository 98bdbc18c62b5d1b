//! XLA's partitioned modules of `corpus/spmd` (tools/spmd_corpus.py: JAX programs on 4
//! forced host devices, XLA:CPU's per-device modules after its SPMD partitioner) compiled
//! once and run on their devices in this process: every device's every output must match
//! XLA's recorded one and the N-device reference evaluator's.

use std::path::{Path, PathBuf};

use hlo::Literal;
use hlo_eval::npy::{adapt_to, read_npz};
use hlo_eval::report::compare_report;

fn spmd_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/spmd")
}

/// The partitioned modules (`NAME.hlo`; `NAME.before.hlo` is the unpartitioned one).
fn partitioned_modules() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(spmd_dir())
        .expect("corpus/spmd")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.ends_with(".hlo") && !name.ends_with(".before.hlo")
        })
        .collect();
    v.sort();
    v
}

#[test]
fn xla_partitioned_modules_run_on_their_devices() {
    let modules = partitioned_modules();
    assert!(
        modules.len() >= 3,
        "corpus/spmd has {} modules",
        modules.len()
    );
    let options = crate::gen::options("spmd");
    let mut failures = Vec::new();
    for path in &modules {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).expect("module");
        let module = hlo::parse_module(&text).expect("parses");
        let grid = runtime::device_grid(&module, None).unwrap_err();
        assert!(grid.contains("--devices"), "{name}: {grid}");
        let grid = plan::Grid::of_module(&module);
        let n = grid.count() as usize;
        let arrays =
            read_npz(&std::fs::read(path.with_extension("npz")).expect("npz")).expect("npz");
        let array = |key: &str| {
            arrays
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, a)| a.clone())
                .unwrap_or_else(|| panic!("{name}: no {key}"))
        };
        let entry = module.entry();
        let args: Vec<Vec<Literal>> = (0..n)
            .map(|k| {
                (0..entry.parameters().len())
                    .map(|i| {
                        let shape = entry.instr(entry.parameter(i).expect("parameter")).shape();
                        let key = format!("in{i}.dev{k}");
                        Literal::Array(adapt_to(array(&key), shape, &key).expect("adapt"))
                    })
                    .collect()
            })
            .collect();
        let exe = runtime::compile(&module, &options).expect("compiles");
        let program = plan::thunks_text(&exe.plan().program);
        assert!(
            program.contains("all-") || program.contains("collective-"),
            "{name}: no collective step in\n{program}"
        );
        let outputs =
            runtime::run_on_devices(&exe, grid, &args, std::time::Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        for (k, outs) in outputs.iter().enumerate() {
            for (i, got) in outs.iter().enumerate() {
                let key = format!("out{i}.dev{k}");
                let r = compare_report(got.as_array().expect("array"), &array(&key), None);
                if !r.matches {
                    failures.push(format!("{name}: {}", r.line(&key, "", "XLA")));
                }
            }
        }
        let reports = runtime::reference_reports_on_devices(&module, grid, &args, &outputs)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for (k, device) in reports.iter().enumerate() {
            for (i, r) in device.iter().enumerate() {
                if !r.matches {
                    failures.push(format!(
                        "{name}: {}",
                        r.line(&format!("out{i}.dev{k}"), "", "reference")
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
