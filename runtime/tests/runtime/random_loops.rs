//! Differential test of control flow: random while loops (a counter and one to three
//! arrays of random shapes and layouts as state, bodies that rotate, swap or update the
//! arrays, a small GEMM or a reduction in some bodies, zero to six iterations) and
//! conditionals (a pred or an index, branches of different work), compiled for the CPU (the
//! loop bound once per execution, or run thunk by thunk) and compared with the reference
//! evaluator. Deterministic: a failure prints the module.

use crate::gen::{self, Rng};

/// A random while loop (most seeds) or conditional (every fourth).
pub(crate) fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n = rng.range(2, 6);
    let sq = gen::shape(&mut rng, "f32", &[n, n]);
    if seed.is_multiple_of(4) {
        let by_index = rng.below(2) == 0;
        let (sel_ty, sel_val) = if by_index {
            ("s32", rng.range(-1, 3).to_string())
        } else {
            ("pred", ["true", "false"][rng.below(2)].to_string())
        };
        let branches = if by_index { 3 } else { 2 };
        let comps: Vec<String> = (0..branches)
            .map(|b| {
                let body = match b {
                    0 => "ROOT r = f32[N,N] negate(p)".to_string(),
                    1 => "t = f32[N,N] transpose(p), dimensions={1,0}\n  ROOT r = f32[N,N] add(p, t)"
                        .to_string(),
                    _ => "ROOT r = f32[N,N] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
                        .to_string(),
                };
                format!("br{b} {{\n  p = {sq} parameter(0)\n  {}\n}}", body.replace('N', &n.to_string()))
            })
            .collect();
        let names: Vec<String> = (0..branches).map(|b| format!("br{b}")).collect();
        let args: Vec<&str> = (0..branches).map(|_| "x").collect();
        let calls = if by_index {
            format!("branch_computations={{{}}}", names.join(", "))
        } else {
            "true_computation=br0, false_computation=br1".to_string()
        };
        return format!(
            "HloModule c\n{}\nENTRY e {{\n  x = {sq} parameter(0)\n  s = {sel_ty}[] constant({sel_val})\n  \
             ROOT c = f32[{n},{n}] conditional(s, {}), {calls}\n}}\n",
            comps.join("\n"),
            args.join(", "),
        );
    }
    let k = 1 + rng.below(3);
    let states: Vec<String> = (0..k)
        .map(|_| gen::shape(&mut rng, "f32", &[n, n]))
        .collect();
    let trips = rng.range(0, 6);
    let tuple_ty = format!("(s32[], {})", states.join(", "));
    // Body results: rotate the arrays, update the first.
    let update = match rng.below(3) {
        0 => "u = f32[N,N] multiply(a0, a0)".to_string(),
        // tanh keeps the iterated product bounded (a product of products amplifies the
        // GEMM's reassociated rounding past any tolerance).
        1 => "d = f32[N,N] dot(a0, aL), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  \
              u = f32[N,N] tanh(d)"
            .to_string(),
        _ => "c = f32[] constant(0)\n  rs = f32[N] reduce(a0, c), dimensions={1}, to_apply=add\n  \
              b = f32[N,N] broadcast(rs), dimensions={0}\n  u = f32[N,N] subtract(a0, b)"
            .to_string(),
    }
    .replace('N', &n.to_string())
    .replace("aL", &format!("a{}", k - 1));
    let gets: Vec<String> = (0..k)
        .map(|j| {
            format!(
                "  a{j} = {} get-tuple-element(p), index={}",
                states[j],
                j + 1
            )
        })
        .collect();
    let mut results: Vec<String> = (1..k).map(|j| format!("a{j}")).collect();
    results.push("u".into());
    let rotate = rng.below(2) == 0;
    if !rotate {
        results.rotate_right(1);
        results[0] = "u".into();
        for (j, r) in results.iter_mut().enumerate().skip(1) {
            *r = format!("a{j}");
        }
    }
    // Results are re-laid out by the root tuple where they differ (the pass under test).
    format!(
        "HloModule w\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}}\n\
         cond {{\n  p = {tuple_ty} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
         n = s32[] constant({trips})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n\
         body {{\n  p = {tuple_ty} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n{}\n  \
         one = s32[] constant(1)\n  j = s32[] add(i, one)\n  {update}\n  ROOT r = {tuple_ty} tuple(j, {})\n}}\n\
         ENTRY e {{\n{}\n  z = s32[] constant(0)\n  t = {tuple_ty} tuple(z, {})\n  \
         ROOT w = {tuple_ty} while(t), condition=cond, body=body\n}}\n",
        gets.join("\n"),
        results.join(", "),
        (0..k)
            .map(|j| format!("  x{j} = {} parameter({j})", states[j]))
            .collect::<Vec<_>>()
            .join("\n"),
        (0..k).map(|j| format!("x{j}")).collect::<Vec<_>>().join(", "),
    )
}

#[test]
fn random_loops_and_conditionals_match_the_reference_evaluator() {
    gen::check_all("hloc-cache-loops", gen::seeds(0..40), |seed| {
        Some(module(seed))
    });
}

/// The same loops and conditionals in the poison mode: loop state carried in place, body
/// values at their own steps and branch results never change a value a later entry thunk
/// reads, and the outputs match the evaluator with every dead value's bytes poisoned.
#[test]
fn random_loops_and_conditionals_pass_in_poison_mode() {
    let ran = backend_cpu::check_buffers::with_checks(|| {
        gen::check_all("hloc-cache-loops", gen::seeds(0..40), |seed| {
            Some(module(seed))
        })
    });
    assert!(ran > 0, "no random loop ran");
}
