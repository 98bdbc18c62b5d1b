//! Differential test of the in-place dynamic-update-slice on the GPU emitters: the random
//! updates of `random_dynamic` (ranks 1 to 3, random layouts, start indices of several
//! integer types leaving the operand on either side, the base dying at the update or read
//! again after it) run on `--backend cuda-host` against the reference evaluator, each
//! block's threads in reverse order giving the same bits. Each update kernel must be the
//! loop emitter's over the update's elements (a thread map, no block of the CPU emitter
//! run as a thread).

use runtime::CompileOptions;

use crate::gen;

#[test]
fn random_dynamic_update_slices_on_the_cuda_host_match_the_reference_in_both_orders() {
    let options = CompileOptions {
        cuda_host: true,
        ..gen::options("hloc-cache-gpu-in-place")
    };
    let gpu = CompileOptions {
        gpu: Some("h200".into()),
        ..CompileOptions::default()
    };
    let mut failures = Vec::new();
    let (mut ran, mut emitted) = (0, 0);
    // Seeds divisible by 3 draw a select-and-scatter instead.
    for seed in gen::seeds(0..48).filter(|s| !s.is_multiple_of(3)) {
        let Some(text) = crate::random_dynamic::module(seed) else {
            continue;
        };
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        let result = (|| -> Result<(), String> {
            let plan = runtime::plan(&m, &gpu).map_err(|e| e.to_string())?;
            // (An update of the whole operand may be simplified away.)
            let updates: Vec<&String> = plan
                .program
                .kernels
                .iter()
                .filter_map(|k| match k.body.first() {
                    Some(codegen::kir::Stmt::Comment(c))
                        if c.starts_with("dynamic-update-slice") =>
                    {
                        Some(c)
                    }
                    _ => None,
                })
                .collect();
            if updates.iter().any(|c| !c.contains("\nloop emitter: ")) {
                return Err(format!("an update is no loop emitter kernel: {updates:?}"));
            }
            emitted += usize::from(!updates.is_empty());
            let exe = runtime::compile(&m, &options).map_err(|e| e.to_string())?;
            std::env::set_var("HLOC_CUDA_HOST_ORDER", "forward");
            let forward = exe.run(&args).map_err(|e| e.to_string());
            std::env::set_var("HLOC_CUDA_HOST_ORDER", "reverse");
            let reverse = exe.run(&args).map_err(|e| format!("reverse run: {e}"));
            std::env::remove_var("HLOC_CUDA_HOST_ORDER");
            let forward = forward?;
            runtime::check_reference(&m, &args, &forward)?;
            if format!("{:?}", reverse?) != format!("{forward:?}") {
                return Err("the threads' order changes the outputs".into());
            }
            Ok(())
        })();
        ran += 1;
        if let Err(e) = result {
            failures.push(format!("seed {seed}: {e}\n{text}"));
        }
    }
    gen::assert_none(&failures);
    assert!(
        ran >= 24 && emitted >= 16,
        "{ran} ran, {emitted} updates emitted"
    );
}
