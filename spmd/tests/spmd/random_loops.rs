//! Property test: random counted while loops — a carry of a counter, an activation and a
//! weight, each split at random (or whole) over 2, 4 or 8 devices, a body of a dot and
//! an elementwise op with, at random, a sharding constraint that moves the activation's
//! split (so the carry's tiling is refined in rounds, or the init resharded) — partitioned
//! and evaluated on their devices, equal the global evaluation.

use rand_core::Rng as _;
use rand_xoshiro::SplitMix64;

use crate::check::check_random_modules;

fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// A random sharding of a 2-D array of `dims` over `devices` devices (uneven shards
/// too), in XLA's text.
fn sharding(rng: &mut SplitMix64, dims: [i64; 2], devices: i64) -> String {
    let d = pick(rng, 3);
    if d == 2 {
        return "{replicated}".into();
    }
    let options: Vec<i64> = (2..=devices)
        .filter(|t| devices % t == 0 && *t <= 2 * dims[d])
        .collect();
    if options.is_empty() {
        return "{replicated}".into();
    }
    let t = options[pick(rng, options.len())];
    let mut tiles = [1, 1];
    tiles[d] = t;
    let rep = devices / t;
    match rep {
        1 => format!("{{devices=[{},{}]<=[{devices}]}}", tiles[0], tiles[1]),
        _ => format!(
            "{{devices=[{},{},{rep}]<=[{devices}] last_tile_dim_replicate}}",
            tiles[0], tiles[1]
        ),
    }
}

fn module_text(rng: &mut SplitMix64, devices: i64) -> String {
    let (r, c) = ([3i64, 4, 8, 9][pick(rng, 4)], [2i64, 4, 5][pick(rng, 3)]);
    let trips = 1 + pick(rng, 3);
    let sx = sharding(rng, [r, c], devices);
    let sw = sharding(rng, [c, c], devices);
    let op = ["tanh", "sine", "negate"][pick(rng, 3)];
    let constraint = match pick(rng, 2) {
        0 => format!(
            "  k = f32[{r},{c}] custom-call(t), custom_call_target=\"Sharding\", sharding={}\n",
            sharding(rng, [r, c], devices)
        ),
        _ => format!("  k = f32[{r},{c}] copy(t)\n"),
    };
    let carry = format!("(s32[], f32[{r},{c}], f32[{c},{c}])");
    format!(
        "HloModule random_loop\n\n\
         cond {{\n  c = {carry} parameter(0)\n  i = s32[] get-tuple-element(c), index=0\n  n = s32[] constant({trips})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n\n\
         body {{\n  b = {carry} parameter(0)\n  i = s32[] get-tuple-element(b), index=0\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  \
         h = f32[{r},{c}] get-tuple-element(b), index=1\n  w = f32[{c},{c}] get-tuple-element(b), index=2\n  \
         d = f32[{r},{c}] dot(h, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n  t = f32[{r},{c}] {op}(d)\n{constraint}  \
         ROOT r = {carry} tuple(j, k, w)\n}}\n\n\
         ENTRY e {{\n  x = f32[{r},{c}] parameter(0), sharding={sx}\n  w = f32[{c},{c}] parameter(1), sharding={sw}\n  \
         zero = s32[] constant(0)\n  init = {carry} tuple(zero, x, w)\n  l = {carry} while(init), condition=cond, body=body\n  \
         ROOT out = f32[{r},{c}] get-tuple-element(l), index=1\n}}\n"
    )
}

#[test]
fn partitioned_random_loops_equal_the_global_evaluation() {
    check_random_modules(353535, 90, "loops", module_text);
}
