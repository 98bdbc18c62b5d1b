//! Golden text test of the C printer (testkit's format): each case is an HLO module and,
//! after `----`, the C of every kernel of its entry computation
//! (`tests/golden/c.test`). Bless with `UPDATE_EXPECT=1`.

use testkit::golden;

use std::path::Path;

#[test]
fn kernel_c() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/c.test");
    golden::check_file(&path, |case| {
        let program = hlo::parse_module(&case.input)
            .map_err(|e| e.to_string())
            .and_then(|m| plan::build_program(&m).map_err(|e| e.to_string()));
        match program {
            Ok(p) => p
                .kernels
                .iter()
                .map(backend_cpu::c::kernel_c)
                .collect::<String>()
                .trim_end()
                .to_string(),
            Err(e) => format!("error: {e}"),
        }
    });
}
