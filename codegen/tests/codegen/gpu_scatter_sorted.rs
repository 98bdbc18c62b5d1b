//! Golden kernel IR of the sorted form of the GPU scatter
//! (`tests/golden/gpu_scatter_sorted.test`): each case's entry root for the `h100` GPU
//! target, its keys kernel, group pass, first merge pass and apply kernel (the other
//! passes differ from the first in the run width only). Bless with `UPDATE_EXPECT=1`.

use std::path::Path;

use codegen::emit::{emit_sorted_scatter_kernel, gpu_sorted_scatter};
use codegen::EmitTarget;

fn kernels(input: &str) -> Result<String, String> {
    let m = hlo::parse_module(input).map_err(|e| e.to_string())?;
    let target = EmitTarget::gpu(device::load("h100").map_err(|e| e.to_string())?);
    let comp = m.entry_id();
    let id = m.computation(comp).root();
    let ss = gpu_sorted_scatter(&m, &target, comp, id).ok_or("not the sorted form")?;
    let mut texts = Vec::new();
    for k in [0, 1, 2, ss.launches() - 1] {
        let e = emit_sorted_scatter_kernel(&m, &target, comp, id, k, &format!("k{k}"))
            .map_err(|e| e.to_string())?;
        texts.push(codegen::kir::kernel_text(&e.kernel).trim_end().to_string());
    }
    Ok(texts.join("\n\n"))
}

#[test]
fn gpu_sorted_scatter_kernels_match_golden_text() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gpu_scatter_sorted.test");
    testkit::golden::check_file(&path, |case| {
        kernels(&case.input).unwrap_or_else(|e| format!("error: {e}"))
    });
}
