//! Differential test of dots as library GEMMs: several free and contracting dimensions on
//! either side (merged into one matrix dimension when the layouts allow, else looped over
//! or packed), batch dimensions, non-default layouts, f64, bf16/f16 and integer types
//! through f32/f64 products, and a tall product split by rows, compiled and compared
//! with the reference evaluator; each must run as one library GEMM.

fn check(text: &str, failures: &mut Vec<String>) {
    if let Err(e) = super::differential::compiled_matches(text, "hloc-cache-dots", 3) {
        failures.push(e);
    }
    let m = hlo::parse_module(text).expect("parses");
    match runtime::plan(&m, &runtime::CompileOptions::default()) {
        Ok(plan) if plan.program.library_calls() == 1 => {}
        Ok(plan) => failures.push(format!(
            "{} library calls, not one GEMM:\n{text}",
            plan.program.library_calls()
        )),
        Err(e) => failures.push(format!("{e}\n{text}")),
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
        // Two contracting dimensions, contiguous in both operands (a weight gradient).
        (
            "f32[4,32,160]{2,1,0}",
            "f32[4,32,200]{2,1,0}",
            "f32[160,200]{1,0}",
            "lhs_contracting_dims={0,1}, rhs_contracting_dims={0,1}",
        ),
        // Contracting dimensions that merge in the lhs only: the rhs is packed.
        (
            "f32[40,6,5]{2,1,0}",
            "f32[5,6,48]{2,1,0}",
            "f32[40,48]{1,0}",
            "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}",
        ),
        // The mixture-of-experts einsum td,edf->etf as JAX writes it: the expert weights
        // packed [d, e, f], one GEMM.
        (
            "f32[3,16,128]{2,1,0}",
            "f32[512,16]{1,0}",
            "f32[3,128,512]{2,1,0}",
            "lhs_contracting_dims={1}, rhs_contracting_dims={1}",
        ),
        // The same on the rhs side.
        (
            "f32[256,16]{1,0}",
            "f32[3,16,256]{2,1,0}",
            "f32[256,3,256]{2,1,0}",
            "lhs_contracting_dims={1}, rhs_contracting_dims={1}",
        ),
        // A result layout the free dimensions do not merge in: copied into it.
        (
            "f32[4,5,6]{2,1,0}",
            "f32[6,7]{1,0}",
            "f32[4,5,7]{1,2,0}",
            "lhs_contracting_dims={2}, rhs_contracting_dims={0}",
        ),
        // bf16 and f16 through f32 products, rounded once.
        (
            "bf16[8,96,64]{2,1,0}",
            "bf16[8,80,64]{2,1,0}",
            "bf16[8,96,80]{2,1,0}",
            "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}",
        ),
        (
            "f16[300,70]{0,1}",
            "f16[70,90]{1,0}",
            "f32[300,90]{1,0}",
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        ),
        // Integers, exact: an f32 product (K * 128 * 128 <= 2^24), an f64 one, and sums
        // wrapping to 8 bits (through s64).
        (
            "s8[40,1024]{1,0}",
            "s8[1024,30]{0,1}",
            "s32[40,30]{1,0}",
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        ),
        (
            "s8[3,4096]{1,0}",
            "s8[4096,5]{1,0}",
            "s32[3,5]{1,0}",
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        ),
        (
            "s8[64,64]{1,0}",
            "s8[64,64]{1,0}",
            "s8[64,64]{1,0}",
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        ),
        (
            "u8[32,48]{1,0}",
            "u8[48,16]{1,0}",
            "u8[32,16]{1,0}",
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        ),
        (
            "s16[32,48]{1,0}",
            "s16[48,16]{1,0}",
            "s32[32,16]{1,0}",
            "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
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
