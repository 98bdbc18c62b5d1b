//! Donated parameters (issue 32 item 1) against the evaluator: random modules whose
//! `input_output_alias` donates parameters to outputs of their shape (elementwise chains,
//! broadcasts of row reductions, transposes, reverses, dynamic-update-slices of a
//! parameter, a loop over a value, GEMMs), compiled through the whole pipeline and run
//! twice on the same arguments: the outputs match the evaluator's both times and the
//! caller's arguments are unchanged (the executor copies a donated argument into the
//! memory its output takes). Not vacuous: many programs put an output in its parameter's
//! allocation. Then a JAX SGD step lowered with `donate_argnums=(0, 1)`.

use crate::gen::{self, Rng};

/// A random module over `f32[n,m]` values; `seed` picks everything.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n = 2 + rng.below(6) as i64;
    let m = if rng.below(2) == 0 {
        n
    } else {
        2 + rng.below(6) as i64
    };
    let dims = [n, m];
    let one_layout = rng.below(4) != 0;
    let shape = move |rng: &mut Rng| match one_layout {
        true => format!("f32[{n},{m}]{{1,0}}"),
        false => gen::shape(rng, "f32", &dims),
    };
    let (s0, s1) = (shape(&mut rng), shape(&mut rng));
    let mut lines = vec![
        format!("  p0 = {s0} parameter(0)"),
        format!("  p1 = {s1} parameter(1)"),
        format!("  q = f32[{m}] parameter(2)"),
        format!("  u = f32[1,{m}] parameter(3)"),
        "  i = s32[] parameter(4)".to_string(),
        format!("  w = f32[{m},{m}] parameter(5)"),
        "  zero = f32[] constant(0)".to_string(),
        "  z = s32[] constant(0)".to_string(),
    ];
    let mut vals = vec!["p0".to_string(), "p1".to_string()];
    let mut looped = false;
    let steps = 2 + rng.below(7);
    for k in 0..steps {
        let last = vals.last().cloned().unwrap_or_default();
        let x = match rng.below(3) {
            0 => vals[rng.below(vals.len())].clone(),
            _ => last,
        };
        let s = shape(&mut rng);
        let name = format!("v{k}");
        let rhs = match rng.below(10) {
            0 | 1 => format!("{}({x})", rng.pick(&["negate", "exponential", "tanh"])),
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
            6 => format!("dynamic-update-slice({x}, u, i, z)"),
            7 if !looped && one_layout => {
                looped = true;
                lines.push(format!("  t{k} = (s32[], {s}) tuple(z, {x})"));
                lines.push(format!(
                    "  l{k} = (s32[], {s}) while(t{k}), condition=cond, body=body"
                ));
                format!("get-tuple-element(l{k}), index=1")
            }
            8 => {
                lines.push(format!("  b{k} = {s} broadcast(q), dimensions={{1}}"));
                format!("multiply({x}, b{k})")
            }
            _ => format!("dot({x}, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"),
        };
        lines.push(format!("  {name} = {s} {rhs}"));
        vals.push(name);
    }
    let last = vals.last().cloned().unwrap_or_default();
    let other = vals[2 + rng.below(vals.len() - 2)].clone();
    let shape_of = |v: &str| -> String {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(&format!("  {v} = ")))
            .and_then(|r| r.split(' ').next())
            .unwrap_or("f32[]")
            .to_string()
    };
    let (o0, o1) = (shape_of(&last), shape_of(&other));
    // Donations: output 0 from p0 or p1, sometimes output 1 from the other one (XLA
    // aliases only arrays of one shape; the layouts may differ).
    let dims_only = |s: &str| s.split('{').next().unwrap_or("").to_string();
    let mut alias = Vec::new();
    let first = rng.below(2);
    let params = [&s0, &s1];
    if dims_only(&o0) == dims_only(params[first]) {
        alias.push(format!("{{0}}: ({first}, {{}}, may-alias)"));
    }
    if rng.below(2) == 0 && dims_only(&o1) == dims_only(params[1 - first]) {
        alias.push(format!("{{1}}: ({}, {{}}, may-alias)", 1 - first));
    }
    let loop_shape = format!("(s32[], f32[{n},{m}])");
    let cond = format!(
        "cond {{\n  s = {loop_shape} parameter(0)\n  c = s32[] get-tuple-element(s), index=0\n  n = s32[] constant(3)\n  ROOT lt = pred[] compare(c, n), direction=LT\n}}\n\n"
    );
    let body = format!(
        "body {{\n  s = {loop_shape} parameter(0)\n  c = s32[] get-tuple-element(s), index=0\n  one = s32[] constant(1)\n  d = s32[] add(c, one)\n  x = f32[{n},{m}] get-tuple-element(s), index=1\n  h = f32[] constant(0.5)\n  hb = f32[{n},{m}] broadcast(h), dimensions={{}}\n  y = f32[{n},{m}] multiply(x, hb)\n  ROOT r = {loop_shape} tuple(d, y)\n}}\n\n"
    );
    let text_loops = if looped {
        format!("{cond}{body}")
    } else {
        String::new()
    };
    format!(
        "HloModule donation, input_output_alias={{ {} }}\n\nsum {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}}\n\n{text_loops}ENTRY e {{\n{}\n  ROOT root = ({o0}, {o1}) tuple({last}, {other})\n}}\n",
        alias.join(", "),
        lines.join("\n")
    )
}

