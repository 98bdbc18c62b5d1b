//! The default pipeline's simplification fixed point converges: a module it has
//! optimized is left unchanged by a second run. `algsimp` and `reshape-mover` once moved a
//! transpose of a scaled dot down and back up on every round (the 25-round cap then
//! stopped it, one way or the other), for a value iteration's `0.9 * einsum("ast,t->sa")`.

use hlo::pass::{Pass, PassContext};
use hlo::Literal;
use hlo_eval::{random::random_literal, tolerance};
use hlo_transforms::default_pipeline;

/// Runs the default pipeline on `m` (verified after every pass) and says whether it changed.
fn optimize(m: &mut hlo::Module) -> bool {
    let mut ctx = PassContext::new();
    ctx.set_verifier(hlo::pass::verify::verify_hook());
    default_pipeline().run_in(m, &mut ctx).unwrap()
}

#[test]
fn a_scaled_transposed_dot_reaches_a_fixed_point() {
    // dot(v, P) puts P's own free dimensions in order; the transpose permutes them, so it
    // does not fold into the dot by swapping operands.
    let text = "HloModule vi
ENTRY e {
  v = f32[8] parameter(0)
  p = f32[3,8,5] parameter(1)
  r = f32[5,3] parameter(2)
  d = f32[3,5] dot(v, p), lhs_contracting_dims={0}, rhs_contracting_dims={1}
  t = f32[5,3] transpose(d), dimensions={1,0}
  c = f32[] constant(0.9)
  b = f32[5,3] broadcast(c), dimensions={}
  m = f32[5,3] multiply(t, b)
  ROOT a = f32[5,3] add(r, m)
}";
    let original = hlo::parse_module(text).unwrap();
    let mut once = original.clone();
    assert!(optimize(&mut once), "the pipeline moves the transpose");
    let mut twice = once.clone();
    assert!(
        !optimize(&mut twice),
        "a second run changed the optimized module:\n{}\nto\n{}",
        hlo::print_module(&once),
        hlo::print_module(&twice)
    );
    // And the optimized module computes what the original does.
    let args: Vec<Literal> = original
        .entry()
        .parameters()
        .iter()
        .enumerate()
        .map(|(n, &id)| {
            random_literal(original.entry().instr(id).shape(), 7, n as u64, 1 << 20).unwrap()
        })
        .collect();
    let want = hlo_eval::evaluate(&original, &args).unwrap();
    let got = hlo_eval::evaluate(&once, &args).unwrap();
    match (got, want) {
        (Literal::Array(g), Literal::Array(w)) => {
            assert!(
                tolerance::compare(&g, &w).matches,
                "{}",
                hlo::print_module(&once)
            )
        }
        other => panic!("expected arrays, got {other:?}"),
    }
}
