//! Differential test of full reductions read through a scalar broadcast by an elementwise
//! consumer (optax LAMB's trust ratio: `u * sqrt(sum(w * w)) / sqrt(sum(u * u))`), which
//! the cost model keeps out of multi-block consumers (a hoisted value is computed again in
//! every parallel block) and may fuse into single-block ones: every rank and layout of the
//! consumer, compiled and compared with the reference evaluator.

const MODULE: &str = r#"HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
ENTRY e {
  w = f32[DIMS]{LAYOUT} parameter(0)
  u = f32[DIMS]{LAYOUT} parameter(1)
  ww = f32[DIMS] multiply(w, w)
  uu = f32[DIMS] multiply(u, u)
  z = f32[] constant(0)
  ninf = f32[] constant(-inf)
  nw = f32[] reduce(ww, z), dimensions={ALL}, to_apply=sum
  nu = f32[] reduce(uu, z), dimensions={ALL}, to_apply=sum
  mu = f32[] reduce(u, ninf), dimensions={ALL}, to_apply=max
  rw = f32[] sqrt(nw)
  ru = f32[] sqrt(nu)
  t = f32[] divide(rw, ru)
  bt = f32[DIMS] broadcast(t), dimensions={}
  bm = f32[DIMS] broadcast(mu), dimensions={}
  s = f32[DIMS] multiply(u, bt)
  ROOT o = f32[DIMS] subtract(s, bm)
}
"#;

#[test]
fn full_reductions_read_through_a_scalar_broadcast_match_the_reference_evaluator() {
    // (dims, layout minor-to-major)
    let shapes: &[(&str, &str)] = &[
        ("1000", "0"),        // one dimension: every element its own block
        ("1,700", "1,0"),     // one block
        ("64,300", "1,0"),    // many blocks
        ("300,64", "0,1"),    // many blocks, column-major
        ("3,50,40", "2,1,0"), // three dimensions
        ("3,50,40", "0,2,1"), // three dimensions, permuted layout
    ];
    let mut failures = Vec::new();
    for (i, (dims, layout)) in shapes.iter().enumerate() {
        let rank = dims.split(',').count();
        let all = (0..rank)
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let text = MODULE
            .replace("DIMS", dims)
            .replace("LAYOUT", layout)
            .replace("ALL", &all);
        if let Err(e) =
            super::differential::compiled_matches(&text, "hloc-cache-full-reduction", i as u64)
        {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
