//! Recomputation under `--memory-limit` (issue 32 item 6) against the evaluator: random
//! programs whose first kernel's value (an elementwise chain of a parameter, the same
//! bytes as its input, so it is never rebuilt by default) is read by the first GEMM and,
//! after a chain of GEMMs and elementwise ops whose values live together, by the last
//! GEMM (a weight-gradient-like product). Compiled with a limit one byte below the
//! default program's bytes: either the planner recomputes the value before its last
//! reader and the program fits (its bytes within the limit, outputs against the
//! evaluator), or it reports the clear over-limit error; not vacuous: most fit by
//! recomputation.

use crate::gen::{self, Rng};

/// A random program; `seed` picks everything.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n = 64 * rng.range(2, 9);
    let k = *rng.pick(&[8i64, 16, 32]);
    let a = format!("f32[{n},{k}]");
    let mut lines = vec![
        format!("  x = {a} parameter(0)"),
        format!("  w1 = f32[{k},{k}] parameter(1)"),
        format!("  w2 = f32[{k},{k}] parameter(2)"),
        format!("  t0 = {a} {}(x)", rng.pick(&["tanh", "negate", "sine"])),
        format!("  t = {a} multiply(t0, x)"),
        format!("  h0 = {a} dot(t, w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"),
    ];
    let steps = 2 + rng.below(3);
    for s in 1..=steps {
        let p = s - 1;
        lines.push(format!(
            "  g{s} = {a} dot(h{p}, w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
        ));
        let op = rng.pick(&["tanh", "negate"]);
        lines.push(format!("  e{s} = {a} {op}(g{s})"));
        // Bounded (tanh), so the last GEMM's long sum does not cancel to its rounding.
        lines.push(format!("  v{s} = {a} add(e{s}, h{p})"));
        lines.push(format!("  h{s} = {a} tanh(v{s})"));
    }
    lines.push(format!(
        "  ROOT late = f32[{k},{k}] dot(h{steps}, t), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}"
    ));
    format!(
        "HloModule recompute\n\nENTRY e {{\n{}\n}}\n",
        lines.join("\n")
    )
}

#[test]
fn recomputed_values_under_a_limit_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-recompute");
    let mut failures = Vec::new();
    let mut recomputed = 0;
    let seeds = gen::seeds(0..12);
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        let default = match runtime::compile(&m, &options) {
            Ok(exe) => exe.plan().program.buffer_bytes(),
            Err(e) => {
                failures.push(format!("seed {seed}: {e}\n{text}"));
                continue;
            }
        };
        let limit = default - 1;
        let limited = runtime::CompileOptions {
            memory_limit: Some(limit),
            ..options.clone()
        };
        let result = match runtime::compile(&m, &limited) {
            Err(e) if e.to_string().contains("no schedule fits the memory limit") => continue,
            Err(e) => Err(e.to_string()),
            Ok(exe) => {
                let p = &exe.plan().program;
                if p.buffer_bytes() > limit {
                    failures.push(format!("seed {seed}: {} > {limit}", p.buffer_bytes()));
                }
                recomputed += usize::from(p.kernels.iter().any(|k| k.name.contains("_again")));
                exe.run(&args).map_err(|e| e.to_string())
            }
        }
        .and_then(|outs| runtime::check_reference(&m, &args, &outs));
        if let Err(e) = result {
            failures.push(format!("seed {seed}: {e}\n{text}"));
        }
    }
    gen::assert_none(&failures);
    assert!(
        recomputed * 2 >= count as usize,
        "only {recomputed} of {count} programs fit by recomputing a value"
    );
}