/// Compiles and runs `m` twice on `args`, each run against the evaluator, checking that
/// the arguments are unchanged; returns how many outputs took a parameter's allocation.
fn run_twice(m: &hlo::Module, args: &[hlo::Literal], cache: &str) -> Result<usize, String> {
    let exe = runtime::compile(m, &gen::options(cache)).map_err(|e| e.to_string())?;
    let p = &exe.plan().program;
    let donated = plan::memory::donate::donated_allocations(p);
    let taken = p
        .outputs
        .iter()
        .filter(|o| donated[p.buffers[o.buffer].allocation])
        .count();
    let kept = args.to_vec();
    for _ in 0..2 {
        let outs = exe.run(args).map_err(|e| e.to_string())?;
        runtime::check_reference(m, args, &outs)?;
        if args != kept.as_slice() {
            return Err("a run changed the caller's arguments".into());
        }
    }
    Ok(taken)
}

#[test]
fn donated_parameters_match_the_reference_evaluator() {
    let mut failures = Vec::new();
    let mut donated = 0;
    let seeds = gen::seeds(0..80);
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        match run_twice(&m, &args, "hloc-cache-donation") {
            Ok(n) => donated += usize::from(n > 0),
            Err(e) => failures.push(format!("seed {seed}: {e}\n{text}")),
        }
    }
    gen::assert_none(&failures);
    assert!(
        count < 40 || donated * 3 >= count as usize,
        "only {donated} of {count} programs wrote an output over its donated parameter"
    );
}

/// A JAX SGD step (`jax.jit(step, donate_argnums=(0, 1))`, jax 0.10.2): both updated
/// parameters take their inputs' allocations, the outputs match the evaluator, and the
/// program needs their bytes less than the same module without `input_output_alias`.
#[test]
fn a_jax_step_with_donate_argnums_updates_its_parameters_in_their_memory() {
    let text = include_str!("donated_sgd.hlo");
    let m = gen::parse(0, text);
    let args = gen::random_args(&m, 7);
    let taken = run_twice(&m, &args, "hloc-cache-donation").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(taken, 2, "both updated parameters in their inputs' memory");
    let plain = text.replacen(
        ", input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }",
        "",
        1,
    );
    assert_ne!(plain, text);
    let options = gen::options("hloc-cache-donation");
    let with = runtime::compile(&m, &options).expect("compiles");
    let without = runtime::compile(&gen::parse(0, &plain), &options).expect("compiles");
    let (a, b) = (with.stats().buffer_bytes, without.stats().buffer_bytes);
    assert_eq!(a + (8 * 4 + 4) * 4, b, "donated {a} bytes, not donated {b}");
}
