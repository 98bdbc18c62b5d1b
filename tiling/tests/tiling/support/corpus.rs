//! The corpus's fusions, for the tests that run over all of them.

/// Calls `visit` with every fusion instruction of every corpus program's optimized module
/// (after XLA's optimizations: those hold the fusions) and a `program: fusion` label.
pub fn for_each_fusion(mut visit: impl FnMut(&hlo::InstrRef<'_>, &str)) {
    for program in testkit::corpus::programs() {
        let path = program.after();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let module = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        for (comp_id, comp) in module.computations() {
            for (id, instr) in comp.instructions() {
                if instr.opcode() != hlo::Opcode::Fusion {
                    continue;
                }
                let handle = module.instr_ref(comp_id, id).expect("instruction");
                visit(&handle, &format!("{}: {}", program.name, instr.name()));
            }
        }
    }
}
