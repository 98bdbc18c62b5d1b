//! Differential test of the GPU select-and-scatter emitter on the CUDA host emulation: the
//! random select-and-scatters of `random_select_scatter` (ranks 1 to 4, random layouts,
//! windows that tile the operand (a thread per window), windows that leave gaps (a thread
//! per operand element) and windows that overlap (two launches: the chosen taps, then a
//! thread per operand element over them), paddings, `GE`,
//! `GT`, `LE` and `LT` selects with and without the total order, inputs full of ties, NaNs,
//! infinities and signed zeros, a scatter computation that does not commute, an init that
//! is a constant or a parameter) compiled for the GPU emitters, run on `--backend
//! cuda-host` against the reference evaluator, and each block's threads in reverse order
//! giving the same bits. Each must take the GPU emitter (a thread map, no library call),
//! and NVRTC compiles the GPU plan's kernels for sm_90 without spills where it is present.
//! Deterministic: a failure prints the module.

use runtime::CompileOptions;

use crate::gen;
use crate::random_sorts::bits;

/// Compiles `text` for the CUDA host, checks the GPU plan's kernels took a GPU
/// select-and-scatter emitter, and runs them in both thread orders against the
/// evaluator; the (first) kernel's launch line. `None` (not run) for a thread per window
/// when `enough_tiled` (those compile as many host kernels as the rarer forms otherwise).
fn check(
    seed: u64,
    text: &str,
    args: &[hlo::Literal],
    options: &CompileOptions,
    enough_tiled: bool,
) -> Result<Option<String>, String> {
    let m = gen::parse(seed, text);
    let titles = crate::gpu_sorts::gpu_kernel_titles(&m)?;
    let Some(line) = titles.lines().find(|l| {
        l.starts_with("select-and-scatter (a thread per")
            || l.starts_with("select-and-scatter (two launches, 1 of 2")
    }) else {
        return Err(format!("no GPU select-and-scatter kernel:\n{titles}"));
    };
    let line = line.to_string();
    if enough_tiled && line.contains("(a thread per window)") {
        return Ok(None);
    }
    if line.contains("two launches") && !titles.contains("(two launches, 2 of 2") {
        return Err(format!("no second launch:\n{titles}"));
    }
    let exe = runtime::compile(&m, options).map_err(|e| e.to_string())?;
    if exe.stats().library_calls != 0 {
        return Err("ran as a library call".into());
    }
    let mut runs = Vec::new();
    for order in ["forward", "reverse"] {
        std::env::set_var("HLOC_CUDA_HOST_ORDER", order);
        let outs = exe.run(args).map_err(|e| format!("{order} run: {e}"));
        std::env::remove_var("HLOC_CUDA_HOST_ORDER");
        let outs = outs?;
        runtime::check_reference(&m, args, &outs).map_err(|e| format!("{order}: {e}"))?;
        runs.push(outs.iter().flat_map(bits).collect::<Vec<_>>());
    }
    if runs[0] != runs[1] {
        return Err("the threads' order changes the outputs' bits".into());
    }
    Ok(Some(line))
}

#[test]
fn random_select_and_scatters_on_the_cuda_host_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-select-scatter")
    };
    let mut failures = Vec::new();
    let (mut windows, mut elements, mut two) = (0, 0, 0);
    for seed in gen::seeds(0..60) {
        let Some((text, args)) = crate::random_select_scatter::module(seed) else {
            continue;
        };
        match check(seed, &text, &args, &options, windows >= 12) {
            Ok(None) => {}
            Ok(Some(line)) => {
                windows += usize::from(line.contains("(a thread per window)"));
                elements += usize::from(line.contains("(a thread per operand element)"));
                two += usize::from(line.contains("(two launches, 1 of 2"));
            }
            Err(e) => failures.push(format!("seed {seed}: {e}\n{text}")),
        }
    }
    gen::assert_none(&failures);
    assert!(
        windows >= 10 && elements >= 3 && two >= 10,
        "{windows} thread-per-window, {elements} thread-per-element and {two} two-launch \
         select-and-scatters"
    );
}
