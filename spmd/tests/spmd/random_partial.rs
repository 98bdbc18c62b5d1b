//! Property test: random partially manual regions (GSPMD's form of
//! `shard_map(..., axis_names={manual})`) on a mesh of an automatic and a manual axis
//! (2 = 2x1 or 1x2, 4 = 2x2, 8 = 2x4 or 4x2, either axis major), the input split over the
//! automatic axis or whole outside (its rows even or not), with or without the automatic
//! axes left open at the boundary (`unspecified_dims`), a dot in the body and one of the
//! manual collectives (psum, all_gather, ppermute, psum_scatter), partitioned and
//! evaluated on their devices equal the global evaluation.

use rand_core::Rng as _;
use rand_xoshiro::SplitMix64;

use crate::check::check_random_modules;

/// A deterministic choice from `0..n`.
fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// Devices listed by manual coordinate, then automatic: `dev(i, j)` for automatic
/// coordinate `i` and manual `j`, with the mesh's major axis first in device order.
fn listing(auto: i64, manual: i64, auto_major: bool) -> (Vec<i64>, impl Fn(i64, i64) -> i64) {
    let dev = move |i: i64, j: i64| match auto_major {
        true => i * manual + j,
        false => j * auto + i,
    };
    let list = (0..manual)
        .flat_map(|j| (0..auto).map(move |i| dev(i, j)))
        .collect();
    (list, dev)
}

/// A random module with a partially manual region over `devices` devices.
fn module_text(rng: &mut SplitMix64, devices: i64) -> String {
    let (auto, manual) = match devices {
        2 => [(2, 1), (1, 2)][pick(rng, 2)],
        4 => (2, 2),
        _ => [(2, 4), (4, 2)][pick(rng, 2)],
    };
    let auto_major = pick(rng, 2) == 0;
    let (list, dev) = listing(auto, manual, auto_major);
    let ids = list
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    // Rows split over the automatic axis (evenly or not) or whole.
    let rows = [auto * 2, auto * 3, 5][pick(rng, 3)];
    let (c, k) = (manual * 2, manual * [1, 2][pick(rng, 2)]);
    let x_sharding = match pick(rng, 3) {
        0 => "{replicated}".to_string(),
        _ => {
            // Rows by the automatic coordinate, replicated over the manual one.
            let by_auto = (0..auto)
                .flat_map(|i| (0..manual).map(move |j| (i, j)))
                .map(|(i, j)| dev(i, j).to_string())
                .collect::<Vec<_>>()
                .join(",");
            format!("{{devices=[{auto},1,{manual}]{by_auto} last_tile_dim_replicate}}")
        }
    };
    let open = match pick(rng, 2) {
        0 => ", backend_config=\"unspecified_dims=[0,1]\"",
        _ => "",
    };
    let manual_dims = |data: &str| {
        format!("{{devices=[{data},{manual},{auto}]{ids} last_tile_dims={{manual, replicated}}}}")
    };
    let split = |dims: &str| format!("{{devices=[{dims},{auto}]{ids} last_tile_dim_replicate}}");
    let in_body = manual_dims("1,1");
    let groups = (0..auto)
        .map(|i| {
            let g: Vec<String> = (0..manual).map(|j| dev(i, j).to_string()).collect();
            format!("{{{}}}", g.join(","))
        })
        .collect::<Vec<_>>()
        .join(",");
    let pairs = (0..auto)
        .flat_map(|i| (0..manual).map(move |j| (i, j)))
        .map(|(i, j)| format!("{{{},{}}}", dev(i, j), dev(i, (j + 1) % manual)))
        .collect::<Vec<_>>()
        .join(",");
    let (cm, km) = (c / manual, k);
    let mut body = vec![
        format!("  x = f32[{rows},{c}] parameter(0), sharding={x_sharding}"),
        format!("  w = f32[{c},{km}] parameter(1), sharding={{replicated}}"),
        format!("  tx = f32[{rows},{c}] tanh(x)"),
        format!(
            "  sx = f32[{rows},{c}] custom-call(tx), custom_call_target=\"Sharding\", sharding={}{open}",
            split(&format!("1,{manual}"))
        ),
        format!(
            "  mx = f32[{rows},{cm}] custom-call(sx), custom_call_target=\"SPMDFullToShardShape\", sharding={in_body}"
        ),
        format!(
            "  sw = f32[{c},{km}] custom-call(w), custom_call_target=\"Sharding\", sharding={}{open}",
            split(&format!("{manual},1"))
        ),
        format!(
            "  mw = f32[{cm},{km}] custom-call(sw), custom_call_target=\"SPMDFullToShardShape\", sharding={in_body}"
        ),
        format!("  d = f32[{rows},{km}] dot(mx, mw), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"),
        "  zero = f32[] constant(0)".to_string(),
        format!("  zb = f32[{rows},{km}] broadcast(zero), dimensions={{}}"),
        format!(
            "  zm = f32[{rows},{km}] custom-call(zb), custom_call_target=\"Sharding\", sharding={in_body}"
        ),
        format!("  h = f32[{rows},{km}] maximum(d, zm)"),
    ];
    // The collective, the body result's width and whether every manual coordinate ends
    // with the same value (then the region's output is whole, else split by it).
    let (line, width, same) = match pick(rng, 4) {
        0 => (
            format!("  y = f32[{rows},{km}] all-reduce(h), channel_id=1, replica_groups={{{groups}}}, use_global_device_ids=true, to_apply=add"),
            km,
            true,
        ),
        1 => (
            format!("  y = f32[{rows},{}] all-gather(h), channel_id=1, replica_groups={{{groups}}}, dimensions={{1}}, use_global_device_ids=true", km * manual),
            km * manual,
            true,
        ),
        2 => (
            format!("  y = f32[{rows},{km}] collective-permute(h), channel_id=1, source_target_pairs={{{pairs}}}"),
            km,
            false,
        ),
        _ => (
            format!("  y = f32[{rows},{}] reduce-scatter(h), channel_id=1, replica_groups={{{groups}}}, use_global_device_ids=true, dimensions={{1}}, to_apply=add", km / manual),
            km / manual,
            false,
        ),
    };
    body.push(line);
    body.push(format!(
        "  ky = f32[{rows},{width}] custom-call(y), custom_call_target=\"Sharding\", sharding={in_body}"
    ));
    let (global, out) = match same {
        true => (width, "{replicated}".to_string()),
        false => (width * manual, split(&format!("1,{manual}"))),
    };
    body.push(format!(
        "  fy = f32[{rows},{global}] custom-call(ky), custom_call_target=\"SPMDShardToFullShape\", sharding={out}"
    ));
    body.push(format!("  ROOT o = f32[{rows},{global}] sine(fy)"));
    format!(
        "HloModule random_partial\n\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}}\n\n\
         ENTRY e {{\n{}\n}}\n",
        body.join("\n")
    )
}

#[test]
fn partitioned_partially_manual_regions_equal_the_global_evaluation() {
    check_random_modules(36, 60, "partially manual regions", module_text);
}
