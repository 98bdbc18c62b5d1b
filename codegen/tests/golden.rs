//! Golden text tests of the emitters: each case is an HLO module and, after `----`, the
//! kernel IR (`tests/golden/kir.txt`), the C (`tests/golden/c.txt`) or the thunks and
//! buffer assignment (`tests/golden/thunks.txt`) of its entry computation. Bless with
//! `UPDATE_EXPECT=1`.

#[path = "../../affine/tests/support/golden.rs"]
mod golden;

use std::path::Path;

fn program(input: &str) -> Result<codegen::thunk::Program, String> {
    let m = hlo::parse_module(input).map_err(|e| e.to_string())?;
    codegen::thunk::build_program(&m).map_err(|e| e.to_string())
}

fn path(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

#[test]
fn kernel_ir() {
    golden::check_file(&path("kir.txt"), |case| match program(&case.input) {
        Ok(p) => p
            .kernels
            .iter()
            .map(codegen::kir::kernel_text)
            .collect::<String>()
            .trim_end()
            .to_string(),
        Err(e) => format!("error: {e}"),
    });
}

#[test]
fn kernel_c() {
    golden::check_file(&path("c.txt"), |case| match program(&case.input) {
        Ok(p) => p
            .kernels
            .iter()
            .map(codegen::c::kernel_c)
            .collect::<String>()
            .trim_end()
            .to_string(),
        Err(e) => format!("error: {e}"),
    });
}

#[test]
fn thunks_and_buffers() {
    golden::check_file(&path("thunks.txt"), |case| match program(&case.input) {
        Ok(p) => format!(
            "{}{}",
            codegen::thunk::thunks_text(&p),
            codegen::thunk::buffer_assignment_text(&p)
        )
        .trim_end()
        .to_string(),
        Err(e) => format!("error: {e}"),
    });
}
