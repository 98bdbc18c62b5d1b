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

/// A random transpose (or layout-changing copy) between random layouts, with an
/// elementwise prologue and an epilogue that reads a second operand at the output index,
/// so that GPU fusion gives the transpose emitter a hero with both.
fn random_transpose(seed: u64) -> String {
    use crate::gen::{list, shape, Rng};
    let mut rng = Rng::new(seed);
    let ty = *rng.pick(&["f32", "f16", "s8", "f64", "s32"]);
    let rank = 2 + rng.below(3);
    let dims: Vec<i64> = (0..rank)
        .map(|_| match rng.below(3) {
            0 => rng.range(1, 5),
            _ => rng.range(15, 70),
        })
        .collect();
    let mut perm: Vec<usize> = (0..rank).collect();
    rng.shuffle(&mut perm);
    let copy = rng.below(4) == 0;
    let out_dims: Vec<i64> = if copy {
        dims.clone()
    } else {
        perm.iter().map(|&p| dims[p]).collect()
    };
    let x = shape(&mut rng, ty, &dims);
    let o = shape(&mut rng, ty, &out_dims);
    let hero = if copy {
        format!("  t = {o} copy(pre)")
    } else {
        format!("  t = {o} transpose(pre), dimensions={{{}}}", list(&perm))
    };
    let (pre, post) = if ty.starts_with('f') {
        ("abs", "add")
    } else {
        ("negate", "maximum")
    };
    format!(
        "HloModule t\nENTRY e {{\n  x = {x} parameter(0)\n  y = {o} parameter(1)\n  \
         pre = {x} {pre}(x)\n{hero}\n  ROOT r = {o} {post}(t, y)\n}}\n"
    )
}

/// The random transposes as CUDA C on the host emulation (the transpose emitter's shared
/// tile and barrier where the hero transposes physical dimensions, the loop emitter
/// elsewhere), against the reference evaluator.
#[test]
fn random_transposes_on_the_cuda_host_match_the_reference_evaluator() {
    let mut options = crate::gen::options("hloc-cache-transposes-cuda-host");
    options.cuda_host = true;
    let mut failures = Vec::new();
    for seed in crate::gen::seeds(0..30) {
        let text = random_transpose(seed);
        let m = crate::gen::parse(seed, &text);
        let args = crate::gen::random_args(&m, seed);
        crate::gen::check(seed, (&m, &text), &args, &options, &mut failures);
    }
    crate::gen::assert_none(&failures);
}
