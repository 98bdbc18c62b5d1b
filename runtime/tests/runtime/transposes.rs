//! Differential test of cache-blocked transposes: shapes whose transposed dimensions span
//! several tiles, every permutation of a rank-3 array, element types of every width,
//! non-default layouts and a fused elementwise consumer, compiled and compared with the
//! reference evaluator.

fn check(text: &str, failures: &mut Vec<String>) {
    if let Err(e) = super::differential::compiled_matches(text, "hloc-cache-transposes", 7) {
        failures.push(e);
    }
}

#[test]
fn tiled_transposes_match_the_reference_evaluator() {
    let dims = [3i64, 64, 96];
    let perms: [[usize; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let mut failures = Vec::new();
    for ty in ["f32", "f16", "s8", "f64"] {
        for (k, perm) in perms.iter().enumerate() {
            let out: Vec<String> = perm.iter().map(|&p| dims[p].to_string()).collect();
            let p: Vec<String> = perm.iter().map(usize::to_string).collect();
            // Alternate the input layout between row-major and column-major.
            let layout = if k % 2 == 0 { "2,1,0" } else { "0,1,2" };
            let text = format!(
                "HloModule m\nENTRY e {{\n  p0 = {ty}[3,64,96]{{{layout}}} parameter(0)\n  t = {ty}[{o}]{{2,1,0}} transpose(p0), dimensions={{{p}}}\n  ROOT n = {ty}[{o}]{{2,1,0}} negate(t)\n}}\n",
                o = out.join(","),
                p = p.join(","),
            );
            check(&text, &mut failures);
        }
    }
    check(
        "HloModule m\nENTRY e {\n  p0 = f32[128,64]{1,0} parameter(0)\n  ROOT t = f32[64,128]{1,0} transpose(p0), dimensions={1,0}\n}\n",
        &mut failures,
    );
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
