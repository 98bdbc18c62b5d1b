//! The differential check the shape-focused tests share: compile a module, run it on random
//! inputs, compare every output with the reference evaluator's.

use std::path::Path;

use hlo::Literal;
use runtime::CompileOptions;

/// Random inputs for every entry parameter of `m` (deterministic per `seed`).
pub fn random_args(m: &hlo::Module, seed: u64) -> Vec<Literal> {
    let entry = m.entry();
    (0..entry.parameters().len())
        .map(|n| {
            let id = entry.parameter(n).expect("parameter");
            hlo_eval::random::random_literal(entry.instr(id).shape(), seed, n as u64, 1 << 24)
                .expect("random input")
        })
        .collect()
}

/// Compiles module `text` (objects cached under `cache` in cargo's test directory), runs it
/// on random inputs and compares with the evaluator; `Err` holds the mismatch and the
/// module.
pub fn compiled_matches(text: &str, cache: &str, seed: u64) -> Result<(), String> {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join(cache)),
        ..CompileOptions::default()
    };
    let m = hlo::parse_module(text).map_err(|e| format!("{e}\n{text}"))?;
    let args = random_args(&m, seed);
    runtime::compile(&m, &options)
        .map_err(|e| e.to_string())
        .and_then(|exe| exe.run(&args).map_err(|e| e.to_string()))
        .and_then(|outs| runtime::check_reference(&m, &args, &outs))
        .map_err(|e| format!("{e}\n{text}"))
}
