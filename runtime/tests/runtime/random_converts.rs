//! Differential test of conversions: chains of converts through random element types
//! (every integer width, pred, f16, bf16, f8 kinds, f32, f64, complex) from scaled
//! values (so that integer conversions round, saturate and wrap), with a bitcast-convert
//! between same-width types in some chains, compiled for the CPU and compared with the
//! reference evaluator. Deterministic: a failure prints the module.

use crate::gen::{self, list, Rng};

const TYPES: &[&str] = &[
    "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
    "f8e4m3fn", "f8e5m2", "c64",
];

/// A random conversion chain.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let dims: Vec<i64> = (0..1 + rng.below(2)).map(|_| rng.range(1, 40)).collect();
    let d = list(&dims);
    let scale = *rng.pick(&["1", "3.5", "300", "70000", "3e9", "1e20"]);
    let mut lines = vec![
        format!("  x = f32[{d}] parameter(0)"),
        format!("  k = f32[] constant({scale})"),
        format!("  kb = f32[{d}] broadcast(k), dimensions={{}}"),
        format!("  v0 = f32[{d}] multiply(x, kb)"),
    ];
    let steps = 1 + rng.below(3);
    let (mut prev, mut prev_ty) = ("v0".to_string(), "f32");
    for s in 1..=steps {
        let t = *rng.pick(TYPES);
        // A complex value leaves through its real part.
        if prev_ty == "c64" && t != "c64" {
            lines.push(format!("  re{s} = f32[{d}] real({prev})"));
            prev = format!("re{s}");
        }
        lines.push(format!("  v{s} = {t}[{d}] convert({prev})"));
        (prev, prev_ty) = (format!("v{s}"), t);
    }
    if prev_ty == "c64" {
        lines.push(format!("  re = f32[{d}] real({prev})"));
        prev = "re".to_string();
    }
    // The result in f64.
    lines.push(format!("  ROOT out = f64[{d}] convert({prev})"));
    format!("HloModule c\nENTRY e {{\n{}\n}}\n", lines.join("\n"))
}

#[test]
fn random_conversion_chains_match_the_reference_evaluator() {
    gen::check_all("hloc-cache-converts", gen::seeds(0..40), |seed| {
        Some(module(seed))
    });
}
