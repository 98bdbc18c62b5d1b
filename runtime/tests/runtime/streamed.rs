//! GEMMs streamed from the kernel producing their left-hand side (im2col patches of a
//! convolution): with the size threshold lowered, small convolutions stream, and their
//! results match the reference evaluator's whatever the number of scratch slots (threads),
//! including slot counts that do not divide the blocks.

use std::path::Path;

use runtime::CompileOptions;

use super::differential::random_args;

/// A 3x3 NHWC convolution (conv-to-gemm makes it patches and one GEMM).
const CONV: &str = r#"HloModule conv
ENTRY e {
  x = f32[2,12,10,8]{3,2,1,0} parameter(0)
  w = f32[3,3,8,16]{3,2,1,0} parameter(1)
  ROOT c = f32[2,12,10,16]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
"#;

fn options(threads: usize, stream_min_bytes: u64) -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("streamed")),
        threads: Some(threads),
        stream_min_bytes: Some(stream_min_bytes),
        ..CompileOptions::default()
    }
}

/// Compiles `CONV` with `options`; returns whether it streamed, after checking the
/// result against the evaluator.
fn run(options: &CompileOptions) -> bool {
    let m = hlo::parse_module(CONV).expect("parse");
    let exe = runtime::compile(&m, options).expect("compile");
    let thunks = plan::thunks_text(&exe.plan().program);
    for seed in 0..3 {
        let args = random_args(&m, seed);
        let outs = exe.run(&args).expect("run");
        runtime::check_reference(&m, &args, &outs).unwrap_or_else(|e| panic!("{e}\n{thunks}"));
    }
    thunks.contains("streamed gemm")
}

#[test]
fn streamed_convolution_matches_the_evaluator_for_any_slot_count() {
    for threads in [1, 2, 3, 5] {
        assert!(run(&options(threads, 0)), "threads {threads}: not streamed");
    }
}

#[test]
fn small_patches_stay_whole_under_the_default_threshold() {
    assert!(!run(&options(2, plan::stream::STREAM_MIN_BYTES)));
}
