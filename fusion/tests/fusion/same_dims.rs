//! `kernel.multi_output_same_dims`: a device whose multi-output fusions must keep to one
//! output shape and no reduction (XLA:CPU's loop emitter) merges only such kernels; one
//! without the rule (the h100) merges across shapes.

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

/// The output shapes of every multi-output fusion of the fused module's entry.
fn multi_output_shapes(device: &device::Device) -> Vec<String> {
    let mut m = hlo::parse_module(MODULE).unwrap();
    fusion::fuse(&mut m, device).unwrap();
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
    let mut cpu = device::load("cpu").unwrap();
    cpu.kernel.multi_output_fusion = true;
    assert!(cpu.kernel.multi_output_same_dims);
    assert_eq!(multi_output_shapes(&cpu), vec!["(f32[16], f32[16])"]);
    cpu.kernel.multi_output_same_dims = false;
    let shapes = multi_output_shapes(&cpu);
    assert!(
        shapes.iter().any(|s| s.contains("f32[8]")),
        "without the rule the reduction joins its producer: {shapes:?}"
    );
}

#[test]
fn the_shipped_cpu_description_forms_no_multi_output_fusion() {
    let cpu = device::load("cpu").unwrap();
    assert!(!cpu.kernel.multi_output_fusion);
    assert!(multi_output_shapes(&cpu).is_empty());
}
