//! Huge splat constants (`f32[1000000000000] constant(1.5)`): the default pipeline must
//! run on them without materializing their elements. Expanding one would ask for 4 TB, an
//! allocation that fails and aborts the test binary; the test also checks that every
//! constant left is still a splat.

use hlo::pass::{Pass, PassContext};

/// Splat constants of 10^12 elements used every way the simplification passes look at
/// constants: equal pairs (CSE), constant operands of arithmetic (constant folding),
/// multiplication by one and addition of zero (algebraic simplifier), `abs` of a
/// non-negative constant, a comparison feeding a select, reductions and a slice of a
/// huge constant (small results), and a while loop carrying one in its state whose trip
/// count the loop simplifier evaluates.
const MODULE: &str = "HloModule splat
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT a = f32[] add(x, y)
}
cond {
  cs = (s32[], f32[1000000000000]) parameter(0)
  ci = s32[] get-tuple-element(cs), index=0
  n = s32[] constant(1)
  ROOT lt = pred[] compare(ci, n), direction=LT
}
body {
  bs = (s32[], f32[1000000000000]) parameter(0)
  bi = s32[] get-tuple-element(bs), index=0
  bv = f32[1000000000000] get-tuple-element(bs), index=1
  one = s32[] constant(1)
  ni = s32[] add(bi, one)
  ROOT nt = (s32[], f32[1000000000000]) tuple(ni, bv)
}
ENTRY e {
  p = f32[1000000000000] parameter(0)
  c1 = f32[1000000000000] constant(1.5)
  c2 = f32[1000000000000] constant(1.5)
  one = f32[1000000000000] constant(1)
  zero = f32[1000000000000] constant(0)
  ints = s32[1000000000000] constant(7)
  sum = f32[1000000000000] add(c1, c2)
  m = f32[1000000000000] multiply(p, one)
  a = f32[1000000000000] add(m, zero)
  b = f32[1000000000000] add(a, sum)
  ab = f32[1000000000000] abs(c1)
  d = f32[1000000000000] subtract(b, ab)
  lt = pred[1000000000000] compare(d, zero), direction=LT
  s = f32[1000000000000] select(lt, zero, d)
  ic = f32[1000000000000] convert(ints)
  t = f32[1000000000000] add(s, ic)
  z = f32[] constant(0)
  r = f32[] reduce(t, z), dimensions={0}, to_apply=add
  rc = f32[] reduce(c2, z), dimensions={0}, to_apply=add
  sl = f32[4] slice(c1), slice={[0:4]}
  sr = f32[] reduce(sl, z), dimensions={0}, to_apply=add
  i0 = s32[] constant(0)
  st = (s32[], f32[1000000000000]) tuple(i0, c1)
  w = (s32[], f32[1000000000000]) while(st), condition=cond, body=body
  wi = s32[] get-tuple-element(w), index=0
  wf = f32[] convert(wi)
  q = f32[] add(r, rc)
  q2 = f32[] add(q, sr)
  ROOT q3 = f32[] add(q2, wf)
}
";

#[test]
fn default_pipeline_leaves_huge_splat_constants_unexpanded() {
    let mut module = hlo::parse_module(MODULE).expect("parses");
    let mut ctx = PassContext::new();
    ctx.set_verifier(hlo::pass::verify::verify_hook());
    let result = hlo_transforms::default_pipeline().run_in(&mut module, &mut ctx);
    let changed = result.expect("the pipeline runs");
    assert!(changed, "the simplifications apply");
    // Every constant left is still a splat.
    for comp in module.computations.iter() {
        for (_, instr) in comp.instructions() {
            if let Some(a) = instr.literal().and_then(hlo::Literal::as_array) {
                assert!(
                    a.is_splat() || a.element_count() <= 1,
                    "{} expanded",
                    instr.name()
                );
            }
        }
    }
}
