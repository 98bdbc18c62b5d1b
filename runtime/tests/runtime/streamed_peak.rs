//! GEMM operands under the streaming threshold stream where they are live at the
//! program's peak (`plan::stream_peak`, issue 32), with the default options: a 1.2 MB
//! patch matrix that is most of the temporaries streams, and its results match the
//! reference evaluator's in less temp than built whole; the same patches beside a larger
//! temporary elsewhere stay whole.

use std::path::Path;

use runtime::CompileOptions;

use super::differential::random_args;

/// A 3x3 NHWC convolution whose patches (2048 x 144 f32, 1.2 MB) are the peak.
const CONV: &str = r#"HloModule conv
ENTRY e {
  x = f32[2,32,32,16]{3,2,1,0} parameter(0)
  w = f32[3,3,16,32]{3,2,1,0} parameter(1)
  c = f32[2,32,32,32]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  ROOT t = f32[2,32,32,32]{3,2,1,0} tanh(c)
}
"#;

/// The same convolution, and a 4 MiB GEMM result elsewhere: the peak.
const CONV_AND_LARGER: &str = r#"HloModule conv_and_larger
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[2,32,32,16]{3,2,1,0} parameter(0)
  w = f32[3,3,16,32]{3,2,1,0} parameter(1)
  p = f32[32,32]{1,0} parameter(2)
  q = f32[32,32768]{1,0} parameter(3)
  c = f32[2,32,32,32]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  t = f32[2,32,32,32]{3,2,1,0} tanh(c)
  d = f32[32,32768]{1,0} dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  r = f32[32]{0} reduce(d, zero), dimensions={1}, to_apply=add
  ROOT o = (f32[2,32,32,32]{3,2,1,0}, f32[32]{0}) tuple(t, r)
}
"#;

fn options(stream_min_bytes: Option<u64>) -> CompileOptions {
    CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("streamed-peak")),
        threads: Some(2),
        stream_min_bytes,
        ..CompileOptions::default()
    }
}

/// Compiles `text` with `options`, checks one run against the evaluator; returns the
/// thunks text and the temp bytes.
fn run(text: &str, options: &CompileOptions) -> (String, u64) {
    let m = hlo::parse_module(text).expect("parse");
    let exe = runtime::compile(&m, options).expect("compile");
    let thunks = plan::thunks_text(&exe.plan().program);
    let args = random_args(&m, 7);
    let outs = exe.run(&args).expect("run");
    runtime::check_reference(&m, &args, &outs).unwrap_or_else(|e| panic!("{e}\n{thunks}"));
    (thunks, exe.plan().program.temp_bytes())
}

#[test]
fn patches_at_the_peak_stream_under_the_threshold() {
    let (thunks, streamed) = run(CONV, &options(None));
    assert!(thunks.contains("streamed gemm"), "not streamed:\n{thunks}");
    let (whole_thunks, whole) = run(CONV, &options(Some(u64::MAX)));
    assert!(!whole_thunks.contains("streamed gemm"), "{whole_thunks}");
    assert!(streamed < whole, "temp {streamed} streamed, {whole} whole");
}

#[test]
fn patches_below_a_larger_peak_stay_whole() {
    let (thunks, _) = run(CONV_AND_LARGER, &options(None));
    assert!(!thunks.contains("streamed gemm"), "streamed:\n{thunks}");
}
