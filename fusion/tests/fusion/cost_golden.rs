//! Text tests of generated kernels' prices as `hloc run --profile` predicts them: each
//! `tests/kernels/*.test` case is a module whose ENTRY computation (parameters aside) is one
//! kernel with the root as its output, and the expected text is
//! [`fusion::cost::CostModel::for_prediction`]'s price of it on the shipped `cpu`
//! description: flops, compute, memory and work microseconds, then the work as the runtime
//! runs it ([`fusion::cost::CostModel::work_as_run`]) split over the cores or on the calling
//! thread, each called once or by a loop. Bless with `UPDATE_EXPECT=1`.

use std::path::Path;

use fusion::cost::{CompInfo, CostModel, Run};

fn run_case(case: &testkit::golden::Case) -> String {
    let m = match hlo::parse_module(&case.input) {
        Ok(m) => m,
        Err(e) => panic!("line {}: input does not parse: {e}", case.line),
    };
    let cpu = device::load("cpu").unwrap();
    let rules = fusion::EmitterRules::xla_cpu();
    let model = CostModel::for_prediction(&cpu, &rules);
    let entry = m.entry();
    let members: Vec<hlo::InstrId> = entry
        .instructions()
        .filter(|(_, i)| i.opcode() != hlo::Opcode::Parameter)
        .map(|(id, _)| id)
        .collect();
    let info = CompInfo::new(&m, m.entry_id());
    let c = model.kernel(&info, &members, &[entry.root()]);
    let us = |s: f64| format!("{:.3}", s * 1e6);
    let run = |one_thread, warm| us(model.work_as_run(&c, Run { one_thread, warm }));
    format!(
        "flops {:.4e}  compute {} us  memory {} us  work {} us\n\
         split {} us  one thread {} us  split in a loop {} us  one thread in a loop {} us",
        c.flops,
        us(c.compute_s),
        us(c.memory_s),
        us(c.time_s - c.launch_s),
        run(false, false),
        run(true, false),
        run(false, true),
        run(true, true),
    )
}

#[test]
fn kernel_price_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels");
    let files = testkit::golden::files(&dir, "test");
    assert!(!files.is_empty());
    for f in files {
        testkit::golden::check_file(&f, run_case);
    }
}
