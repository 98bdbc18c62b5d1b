//! Differential test of the reduction kernels at sizes where their vector shapes apply:
//! row reductions long enough for partial accumulators, column reductions in tiles with
//! and without a remainder tile, middle dimensions, non-default layouts, every reducer
//! kind (sum, product, max, integer min, logical or, variadic argmax) and an
//! elementwise epilogue, each compiled and compared with the reference evaluator.

const REDUCERS: &str = r#"
sum {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  ROOT r = TY[] add(a, b)
}
prod {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  ROOT r = TY[] multiply(a, b)
}
max {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  ROOT r = TY[] maximum(a, b)
}
min {
  a = TY[] parameter(0)
  b = TY[] parameter(1)
  ROOT r = TY[] minimum(a, b)
}
"#;

/// A module reducing `TY[dims]{layout}` over `dims_reduced` with reducer `red` (and init
/// `init`), then scaling the result by 2 (an epilogue in the same fusion).
fn module(
    ty: &str,
    dims: &[i64],
    layout: &[i64],
    reduced: &[i64],
    red: &str,
    init: &str,
) -> String {
    let kept: Vec<i64> = (0..dims.len() as i64)
        .filter(|d| !reduced.contains(d))
        .map(|d| dims[d as usize])
        .collect();
    let list = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    let two = if ty == "pred" { "true" } else { "2" };
    let scale = if ty == "pred" { "and" } else { "multiply" };
    format!(
        "HloModule m\n{}\nENTRY e {{\n  p = {ty}[{}]{{{}}} parameter(0)\n  z = {ty}[] constant({init})\n  r = {ty}[{}] reduce(p, z), dimensions={{{}}}, to_apply={red}\n  c = {ty}[] constant({two})\n  b = {ty}[{}] broadcast(c), dimensions={{}}\n  ROOT s = {ty}[{}] {scale}(r, b)\n}}\n",
        REDUCERS.replace("TY", ty),
        list(dims),
        list(layout),
        list(&kept),
        list(reduced),
        list(&kept),
        list(&kept)
    )
}

const ARGMAX: &str = r#"HloModule m
argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT r = (f32[], s32[]) tuple(v, i)
}
ENTRY e {
  p = f32[DIMS] parameter(0)
  io = s32[DIMS] iota(), iota_dimension=AXIS
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[KEPT], s32[KEPT]) reduce(p, io, ninf, zero), dimensions={AXIS}, to_apply=argmax
}
"#;

fn check(text: &str, seed: u64, failures: &mut Vec<String>) {
    if let Err(e) = super::differential::compiled_matches(text, "hloc-cache-reductions", seed) {
        failures.push(e);
    }
}

#[test]
fn reductions_of_every_shape_match_the_reference_evaluator() {
    // (dims, layout minor-to-major, reduced dimensions)
    let shapes: &[(&[i64], &[i64], &[i64])] = &[
        (&[37, 300], &[1, 0], &[1]), // rows: partial accumulators and a tail
        (&[37, 300], &[1, 0], &[0]), // columns: tiles with a remainder
        (&[300, 37], &[0, 1], &[1]), // columns through a column-major layout
        (&[9, 1024], &[1, 0], &[0]), // columns: four tiles, rows in groups of four
        (&[3, 1009, 5], &[2, 1, 0], &[1]), // a middle dimension
        (&[6, 4, 130], &[2, 1, 0], &[0, 1]), // two reduced dimensions, one kept
        // Few outputs of more than 4096 elements over several dimensions: the
        // tree-reduction rewriter splits the longest (contiguous, then not; f16 stays).
        (&[3, 90, 80], &[2, 1, 0], &[1, 2]),
        (&[70, 3, 90], &[2, 1, 0], &[0, 2]),
    ];
    let reducers: &[(&str, &str, &str)] = &[
        ("f32", "sum", "0"),
        ("f64", "prod", "1"),
        ("f32", "max", "-inf"),
        ("s32", "min", "2147483647"),
        ("pred", "max", "false"),
        ("f16", "sum", "0"),
    ];
    let mut failures = Vec::new();
    for (i, (dims, layout, reduced)) in shapes.iter().enumerate() {
        for (j, (ty, red, init)) in reducers.iter().enumerate() {
            let text = module(ty, dims, layout, reduced, red, init);
            check(&text, (i * 16 + j) as u64, &mut failures);
        }
    }
    for (dims, axis, kept) in [
        ("37,300", 1, "37"),
        ("37,300", 0, "300"),
        ("5,1009", 0, "1009"),
        // Nothing to reduce: the results are the init values (issue 36 item 1).
        ("0,300", 0, "300"),
        ("0,8", 0, "8"),
        ("8,0", 1, "8"),
    ] {
        let text = ARGMAX
            .replace("DIMS", dims)
            .replace("AXIS", &axis.to_string())
            .replace("KEPT", kept);
        check(&text, 99, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
