//! Differential test: every corpus program (before and after XLA's optimizations) is
//! compiled for the CPU and run on its recorded inputs; the outputs must match the
//! reference evaluator's within the one documented tolerance. Programs using an op no
//! emitter supports yet must fail with `Unsupported` and are listed with a count; the
//! number compiled may only grow (`MIN_COMPILED`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hlo::Literal;
use hlo_eval::npy::{adapt_to, read_npz};
use runtime::{CompileOptions, RuntimeError};

/// Corpus files that compile and match today; raise it as emitters are added.
const MIN_COMPILED: usize = 102;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus")
}

/// The corpus programs' directories (those with recorded inputs), sorted.
pub(crate) fn program_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus())
        .expect("corpus")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("inputs.npz").exists())
        .collect();
    dirs.sort();
    dirs
}

pub(crate) fn inputs(module: &hlo::Module, dir: &Path) -> Vec<Literal> {
    let bytes = std::fs::read(dir.join("inputs.npz")).expect("inputs.npz");
    let arrays = read_npz(&bytes).expect("valid npz");
    let entry = module.entry();
    (0..entry.parameters().len())
        .map(|n| {
            let id = entry.parameter(n).expect("parameter");
            let shape = entry.instr(id).shape();
            let (_, a) = arrays
                .iter()
                .find(|(k, _)| *k == format!("in{n}"))
                .unwrap_or_else(|| panic!("{}: no in{n}", dir.display()));
            Literal::Array(adapt_to(a.clone(), shape, &format!("in{n}")).expect("adapt"))
        })
        .collect()
}

#[test]
fn corpus_programs_match_the_reference_evaluator() {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache")),
        ..CompileOptions::default()
    };
    let dirs = program_dirs();
    let only = std::env::var("HLOC_CORPUS_ONLY").ok();
    let (mut total, mut compiled) = (0, 0);
    let mut unsupported: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut failures = Vec::new();
    for dir in &dirs {
        for file in ["before_optimizations.hlo", "after_optimizations.hlo"] {
            let name = format!(
                "{}/{file}",
                dir.file_name().unwrap_or_default().to_string_lossy()
            );
            if only.as_deref().is_some_and(|o| !name.contains(o)) {
                continue;
            }
            total += 1;
            let text = std::fs::read_to_string(dir.join(file)).expect("read");
            let module = hlo::parse_module(&text).expect("parse");
            let args = inputs(&module, dir);
            let exe = match runtime::compile(&module, &options) {
                Ok(e) => e,
                Err(RuntimeError::Codegen(e)) if e.unsupported_op().is_some() => {
                    let op = e.unsupported_op().unwrap_or_default().to_string();
                    if only.is_some() {
                        println!("{name}: {e}");
                    }
                    unsupported.entry(op).or_default().push(name);
                    continue;
                }
                Err(e) => {
                    failures.push(format!("{name}: {e}"));
                    continue;
                }
            };
            let outs = match exe.run(&args) {
                Ok(o) => o,
                Err(e) => {
                    failures.push(format!("{name}: run: {e}"));
                    continue;
                }
            };
            if let Err(e) = runtime::check_reference(&module, &args, &outs) {
                failures.push(format!("{name}: {e}"));
                continue;
            }
            // A second run reuses the first run's temporaries (poisoned in debug builds):
            // it must give the same values (NaN included, hence the printed form), so no
            // kernel reads memory it did not write.
            match exe.run(&args) {
                Ok(again) if format!("{again:?}") == format!("{outs:?}") => compiled += 1,
                Ok(_) => failures.push(format!("{name}: a second run gives other outputs")),
                Err(e) => failures.push(format!("{name}: second run: {e}")),
            }
        }
    }
    println!("compiled {compiled} of {total} corpus files");
    for (op, files) in &unsupported {
        println!(
            "unsupported `{op}`: {} file(s): {}",
            files.len(),
            files.join(", ")
        );
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    if only.is_none() {
        assert!(
            compiled >= MIN_COMPILED,
            "only {compiled} compiled, expected at least {MIN_COMPILED}"
        );
    }
}

/// Every corpus program, after the default passes fused for the `h100` (multi-output
/// fusions whose outputs differ in shape, reductions beside elementwise outputs), compiles
/// for the CPU as fused and matches the reference evaluator on the original module.
#[test]
fn corpus_programs_fused_for_the_h100_run_on_the_cpu() {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache")),
        run_passes: false,
        fuse: false,
        ..CompileOptions::default()
    };
    let h100 = device::load("h100").expect("h100 description");
    let dirs = program_dirs();
    let (mut several_shapes, mut failures) = (0, Vec::new());
    for dir in &dirs {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(dir.join("before_optimizations.hlo")).expect("read");
        let original = hlo::parse_module(&text).expect("parse");
        let mut fused = original.clone();
        let mut ctx = hlo::pass::PassContext::new();
        let mut passes = hlo_transforms::default_pipeline();
        if let Err(e) = hlo::pass::Pass::run_in(&mut passes, &mut fused, &mut ctx) {
            failures.push(format!("{name}: passes: {e}"));
            continue;
        }
        if let Err(e) = fusion::fuse(&mut fused, &h100) {
            failures.push(format!("{name}: fuse: {e}"));
            continue;
        }
        let args = inputs(&original, dir);
        let result = runtime::compile(&fused, &options).and_then(|exe| {
            several_shapes += exe
                .plan()
                .source
                .matches("output shapes, one loop nest each")
                .count();
            exe.run(&args)
        });
        match result {
            Ok(outs) => {
                if let Err(e) = runtime::check_reference(&original, &args, &outs) {
                    failures.push(format!("{name}: {e}"));
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        several_shapes > 0,
        "no fusion with outputs of several shapes"
    );
}
