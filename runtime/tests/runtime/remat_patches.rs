//! Patch matrices built again before their last reader (`plan::memory::remat`): a
//! convolution and its weight gradient read one im2col patch matrix of `x` (conv-to-gemm
//! makes both GEMMs over it); the patches are built a second time right before the
//! weight-gradient GEMM instead of kept live across the work between, and the outputs
//! still match the reference evaluator.

use super::differential::random_args;

/// A convolution, an elementwise op of its result, and the weight gradient of the
/// convolution (as JAX writes it: `x` against the cotangent, window the image).
const STEP: &str = r#"HloModule wgrad
ENTRY e {
  x = f32[2,8,8,4]{3,2,1,0} parameter(0)
  w = f32[3,3,4,8]{3,2,1,0} parameter(1)
  c = f32[2,8,8,8]{3,2,1,0} convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  t = f32[2,8,8,8]{3,2,1,0} tanh(c)
  g = f32[3,3,4,8]{3,2,1,0} convolution(x, t), window={size=8x8 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
  ROOT r = (f32[2,8,8,8]{3,2,1,0}, f32[3,3,4,8]{3,2,1,0}) tuple(t, g)
}
"#;

#[test]
fn patches_built_again_for_the_weight_gradient_match_the_evaluator() {
    let m = hlo::parse_module(STEP).expect("parse");
    let exe = runtime::compile(&m, &crate::gen::options("remat-patches")).expect("compile");
    let thunks = plan::thunks_text(&exe.plan().program);
    assert!(
        thunks.contains(".again"),
        "no patches built again:\n{thunks}"
    );
    for seed in 0..3 {
        let args = random_args(&m, seed);
        let outs = exe.run(&args).expect("run");
        runtime::check_reference(&m, &args, &outs).unwrap_or_else(|e| panic!("{e}\n{thunks}"));
    }
}
