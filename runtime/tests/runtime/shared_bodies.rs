//! Kernels whose C differs only in integer literals (one chain over slices of an array
//! at other offsets, a transposed convolution's phase weights at other tap offsets, the
//! patches of convolutions at two power-of-two sizes, whose divisors become shifts)
//! share one body function taking those literals as parameters
//! (`backend_cpu::c::shared_bodies`): compiled for the CPU and compared with the
//! reference evaluator, and every module is required to share a body (its printed source
//! declares one). Deterministic: a failure prints the module.

use crate::gen::{self, Rng};

/// `n` column slices of one input at other offsets (as a layer's weight slices), each
/// through one elementwise chain with a row-broadcast bias: kernels alike but for the
/// slice's offset (the first, at 0, prints without one).
fn slices(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n = 3 + rng.below(3) as i64;
    let rows = *rng.pick(&[128, 256]);
    let cols = *rng.pick(&[64, 128, 256]);
    let value = *rng.pick(&[
        "multiply(p{i}, p{i})",
        "maximum(p{i}, c)",
        "exponential(p{i})",
    ]);
    let s = format!("f32[{rows},{cols}]");
    let mut body = String::new();
    let mut outs = Vec::new();
    for i in 0..n {
        let v = value.replace("{i}", &i.to_string());
        body += &format!(
            "  p{i} = {s} slice(x), slice={{[0:{rows}], [{}:{}]}}\n  v{i} = {s} {v}\n  \
             y{i} = {s} add(v{i}, c)\n",
            i * cols,
            (i + 1) * cols
        );
        outs.push(format!("y{i}"));
    }
    format!(
        "HloModule shared_slices\nENTRY e {{\n  x = f32[{rows},{}] parameter(0)\n  \
         b = f32[{cols}] parameter(1)\n  c = {s} broadcast(b), dimensions={{1}}\n{body}  \
         ROOT t = ({}) tuple({})\n}}\n",
        n * cols,
        vec![s.clone(); n as usize].join(", "),
        outs.join(", ")
    )
}

/// A transposed convolution whose kernel size is twice its dilation (every phase has the
/// same taps, at other offsets): NHWC, a 4x4 window, input dilation 2.
fn transposed(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (b, hw, c, f) = (
        rng.range(1, 2),
        rng.range(6, 10),
        rng.range(8, 24),
        rng.range(4, 12),
    );
    let out = 2 * hw;
    format!(
        "HloModule shared_phases\nENTRY e {{\n  x = f32[{b},{hw},{hw},{c}] parameter(0)\n  \
         w = f32[4,4,{c},{f}] parameter(1)\n  ROOT y = f32[{b},{out},{out},{f}] \
         convolution(x, w), window={{size=4x4 pad=2_2x2_2 lhs_dilate=2x2}}, \
         dim_labels=b01f_01io->b01f\n}}\n"
    )
}

/// Two 3x3 convolutions (NHWC, stride 1, padding 1) of one batch and features at sizes
/// 16 and 32, as a U-Net's levels: their patch kernels differ in the divisors
/// that split positions into rows and columns (`h` and `2h`), which a shared body takes
/// as shift amounts.
fn levels(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (b, c, f) = (rng.range(1, 2), rng.range(4, 12), rng.range(4, 12));
    // 16 and 32 (8 and 16 cut the patches into blocks of other shapes).
    let h = 16;
    let conv = |x: &str, w: &str, s: i64| {
        format!(
            "f32[{b},{s},{s},{f}] convolution({x}, {w}), window={{size=3x3 pad=1_1x1_1}}, \
             dim_labels=b01f_01io->b01f"
        )
    };
    format!(
        "HloModule shared_levels\nENTRY e {{\n  x = f32[{b},{h},{h},{c}] parameter(0)\n  \
         z = f32[{b},{h2},{h2},{c}] parameter(1)\n  w = f32[3,3,{c},{f}] parameter(2)\n  \
         v = f32[3,3,{c},{f}] parameter(3)\n  y = {}\n  u = {}\n  \
         ROOT t = (f32[{b},{h},{h},{f}], f32[{b},{h2},{h2},{f}]) tuple(y, u)\n}}\n",
        conv("x", "w", h),
        conv("z", "v", 2 * h),
        h2 = 2 * h,
    )
}

#[test]
fn kernels_sharing_a_body_match_the_reference_evaluator() {
    let options = gen::options("hloc-cache-shared-bodies");
    let mut failures = Vec::new();
    let (mut ran, mut shared) = (0, 0);
    for seed in gen::seeds(0..8) {
        let text = match seed % 4 {
            3 => transposed(seed),
            1 => levels(seed),
            _ => slices(seed),
        };
        let m = hlo::parse_module(&text).expect("parses");
        let args = gen::random_args(&m, seed);
        gen::check_inspecting(seed, (&m, &text), &args, &options, &mut failures, |exe| {
            let source = &exe.plan().source;
            // The levels' patch kernels share through their divisors' shift amounts.
            if source.contains("HLOC_NOCLONE void")
                && (seed % 4 != 1 || source.contains("hloc_p2_div_s32("))
            {
                shared += 1;
            }
        });
        ran += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(shared, ran, "modules sharing a kernel body");
}
