//! Property test: random annotated modules (a dot, an elementwise op, optionally a
//! sharding constraint and a transpose, a reduce) with random shardings over 2, 4 or 8
//! devices — tiles per dimension, partial replication, devices in a random order, sizes
//! the tiles do not divide (padded shards) — some parameters left unannotated so that
//! only backward propagation (from a constraint or the root's tuple sharding) shards
//! them, partitioned and evaluated on their devices equal the global evaluation.

use rand_core::Rng as _;
use rand_xoshiro::SplitMix64;

use crate::check::check_random_modules;

/// A deterministic choice from `0..n`.
fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// A random sharding of a `[d0, d1]` array over `devices` devices, in XLA's text.
fn sharding(rng: &mut SplitMix64, dims: [i64; 2], devices: i64) -> String {
    // Any tile count of the devices up to twice the size: uneven and empty shards too.
    let divisors = |n: i64| {
        (1..=devices)
            .filter(|t| devices % t == 0 && *t <= 2 * n)
            .collect::<Vec<_>>()
    };
    let t0s = divisors(dims[0]);
    let t0 = t0s[pick(rng, t0s.len())];
    let t1s: Vec<i64> = divisors(dims[1])
        .into_iter()
        .filter(|t| devices % (t0 * t) == 0)
        .collect();
    let t1 = t1s[pick(rng, t1s.len())];
    if t0 * t1 == 1 {
        return "{replicated}".into();
    }
    let mut order: Vec<i64> = (0..devices).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, pick(rng, i + 1));
    }
    let list: Vec<String> = order.iter().map(i64::to_string).collect();
    let rep = devices / (t0 * t1);
    match rep {
        1 => format!("{{devices=[{t0},{t1}]{}}}", list.join(",")),
        _ => format!(
            "{{devices=[{t0},{t1},{rep}]{} last_tile_dim_replicate}}",
            list.join(",")
        ),
    }
}

/// A random module over `devices` devices.
fn module_text(rng: &mut SplitMix64, devices: i64) -> String {
    let sizes = [2i64, 3, 4, 5, 6, 8];
    let (a, b, c) = (
        sizes[pick(rng, 6)],
        sizes[pick(rng, 6)],
        sizes[pick(rng, 6)],
    );
    let s0 = sharding(rng, [a, b], devices);
    let s1 = sharding(rng, [b, c], devices);
    let s2 = sharding(rng, [a, c], devices);
    let op = ["add", "multiply", "subtract", "maximum"][pick(rng, 4)];
    // A parameter left unannotated (one in three) takes its users' hint or stays whole.
    let mut annotate = |s: String| match pick(rng, 3) {
        0 => String::new(),
        _ => format!(", sharding={s}"),
    };
    let (s0, s1, s2) = (annotate(s0), annotate(s1), annotate(s2));
    let mut body = vec![
        format!("  p0 = f32[{a},{b}] parameter(0){s0}"),
        format!("  p1 = f32[{b},{c}] parameter(1){s1}"),
        format!("  p2 = f32[{a},{c}] parameter(2){s2}"),
        format!("  d = f32[{a},{c}] dot(p0, p1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"),
        format!("  m = f32[{a},{c}] {op}(d, p2)"),
    ];
    let mut last = "m".to_string();
    if pick(rng, 2) == 0 {
        let s3 = sharding(rng, [a, c], devices);
        body.push(format!(
            "  k = f32[{a},{c}] custom-call(m), custom_call_target=\"Sharding\", sharding={s3}"
        ));
        last = "k".into();
    }
    let mut dims = [a, c];
    if pick(rng, 2) == 0 {
        body.push(format!(
            "  t = f32[{c},{a}] transpose({last}), dimensions={{1,0}}"
        ));
        last = "t".into();
        dims = [c, a];
    }
    let (reducer, init) = [("add", "0"), ("max", "-inf")][pick(rng, 2)];
    let (rdims, kept) = match pick(rng, 3) {
        0 => ("0", format!("[{}]", dims[1])),
        1 => ("1", format!("[{}]", dims[0])),
        _ => ("0,1", "[]".to_string()),
    };
    body.push(format!("  init = f32[] constant({init})"));
    body.push(format!(
        "  r = f32{kept} reduce({last}, init), dimensions={{{rdims}}}, to_apply={reducer}"
    ));
    // The root's tuple sharding (JAX's out_shardings), one module in three.
    let root_sharding = match pick(rng, 3) {
        0 => format!(
            ", sharding={{{}, {{replicated}}}}",
            sharding(rng, dims, devices)
        ),
        _ => String::new(),
    };
    body.push(format!(
        "  ROOT out = (f32[{},{}], f32{kept}) tuple({last}, r){root_sharding}",
        dims[0], dims[1]
    ));
    format!(
        "HloModule random\n\nadd {{\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}}\n\n\
         max {{\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] maximum(x, y)\n}}\n\n\
         ENTRY e {{\n{}\n}}\n",
        body.join("\n")
    )
}

#[test]
fn partitioned_random_modules_equal_the_global_evaluation() {
    check_random_modules(35, 90, "modules", module_text);
}
