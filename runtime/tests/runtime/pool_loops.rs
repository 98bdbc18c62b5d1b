//! Differential test of while loops run on a pool thread (`backend-cpu/src/on_pool.rs`):
//! a recurrent step whose GEMM `h @ W` (`[m, n] x [n, n]`, at least 2^20 multiply-adds)
//! and whose elementwise kernel (`sine` over at least 2^17 elements) are large enough to
//! split between the threads, so that both split from inside the loop, with a
//! dynamic-slice of a stacked input and a dynamic-update-slice of a stacked output per
//! step; compiled and compared with the reference evaluator.

use crate::gen::{self, list, Rng};

/// A random loop of `t` steps: `h = tanh(0.02 h @ W + x[i])`, `o[i] = h`, `a = sine(a)`
/// (the step contracts: with `W` itself, uniform in [-1, 1) over 256-320 terms, a rounding
/// difference of the sum grew tenfold a step, past the tolerance by the third).
fn module(seed: u64) -> Option<String> {
    let mut rng = Rng::new(seed);
    let (m, n) = (rng.range(8, 41), rng.range(256, 321));
    let t = rng.range(2, 5);
    let (r, c) = (rng.range(512, 700), rng.range(260, 300));
    let hs = format!("f32[{}]", list(&[m, n]));
    let xs = format!("f32[{}]", list(&[t, m, n]));
    let ws = format!("f32[{}]", list(&[n, n]));
    let a = format!("f32[{}]", list(&[r, c]));
    let state = format!("(s32[], {hs}, {xs}, {ws}, {xs}, {a})");
    Some(format!(
        "HloModule pool_loop\n\
         cond {{\n  p = {state} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
         t = s32[] constant({t})\n  ROOT lt = pred[] compare(i, t), direction=LT\n}}\n\
         body {{\n  p = {state} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
         h = {hs} get-tuple-element(p), index=1\n  x = {xs} get-tuple-element(p), index=2\n  \
         w = {ws} get-tuple-element(p), index=3\n  o = {xs} get-tuple-element(p), index=4\n  \
         a = {a} get-tuple-element(p), index=5\n  one = s32[] constant(1)\n  \
         i1 = s32[] add(i, one)\n  z = s32[] constant(0)\n  \
         xi = f32[1,{m},{n}] dynamic-slice(x, i, z, z), dynamic_slice_sizes={{1,{m},{n}}}\n  \
         xt = {hs} reshape(xi)\n  \
         hw = {hs} dot(h, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n  \
         g = f32[] constant(0.02)\n  gb = {hs} broadcast(g), dimensions={{}}\n  \
         hg = {hs} multiply(hw, gb)\n  s = {hs} add(hg, xt)\n  h1 = {hs} tanh(s)\n  h3 = f32[1,{m},{n}] reshape(h1)\n  \
         o1 = {xs} dynamic-update-slice(o, h3, i, z, z)\n  a1 = {a} sine(a)\n  \
         ROOT r = {state} tuple(i1, h1, x, w, o1, a1)\n}}\n\
         ENTRY e {{\n  h0 = {hs} parameter(0)\n  x = {xs} parameter(1)\n  w = {ws} parameter(2)\n  \
         a0 = {a} parameter(3)\n  z = s32[] constant(0)\n  zf = f32[] constant(0)\n  \
         o0 = {xs} broadcast(zf), dimensions={{}}\n  \
         init = {state} tuple(z, h0, x, w, o0, a0)\n  \
         l = {state} while(init), condition=cond, body=body\n  \
         o = {xs} get-tuple-element(l), index=4\n  af = {a} get-tuple-element(l), index=5\n  \
         hf = {hs} get-tuple-element(l), index=1\n  \
         ROOT out = ({xs}, {a}, {hs}) tuple(o, af, hf)\n}}\n"
    ))
}

#[test]
fn loops_of_split_gemms_and_kernels_match_the_reference_evaluator() {
    let ran = gen::check_all("hloc-cache-pool-loops", gen::seeds(0..4), module);
    assert!(ran > 0);
}
