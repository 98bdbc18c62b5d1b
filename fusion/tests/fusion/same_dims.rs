//! `EmitterRules::multi_output_same_dims`: a code generator whose multi-output fusions must
//! keep to one output shape and no reduction (XLA:CPU's loop emitter) merges only such
//! kernels; one without the rule (XLA:GPU's) merges across shapes.

/// Three independent small kernels, two of one shape; and a producer also returned beside
/// its reduction.
const MODULE: &str = "HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[16] parameter(0)
  q = f32[16] parameter(1)
  r = f32[8,4] parameter(2)
  a = f32[16] exponential(p)
  b = f32[16] negate(q)
  c = f32[8,4] sine(r)
  zero = f32[] constant(0)
  s = f32[8] reduce(c, zero), dimensions={1}, to_apply=add
  ROOT t = (f32[16], f32[16], f32[8,4], f32[8]) tuple(a, b, c, s)
}";

/// The output shapes of every multi-output fusion of the module's entry fused for the `cpu`
/// description under XLA:CPU's reach with `rules`.
fn multi_output_shapes(rules: &fusion::EmitterRules) -> Vec<String> {
    let cpu = device::load("cpu").unwrap();
    let mut m = hlo::parse_module(MODULE).unwrap();
    let reach = fusion::XlaCpuReach {
        rules: rules.clone(),
    };
    fusion::fuse_logged_with(&mut m, &cpu, std::sync::Arc::new(reach)).unwrap();
    let text = hlo::print_module(&m);
    text.lines()
        .filter(|l| l.contains(" fusion(") && l.contains("= ("))
        .map(|l| {
            l.split(" = ")
                .nth(1)
                .unwrap_or("")
                .split(" fusion(")
                .next()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn one_output_shape_and_no_reduction_where_the_device_requires_it() {
    let mut rules = fusion::EmitterRules::xla_cpu();
    rules.multi_output = true;
    assert!(rules.multi_output_same_dims);
    assert_eq!(multi_output_shapes(&rules), vec!["(f32[16], f32[16])"]);
    rules.multi_output_same_dims = false;
    let shapes = multi_output_shapes(&rules);
    assert!(
        shapes.iter().any(|s| s.contains("f32[8]")),
        "without the rule the reduction joins its producer: {shapes:?}"
    );
}

#[test]
fn xla_cpus_rules_form_no_multi_output_fusion() {
    let rules = fusion::EmitterRules::xla_cpu();
    assert!(!rules.multi_output);
    assert!(multi_output_shapes(&rules).is_empty());
    let cpu = device::load("cpu").unwrap();
    assert_eq!(fusion::xla_reach(&cpu).rules(), &rules);
}
