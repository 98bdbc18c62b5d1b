//! In-place kernels (issue 32 item 2) against the evaluator: random modules of values of
//! one shape (random layouts) built by elementwise ops, broadcasts of row reductions and
//! of a parameter, and ops that read another element of a same-sized operand (transposes
//! of square values, reverses, slices padded back to size), whose values often die at
//! their last reader, and GEMMs (no fusion crosses them, so a GEMM's result dies at the
//! kernel after it). Compiled through the whole pipeline, run on random inputs and
//! compared with the reference evaluator; not vacuous: many of the compiled programs
//! have a kernel that writes over its dying operand.

use crate::gen::{self, Rng};

/// A random module; `seed` picks everything.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n = 2 + rng.below(6) as i64;
    let m = if rng.below(2) == 0 {
        n
    } else {
        2 + rng.below(6) as i64
    };
    let dims = [n, m];
    // Mostly one layout for every value (another physical order is never in place).
    let one_layout = rng.below(3) != 0;
    let shape = move |rng: &mut Rng| match one_layout {
        true => format!("f32[{n},{m}]{{1,0}}"),
        false => gen::shape(rng, "f32", &dims),
    };
    let mut lines = vec![
        format!("  p0 = {} parameter(0)", shape(&mut rng)),
        format!("  q = f32[{m}] parameter(1)"),
        format!("  w = f32[{m},{m}] parameter(2)"),
        "  zero = f32[] constant(0)".to_string(),
    ];
    let mut vals = vec!["p0".to_string()];
    let steps = 3 + rng.below(8);
    for k in 0..steps {
        let v = vals[rng.below(vals.len())].clone();
        // Mostly the latest value, so that values die at their reader.
        let last = vals.last().cloned().unwrap_or_default();
        let x = if rng.below(3) == 0 { v } else { last };
        let s = shape(&mut rng);
        let name = format!("v{k}");
        let rhs = match rng.below(11) {
            0 | 1 => format!(
                "{}({x})",
                rng.pick(&["negate", "exponential", "tanh", "abs"])
            ),
            2 => {
                let y = vals[rng.below(vals.len())].clone();
                format!("add({x}, {y})")
            }
            3 => {
                lines.push(format!(
                    "  r{k} = f32[{n}] reduce({x}, zero), dimensions={{1}}, to_apply=sum"
                ));
                lines.push(format!("  b{k} = {s} broadcast(r{k}), dimensions={{0}}"));
                format!("subtract({x}, b{k})")
            }
            4 if n == m => format!("transpose({x}), dimensions={{1,0}}"),
            5 => format!("reverse({x}), dimensions={{{}}}", rng.below(2)),
            6 => {
                lines.push(format!(
                    "  sl{k} = f32[{},{m}] slice({x}), slice={{[1:{n}], [0:{m}]}}",
                    n - 1
                ));
                format!("pad(sl{k}, zero), padding=0_1x0_0")
            }
            7 => {
                lines.push(format!("  b{k} = {s} broadcast(q), dimensions={{1}}"));
                format!("multiply({x}, b{k})")
            }
            // A GEMM: no kernel fuses across it, so its result dies at the next kernel.
            _ => format!("dot({x}, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"),
        };
        lines.push(format!("  {name} = {s} {rhs}"));
        vals.push(name);
    }
    let last = vals.last().cloned().unwrap_or_default();
    // Sometimes an earlier value is an output too (it then lives to the end).
    let other = match rng.below(3) {
        0 => vals[rng.below(vals.len())].clone(),
        _ => last.clone(),
    };
    let shape_of = |v: &str| -> String {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(&format!("  {v} = ")))
            .and_then(|r| r.split(' ').next())
            .unwrap_or("f32[]")
            .to_string()
    };
    let root = format!(
        "  ROOT root = ({}, {}) tuple({last}, {other})",
        shape_of(&last),
        shape_of(&other)
    );
    format!(
        "HloModule in_place\n\nsum {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}}\n\nENTRY e {{\n{}\n{root}\n}}\n",
        lines.join("\n")
    )
}

#[test]
fn in_place_kernels_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-in-place");
    let mut failures = Vec::new();
    let mut in_place = 0;
    let seeds = gen::seeds(0..80);
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        gen::check_inspecting(seed, (&m, &text), &args, &options, &mut failures, |exe| {
            let p = &exe.plan().program;
            in_place += usize::from(p.kernels.iter().any(|k| {
                k.buffers
                    .iter()
                    .any(|b| b.access == codegen::kir::Access::InOut)
            }));
        });
    }
    gen::assert_none(&failures);
    assert!(
        count < 40 || in_place * 5 >= count as usize,
        "only {in_place} of {count} programs wrote over a dying operand"
    );
}
