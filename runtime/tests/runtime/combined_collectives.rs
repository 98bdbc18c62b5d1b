//! Randomized differential test of combined collectives (XLA's combiners' form, which
//! the CPU runtime moves as one message per step): all-reduces, all-gathers and
//! reduce-scatters of 2-4 operands of different shapes and layouts (f32 or s32; gathered
//! and scattered along one dimension), over random groups on 2, 4 or 8 devices; every
//! device's outputs must equal the N-device reference evaluator's.

use crate::gen::{list, seeds, Rng};

/// One random module text with one combined collective (and a kernel reading a result).
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n: i64 = *rng.pick(&[2, 4, 8]);
    let sizes: Vec<i64> = (1..=n).filter(|s| n % s == 0 && *s > 1).collect();
    let size = *rng.pick(&sizes);
    let mut ids: Vec<i64> = (0..n).collect();
    rng.shuffle(&mut ids);
    let groups: Vec<String> = ids
        .chunks(size as usize)
        .map(|g| format!("{{{}}}", list(g)))
        .collect();
    let rg = format!("{{{}}}", groups.join(","));
    let kind = rng.below(3);
    let operands = 2 + rng.below(3);
    // The gathered or scattered dimension; every operand has at least two dimensions.
    let d = rng.below(2);
    let mut params = Vec::new();
    let mut results = Vec::new();
    // One element type per module (the reducer computation is typed); the runtime's
    // split of mixed types into one message each is collective_pack's unit test.
    let ty = *rng.pick(&["f32", "s32"]);
    for i in 0..operands {
        let rank = 2 + rng.below(2);
        let dims: Vec<i64> = (0..rank)
            .map(|_| size * (1 + rng.below(3) as i64))
            .collect();
        let mut perm: Vec<i64> = (0..rank as i64).collect();
        rng.shuffle(&mut perm);
        let layout = format!("{{{}}}", list(&perm));
        let mut out = dims.clone();
        match kind {
            1 => out[d] *= size,
            2 => out[d] /= size,
            _ => {}
        }
        params.push(format!(
            "  p{i} = {ty}[{}]{layout} parameter({i})",
            list(&dims)
        ));
        results.push(format!("{ty}[{}]{layout}", list(&out)));
    }
    let names: Vec<String> = (0..operands).map(|i| format!("p{i}")).collect();
    let tuple = format!("({})", results.join(", "));
    let op = match kind {
        0 => format!(
            "all-reduce({}), channel_id=1, replica_groups={rg}, use_global_device_ids=true, to_apply=add_{ty}",
            names.join(", ")
        ),
        1 => format!(
            "all-gather({}), channel_id=1, replica_groups={rg}, use_global_device_ids=true, dimensions={{{d}}}",
            names.join(", ")
        ),
        _ => format!(
            "reduce-scatter({}), channel_id=1, replica_groups={rg}, use_global_device_ids=true, dimensions={{{d}}}, to_apply=add_{ty}",
            names.join(", ")
        ),
    };
    let mut body = params;
    body.push(format!("  c = {tuple} {op}"));
    let mut roots = Vec::new();
    for (i, r) in results.iter().enumerate() {
        body.push(format!("  g{i} = {r} get-tuple-element(c), index={i}"));
        roots.push(format!("g{i}"));
    }
    // A kernel reading the first result.
    body.push(format!("  k = {} add(g0, g0)", results[0]));
    roots.push("k".into());
    let shapes: Vec<String> = results
        .iter()
        .cloned()
        .chain(std::iter::once(results[0].clone()))
        .collect();
    let adds: String = ["f32", "s32"]
        .iter()
        .map(|t| {
            format!(
                "add_{t} {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n  ROOT r = {t}[] add(a, b)\n}}\n\n"
            )
        })
        .collect();
    format!(
        "HloModule m, num_partitions={n}\n\n{adds}ENTRY e {{\n{}\n  ROOT t = ({}) tuple({})\n}}\n",
        body.join("\n"),
        shapes.join(", "),
        roots.join(", ")
    )
}

#[test]
fn combined_collectives_match_the_n_device_evaluator() {
    let options = crate::gen::options("combined_collectives");
    let mut failures = Vec::new();
    for seed in seeds(0..16) {
        crate::gen::check_on_devices(seed, &module(seed), &options, &mut failures);
    }
    crate::gen::assert_none(&failures);
}
