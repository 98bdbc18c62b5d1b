//! Differential test of dots as library GEMMs: several free dimensions on either side
//! (merged into one matrix dimension when the layouts allow, else a loop kernel), batch
//! dimensions, non-default layouts, f64 and a tall product split by rows, compiled and
//! compared with the reference evaluator.

fn check(text: &str, failures: &mut Vec<String>) {
    if let Err(e) = super::differential::compiled_matches(text, "hloc-cache-dots", 3) {
        failures.push(e);
    }
}

#[test]
fn dots_with_several_free_dimensions_match_the_reference_evaluator() {
    // (lhs, rhs, result, dimension numbers)
    let cases = [
        (
            "f32[2,8,32]{2,1,0}",
            "f32[32,64]{1,0}",
            "f32[2,8,64]{2,1,0}",
            "lhs_contracting_dims={2}, rhs_contracting_dims={0}",
        ),
        (
            "f32[2,8,32]{2,0,1}",
            "f32[32,64]{1,0}",
            "f32[2,8,64]{2,1,0}",
            "lhs_contracting_dims={2}, rhs_contracting_dims={0}",
        ),
        (
            "f64[3,5,16]{2,1,0}",
            "f64[16,4,6]{2,1,0}",
            "f64[3,5,4,6]{3,2,1,0}",
            "lhs_contracting_dims={2}, rhs_contracting_dims={0}",
        ),
        (
            "f32[4,3,5,16]{3,2,1,0}",
            "f32[4,16,7]{2,1,0}",
            "f32[4,3,5,7]{3,2,1,0}",
            "lhs_batch_dims={0}, lhs_contracting_dims={3}, rhs_batch_dims={0}, rhs_contracting_dims={1}",
        ),
        (
            "f32[2,8,32]{2,1,0}",
            "f32[32,64]{0,1}",
            "f32[2,8,64]{1,0,2}",
            "lhs_contracting_dims={2}, rhs_contracting_dims={0}",
        ),
        // Tall (split by rows across threads), an odd row count.
        (
            "f32[4099,48]{1,0}",
            "f32[48,40]{1,0}",
            "f32[4099,40]{1,0}",
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        ),
    ];
    let mut failures = Vec::new();
    for (l, r, o, dn) in cases {
        let text = format!(
            "HloModule m\nENTRY e {{\n  a = {l} parameter(0)\n  b = {r} parameter(1)\n  ROOT d = {o} dot(a, b), {dn}\n}}\n"
        );
        check(&text, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
