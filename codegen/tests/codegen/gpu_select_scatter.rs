//! Golden kernel IR of the GPU select-and-scatter emitter
//! (`tests/golden/gpu_select_scatter.test`): each case's entry root emitted for the `h100`
//! GPU target, its launch and thread map in the leading comment. Bless with
//! `UPDATE_EXPECT=1`.

use std::path::Path;

use codegen::emit::emit_select_and_scatter;
use codegen::EmitTarget;

fn kernel(input: &str) -> Result<String, String> {
    let m = hlo::parse_module(input).map_err(|e| e.to_string())?;
    let target = EmitTarget::gpu(device::load("h100").map_err(|e| e.to_string())?);
    let comp = m.entry_id();
    let id = m.computation(comp).root();
    let e = emit_select_and_scatter(&m, &target, comp, id, "k").map_err(|e| e.to_string())?;
    Ok(codegen::kir::kernel_text(&e.kernel).trim_end().to_string())
}

#[test]
fn gpu_select_and_scatter_kernels_match_golden_text() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gpu_select_scatter.test");
    testkit::golden::check_file(&path, |case| {
        kernel(&case.input).unwrap_or_else(|e| format!("error: {e}"))
    });
}
