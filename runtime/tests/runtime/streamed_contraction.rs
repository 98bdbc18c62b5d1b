//! GEMMs streamed over their contraction (issue 32): a convolution's weight gradient
//! multiplies the output gradient by the input's im2col patches summed over every batch
//! element and position, the patches as the GEMM's `[k, n]` rhs; streamed, each block of
//! patch rows adds its product into the result (one accumulator per scratch slot, added
//! at the end). Checked against the reference evaluator for several slot counts (threads),
//! including ones that do not divide the blocks, and for an lhs stored `k`-major.

use std::path::Path;

use runtime::CompileOptions;

use super::differential::random_args;

/// A 3x3 convolution's weight gradient as JAX writes it (`jax.grad` of
/// `sum(tanh(conv(x, w)))` with respect to `w`): the patches of `x` over `k` = 2 x 32 x 32.
const WEIGHT_GRADIENT: &str = r#"HloModule wgrad
ENTRY main.1 {
  x.1 = f32[2,32,32,8]{3,2,1,0} parameter(1)
  constant.1 = f32[] constant(1)
  sub.2 = f32[2,32,32,16]{3,2,1,0} broadcast(constant.1), dimensions={}
  w.1 = f32[3,3,8,16]{3,2,1,0} parameter(0)
  conv.2 = f32[2,32,32,16]{3,2,1,0} convolution(x.1, w.1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  tanh.1 = f32[2,32,32,16]{3,2,1,0} tanh(conv.2)
  sub.3 = f32[2,32,32,16]{3,2,1,0} subtract(sub.2, tanh.1)
  mul.1 = f32[2,32,32,16]{3,2,1,0} multiply(sub.3, tanh.1)
  add.1 = f32[2,32,32,16]{3,2,1,0} add(sub.3, mul.1)
  ROOT conv.3 = f32[3,3,8,16]{3,2,1,0} convolution(x.1, add.1), window={size=32x32 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
}
"#;

/// A product whose lhs a kernel writes `k`-major (contracted over its two leading
/// dimensions, 32 rows of `k` per block of the kernel).
const LHS_K_MAJOR: &str = r#"HloModule kmajor
ENTRY e {
  a = f32[32,32,24]{2,1,0} parameter(0)
  b = f32[32,32,40]{2,1,0} parameter(1)
  t = f32[32,32,24]{2,1,0} exponential(a)
  ROOT d = f32[24,40]{1,0} dot(t, b), lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}
}
"#;

/// The same product with one row of `k` per block: thin blocks stay whole.
const THIN_BLOCKS: &str = r#"HloModule thin
ENTRY e {
  a = f32[1024,24]{1,0} parameter(0)
  b = f32[1024,40]{1,0} parameter(1)
  t = f32[1024,24]{1,0} exponential(a)
  ROOT d = f32[24,40]{1,0} dot(t, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
"#;

fn options(threads: usize, stream_min_bytes: u64) -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("streamed_contraction")),
        threads: Some(threads),
        stream_min_bytes: Some(stream_min_bytes),
        ..CompileOptions::default()
    }
}

/// Compiles `text` with `options`; returns its thunk listing, after checking the result
/// against the evaluator on two inputs.
fn run(text: &str, options: &CompileOptions) -> String {
    let m = hlo::parse_module(text).expect("parse");
    let exe = runtime::compile(&m, options).expect("compile");
    let thunks = plan::thunks_text(&exe.plan().program);
    for seed in 0..2 {
        let args = random_args(&m, seed);
        let outs = exe.run(&args).expect("run");
        runtime::check_reference(&m, &args, &outs).unwrap_or_else(|e| panic!("{e}\n{thunks}"));
    }
    thunks
}

#[test]
fn weight_gradient_streams_its_patches_over_the_contraction() {
    for threads in [1, 2, 3, 5] {
        let thunks = run(WEIGHT_GRADIENT, &options(threads, 0));
        assert!(
            thunks.contains("streamed gemm over the contraction: "),
            "threads {threads}: not streamed\n{thunks}"
        );
    }
}

#[test]
fn an_lhs_written_along_k_streams_too() {
    for threads in [1, 3] {
        let thunks = run(LHS_K_MAJOR, &options(threads, 0));
        assert!(
            thunks.contains("streamed gemm over the contraction: "),
            "threads {threads}: not streamed\n{thunks}"
        );
    }
}

#[test]
fn blocks_of_few_rows_along_k_stay_whole() {
    let thunks = run(THIN_BLOCKS, &options(2, 0));
    assert!(thunks.contains("blocks=1024"), "{thunks}");
    assert!(!thunks.contains("streamed gemm"), "{thunks}");
}

#[test]
fn small_patches_stay_whole_under_the_default_threshold() {
    let thunks = run(WEIGHT_GRADIENT, &options(2, plan::stream::STREAM_MIN_BYTES));
    assert!(!thunks.contains("streamed gemm"), "{thunks}");
}
