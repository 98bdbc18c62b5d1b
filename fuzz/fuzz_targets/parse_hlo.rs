//! Fuzzes the HLO parser: any input must give a module or an error (never a panic, a
//! hang or unbounded memory), and a module must print to text that parses back to the
//! same text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match hlo::parse_module(text) {
        Err(e) => {
            let _ = e.to_string();
        }
        Ok(module) => {
            // The verifier and the graph export must not panic on any parsed module.
            let _ = hlo::verifier::verify(&module);
            let _ = hlo::graph::to_json(&hlo::graph::Graph::of_module(&module));
            let printed = hlo::print_module(&module);
            let again = hlo::parse_module(&printed).expect("printed module must parse");
            assert_eq!(hlo::print_module(&again), printed, "print/parse must be a fixpoint");
        }
    }
});
