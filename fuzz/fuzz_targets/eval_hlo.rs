//! Fuzzes the reference evaluator: a module that parses and verifies, run on random
//! inputs under small limits (1 MB of values, 1000 loop iterations), must give a result
//! or an error (never a panic, a hang or unbounded memory). The evaluator is every
//! test's oracle, so a panic here is a bug every differential test would hit.
#![no_main]

use libfuzzer_sys::fuzz_target;

/// Bytes of values one run may hold.
const SIZE_LIMIT: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(module) = hlo::parse_module(text) else {
        return;
    };
    if hlo::verifier::verify(&module).is_err() {
        return;
    }
    let entry = module.entry();
    let mut inputs = Vec::new();
    for n in 0..entry.parameters().len() {
        let Some(id) = entry.parameter(n) else {
            return;
        };
        match hlo_eval::random::random_literal(entry.instr(id).shape(), 1, n as u64, SIZE_LIMIT) {
            Ok(l) => inputs.push(l),
            Err(_) => return,
        }
    }
    let result = hlo_eval::Evaluator::new(&module)
        .with_while_limit(1000)
        .with_size_limit(SIZE_LIMIT)
        .run(&inputs);
    if let Err(e) = result {
        let _ = e.to_string();
    }
});
