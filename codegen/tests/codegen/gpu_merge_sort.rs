//! Golden kernel IR of the GPU merge sort's passes (`tests/golden/gpu_merge_sort.test`):
//! each case's entry root (a sort whose rows exceed a block's shared memory) emitted for
//! the `h100` GPU target, its first and last merge pass, the launch and thread map in the
//! leading comment. Bless with `UPDATE_EXPECT=1`.

use std::path::Path;

use codegen::emit::{emit_gpu_merge_pass, gpu_merge_sort_passes};
use codegen::EmitTarget;

fn passes(input: &str) -> Result<String, String> {
    let m = hlo::parse_module(input).map_err(|e| e.to_string())?;
    let target = EmitTarget::gpu(device::load("h100").map_err(|e| e.to_string())?);
    let comp = m.entry_id();
    let id = m.computation(comp).root();
    let Some(n) = gpu_merge_sort_passes(&m, &target, comp, id) else {
        return Ok("no GPU merge sort".into());
    };
    let mut out = format!("{n} passes");
    for pass in [0, n - 1] {
        let e = emit_gpu_merge_pass(&m, &target, comp, id, pass, "k").map_err(|e| e.to_string())?;
        out.push('\n');
        out.push_str(codegen::kir::kernel_text(&e.kernel).trim_end());
    }
    Ok(out)
}

#[test]
fn gpu_merge_sort_passes_match_golden_text() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gpu_merge_sort.test");
    testkit::golden::check_file(&path, |case| {
        passes(&case.input).unwrap_or_else(|e| format!("error: {e}"))
    });
}
