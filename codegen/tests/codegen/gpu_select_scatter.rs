//! Golden kernel IR of the GPU select-and-scatter emitter
//! (`tests/golden/gpu_select_scatter.test`): each case's entry root emitted for the `h100`
//! GPU target, its launch and thread map in the leading comment; both kernels where the
//! windows overlap (two launches). Bless with `UPDATE_EXPECT=1`.

use std::path::Path;

use codegen::emit::{emit_select_and_scatter, emit_select_scatter_pass, gpu_select_scatter_passes};
use codegen::EmitTarget;

fn kernel(input: &str) -> Result<String, String> {
    let m = hlo::parse_module(input).map_err(|e| e.to_string())?;
    let target = EmitTarget::gpu(device::load("h100").map_err(|e| e.to_string())?);
    let comp = m.entry_id();
    let id = m.computation(comp).root();
    let Some(passes) = gpu_select_scatter_passes(&m, &target, comp, id) else {
        let e = emit_select_and_scatter(&m, &target, comp, id, "k").map_err(|e| e.to_string())?;
        return Ok(codegen::kir::kernel_text(&e.kernel).trim_end().to_string());
    };
    let mut texts = Vec::new();
    for pass in 0..passes {
        let e = emit_select_scatter_pass(&m, &target, comp, id, pass, &format!("k{pass}"))
            .map_err(|e| e.to_string())?;
        texts.push(codegen::kir::kernel_text(&e.kernel).trim_end().to_string());
    }
    Ok(texts.join("\n\n"))
}

#[test]
fn gpu_select_and_scatter_kernels_match_golden_text() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gpu_select_scatter.test");
    testkit::golden::check_file(&path, |case| {
        kernel(&case.input).unwrap_or_else(|e| format!("error: {e}"))
    });
}
