//! Differential test of layouts across computation boundaries: a module before XLA's
//! layout assignment may declare one value in different layouts on the two sides of a
//! boundary (flax's `nn.RNN` hands its loop a transposed input `{2,0,1}` that the body
//! declares row-major). Every declaration here draws its own layout: the entry's
//! transpose, the loop's operand tuple, the loop, its condition's and body's parameters,
//! every get-tuple-element, the body's root, a conditional's or call's parameters and
//! roots after the loop. The body reads the carried input with `dynamic-slice` and writes
//! an accumulator with `dynamic-update-slice`, as a scan does. Compiled for the CPU and
//! compared with the reference evaluator. Deterministic: a failure prints the module.

use crate::gen::{self, Rng};

/// `f32[dims]` with a random layout.
fn arr(rng: &mut Rng, dims: &[i64]) -> String {
    gen::shape(rng, "f32", dims)
}

/// A random scan-shaped loop with independently drawn layouts on every boundary.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (t, b, d) = (rng.range(1, 6), rng.range(1, 4), rng.range(1, 5));
    let steps = rng.range(0, t + 1);
    let seq = [t, b, d];
    let state = |rng: &mut Rng| {
        format!(
            "(s32[], {}, {}, {})",
            arr(rng, &seq),
            arr(rng, &seq),
            arr(rng, &[b, d])
        )
    };
    let cond = format!(
        "cond {{\n  p = {} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
         n = s32[] constant({steps})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n",
        state(&mut rng)
    );
    let body = format!(
        "body {{\n  p = {} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
         x = {} get-tuple-element(p), index=1\n  acc = {} get-tuple-element(p), index=2\n  \
         h = {} get-tuple-element(p), index=3\n  z = s32[] constant(0)\n  \
         s = {} dynamic-slice(x, i, z, z), dynamic_slice_sizes={{1,{b},{d}}}\n  \
         sq2 = {} reshape(s)\n  a = {} add(sq2, h)\n  h1 = {} tanh(a)\n  \
         up1 = {} reshape(h1)\n  u = {} dynamic-update-slice(acc, up1, i, z, z)\n  \
         one = s32[] constant(1)\n  i1 = s32[] add(i, one)\n  \
         ROOT r = {} tuple(i1, x, u, h1)\n}}\n",
        state(&mut rng),
        arr(&mut rng, &seq),
        arr(&mut rng, &seq),
        arr(&mut rng, &[b, d]),
        arr(&mut rng, &[1, b, d]),
        arr(&mut rng, &[b, d]),
        arr(&mut rng, &[b, d]),
        arr(&mut rng, &[b, d]),
        arr(&mut rng, &[1, b, d]),
        arr(&mut rng, &seq),
        state(&mut rng),
    );
    // After the loop: its accumulator straight out, through a call, or through a
    // conditional whose branches declare their own layouts.
    let acc_out = arr(&mut rng, &seq);
    let (after, comps) = match rng.below(3) {
        0 => (
            format!("  ROOT out = {acc_out} get-tuple-element(w), index=2"),
            String::new(),
        ),
        1 => {
            let callee = format!(
                "callee {{\n  p = {} parameter(0)\n  ROOT n = {} negate(p)\n}}\n",
                arr(&mut rng, &seq),
                arr(&mut rng, &seq)
            );
            (
                format!(
                    "  g = {acc_out} get-tuple-element(w), index=2\n  \
                     ROOT out = {} call(g), to_apply=callee",
                    arr(&mut rng, &seq)
                ),
                callee,
            )
        }
        _ => {
            let branches = format!(
                "br0 {{\n  p = {} parameter(0)\n  ROOT n = {} negate(p)\n}}\n\
                 br1 {{\n  p = {} parameter(0)\n  ROOT n = {} exponential(p)\n}}\n",
                arr(&mut rng, &seq),
                arr(&mut rng, &seq),
                arr(&mut rng, &seq),
                arr(&mut rng, &seq)
            );
            let k = rng.below(2);
            (
                format!(
                    "  g = {acc_out} get-tuple-element(w), index=2\n  k = s32[] constant({k})\n  \
                     ROOT out = {} conditional(k, g, g), branch_computations={{br0, br1}}",
                    arr(&mut rng, &seq)
                ),
                branches,
            )
        }
    };
    let entry = format!(
        "ENTRY e {{\n  in = {} parameter(0)\n  h0 = {} parameter(1)\n  \
         x = {} transpose(in), dimensions={{1,0,2}}\n  c0 = f32[] constant(0)\n  \
         acc = {} broadcast(c0), dimensions={{}}\n  z = s32[] constant(0)\n  \
         init = {} tuple(z, x, acc, h0)\n  w = {} while(init), condition=cond, body=body\n{after}\n}}\n",
        arr(&mut rng, &[b, t, d]),
        arr(&mut rng, &[b, d]),
        arr(&mut rng, &seq),
        arr(&mut rng, &seq),
        state(&mut rng),
        state(&mut rng),
    );
    format!("HloModule boundaries\n{cond}{body}{comps}{entry}")
}

#[test]
fn random_layouts_on_every_boundary_match_the_reference_evaluator() {
    gen::check_all("hloc-cache-boundaries", gen::seeds(0..40), |seed| {
        Some(module(seed))
    });
}
