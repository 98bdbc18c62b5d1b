//! What the compiler does where fusing would give a kernel code generation cannot take:
//! the fusion passes, asking the emitters before each fusion forms, leave that one
//! unformed, every other fusion forms, and the outputs match the reference evaluator.

use crate::gen;

/// A sine and cosine of a time embedding concatenated (a diffusion model's): the
/// concatenate's fusion would read the cosine under a guard its emitter does not take yet,
/// so the emitter refuses it before it forms. The exponential chain beside it fuses on its
/// own.
const MODULE: &str = "HloModule m
ENTRY e {
  t = f32[] parameter(0)
  x = f32[64,128] parameter(1)
  i = f32[32] iota(), iota_dimension=0
  tb = f32[32] broadcast(t), dimensions={}
  a = f32[32] multiply(tb, i)
  s = f32[32] sine(a)
  c = f32[32] cosine(a)
  cat = f32[64] concatenate(s, c), dimensions={0}
  b = f32[64,64] broadcast(cat), dimensions={1}
  n = f32[64,128] negate(x)
  ex = f32[64,128] exponential(n)
  y = f32[64,128] add(ex, x)
  r = f32[64,192] concatenate(x, b), dimensions={1}
  ROOT o = (f32[64,192], f32[64,128]) tuple(r, y)
}
";

#[test]
fn a_fusion_the_emitters_cannot_take_is_not_formed_and_the_others_are() {
    let m = gen::parse(0, MODULE);
    let options = gen::options("hloc-cache-fallbacks");
    let plan = runtime::plan(&m, &options).expect("plan");
    let fusions = plan
        .module
        .entry()
        .instructions()
        .filter(|(_, i)| i.opcode() == hlo::Opcode::Fusion)
        .count();
    assert!(
        fusions >= 1,
        "the exponential chain stays fused:\n{}",
        hlo::print_module(&plan.module)
    );
    let mut failures = Vec::new();
    gen::check(
        0,
        (&m, MODULE),
        &gen::random_args(&m, 0),
        &options,
        &mut failures,
    );
    gen::assert_none(&failures);
}
