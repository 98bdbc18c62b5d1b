//! Text tests of library calls' prices: each `tests/library/*.test` case is a module whose
//! ENTRY root runs as one library call (a dot, a LAPACK custom call, a sort, a top-k, an
//! FFT), and the expected line is [`fusion::cost::CostModel::library_call`]'s price of it on
//! the shipped `cpu` description: flops, compute, memory and total microseconds. A
//! `# tiles: no` header prices it for a CPU without AMX tiles (bf16 widened, s8 on the
//! packed kernel), `# tiles: registers` for one without AMX but with AVX512-BF16 (bf16 on
//! register tiles), as `hloc run --profile` does there. A root the model does not price as
//! a library call prints `none`. Bless with `UPDATE_EXPECT=1`.

use std::path::Path;

fn run_case(case: &testkit::golden::Case) -> String {
    let m = match hlo::parse_module(&case.input) {
        Ok(m) => m,
        Err(e) => panic!("line {}: input does not parse: {e}", case.line),
    };
    let mut cpu = device::load("cpu").unwrap();
    if let Some(tiles @ ("no" | "registers")) = case.header_value("tiles") {
        let l = cpu.library.as_mut().unwrap();
        l.half_on_tiles = false;
        l.s8_on_tiles = false;
        l.half_on_registers = tiles == "registers";
    }
    let rules = fusion::EmitterRules::xla_cpu();
    let model = fusion::cost::CostModel::for_prediction(&cpu, &rules);
    match model.library_call(&m, m.entry_id(), m.entry().root()) {
        Some(c) => format!(
            "flops {:.4e}  compute {:.3} us  memory {:.3} us  time {:.3} us",
            c.flops,
            c.compute_s * 1e6,
            c.memory_s * 1e6,
            c.time_s * 1e6
        ),
        None => "none".to_string(),
    }
}

#[test]
fn library_price_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/library");
    let files = testkit::golden::files(&dir, "test");
    assert!(!files.is_empty());
    for f in files {
        testkit::golden::check_file(&f, run_case);
    }
}
