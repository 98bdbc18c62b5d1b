//! Property test: a split moved from one dimension to another (a `Sharding` constraint
//! asking for it) keeps the global array. Random rank-3 arrays over 2, 4 or 8 devices,
//! another dimension split or replication alongside, devices in a random order; the
//! target's devices either follow the moved split (one all-to-all does it, and must be
//! what the partitioner emits) or are shuffled (all-gather and dynamic-slice), sizes
//! that the tiles do not divide among them (padded shards, no all-to-all).

use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::SplitMix64;

use crate::check::{check_module, random_args};

fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// Row-major tile index of tile number `q` of `tiles`.
fn unravel(mut q: i64, tiles: &[i64]) -> Vec<i64> {
    let mut idx = vec![0; tiles.len()];
    for d in (0..tiles.len()).rev() {
        idx[d] = q % tiles[d];
        q /= tiles[d];
    }
    idx
}

/// XLA's text of tiles `tiles` (data dimensions, then the replication) over `list`.
fn text(tiles: &[i64], list: &[i64]) -> String {
    let n: i64 = tiles.iter().product();
    let dims: Vec<String> = tiles.iter().map(i64::to_string).collect();
    let devs: Vec<String> = list.iter().map(i64::to_string).collect();
    match tiles.last() {
        _ if n == 1 => "{replicated}".into(),
        Some(&r) if r > 1 => format!(
            "{{devices=[{}]{} last_tile_dim_replicate}}",
            dims.join(","),
            devs.join(",")
        ),
        _ => format!("{{devices=[{}]{}}}", dims[..3].join(","), devs.join(",")),
    }
}

/// A random module (text) and whether one all-to-all should do its reshard.
fn module_text(rng: &mut SplitMix64, devices: i64) -> (String, bool) {
    let sizes = [2i64, 4, 6, 8, 8, 3, 5];
    let dims: Vec<i64> = (0..3).map(|_| sizes[pick(rng, sizes.len())]).collect();
    let a = pick(rng, 3);
    let b = (a + 1 + pick(rng, 2)) % 3;
    let c = 3 - a - b;
    let ks: Vec<i64> = [2, 4, 8].into_iter().filter(|k| devices % k == 0).collect();
    let k = ks[pick(rng, ks.len())];
    let ms: Vec<i64> = [1, 2]
        .into_iter()
        .filter(|m| devices % (k * m) == 0)
        .collect();
    let m = ms[pick(rng, ms.len())];
    let rep = devices / (k * m);
    // from: k along a, m along c; to: k along b, m along c.
    let mut from = vec![1i64; 4];
    from[a] = k;
    from[c] = m;
    from[3] = rep;
    let mut to = from.clone();
    to[a] = 1;
    to[b] = k;
    let mut list: Vec<i64> = (0..devices).collect();
    for i in (1..list.len()).rev() {
        list.swap(i, pick(rng, i + 1));
    }
    // The device at position q of `list` holds from-tile unravel(q); under the target it
    // holds the same tile with a's index moved to b (ties keep their order).
    let mut keyed: Vec<(i64, i64)> = list
        .iter()
        .enumerate()
        .map(|(q, &d)| {
            let mut idx = unravel(q as i64, &from);
            idx[b] = idx[a];
            idx[a] = 0;
            let key = idx.iter().zip(&to).fold(0, |acc, (&i, &t)| acc * t + i);
            (key, d)
        })
        .collect();
    keyed.sort();
    let mut to_list: Vec<i64> = keyed.into_iter().map(|(_, d)| d).collect();
    let follows = pick(rng, 4) != 0;
    if !follows {
        for i in (1..to_list.len()).rev() {
            to_list.swap(i, pick(rng, i + 1));
        }
    }
    let even = dims[a] % k == 0 && dims[b] % k == 0;
    let [d0, d1, d2] = [dims[0], dims[1], dims[2]];
    let text = format!(
        "HloModule reshard\n\nENTRY e {{\n  p = f32[{d0},{d1},{d2}] parameter(0), sharding={}\n  \
         s = f32[{d0},{d1},{d2}] custom-call(p), custom_call_target=\"Sharding\", sharding={}\n  \
         ROOT n = f32[{d0},{d1},{d2}] negate(s)\n}}\n",
        text(&from, &list),
        text(&to, &to_list),
    );
    (text, follows && even)
}

#[test]
fn moved_splits_keep_the_global_array() {
    let mut rng = SplitMix64::seed_from_u64(3535);
    let mut failures = Vec::new();
    let mut all_to_alls = 0;
    let cases = 120;
    for case in 0..cases {
        let devices = [2i64, 4, 8][case % 3];
        let (text, one_all_to_all) = module_text(&mut rng, devices);
        let module =
            hlo::parse_module(&text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        match check_module(
            &module,
            devices as usize,
            &random_args(&module, case as u64),
        ) {
            Err(e) => failures.push(format!("case {case} on {devices} devices: {e}\n{text}")),
            Ok(p) => {
                let printed = hlo::print_module(&p.module);
                let has = printed.contains("all-to-all(");
                if one_all_to_all {
                    all_to_alls += 1;
                    if !has || printed.contains("all-gather(") {
                        failures.push(format!(
                            "case {case}: one all-to-all expected\n{text}\n{printed}"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} reshards fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        all_to_alls >= cases / 4,
        "only {all_to_alls} all-to-all cases"
    );
}
