//! Randomized differential test of collectives as program steps (issue 35 item 4):
//! modules partitioned for 2, 4 or 8 devices with random collectives (all-reduce with
//! every reducer, all-gather, reduce-scatter and all-to-all along random dimensions of
//! random layouts, tuple all-to-all, collective-permute with random pairs, the async
//! all-reduce and all-gather pairs with work between start and done, replica and partition
//! ids) over random replica groups in every group mode, compiled once and run on their
//! devices in this process; every device's outputs must equal the N-device reference
//! evaluator's.

use crate::gen::{list, seeds, Rng};

fn groups_text(groups: &[Vec<i64>]) -> String {
    let g: Vec<String> = groups.iter().map(|g| format!("{{{}}}", list(g))).collect();
    format!("{{{}}}", g.join(","))
}

/// `ids` split at random into groups of one random size that divides their count.
fn random_groups(rng: &mut Rng, ids: i64) -> Vec<Vec<i64>> {
    let sizes: Vec<i64> = (1..=ids).filter(|s| ids % s == 0).collect();
    let size = *rng.pick(&sizes);
    let mut v: Vec<i64> = (0..ids).collect();
    rng.shuffle(&mut v);
    v.chunks(size as usize).map(<[i64]>::to_vec).collect()
}

/// One random module text.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let n: i64 = *rng.pick(&[2, 4, 4, 8]);
    // Partitions (channel ids) or replicas (cross-replica, no channel id).
    let by_replica = rng.below(4) == 0;
    let header = match by_replica {
        true => format!("HloModule m, replica_count={n}"),
        false => format!("HloModule m, num_partitions={n}"),
    };
    let ty = *rng.pick(&["f32", "s32"]);
    let reducer = *rng.pick(&["add", "maximum", "minimum", "multiply"]);
    let rank = 1 + rng.below(3);
    // Every dimension a multiple of n, so any of them splits into any group's pieces.
    let dims: Vec<i64> = (0..rank).map(|_| n * (1 + rng.below(2) as i64)).collect();
    let mut perm: Vec<i64> = (0..rank as i64).collect();
    rng.shuffle(&mut perm);
    let layout = format!("{{{}}}", list(&perm));
    let shape = |d: &[i64]| format!("{ty}[{}]{layout}", list(d));
    let p = shape(&dims);
    let mut body = vec![
        format!("  p0 = {p} parameter(0)"),
        format!("  p1 = {p} parameter(1)"),
    ];
    let mut roots = Vec::new();
    let steps = 1 + rng.below(4);
    for s in 0..steps {
        let groups = random_groups(&mut rng, n);
        let size = groups[0].len() as i64;
        let mode = match by_replica {
            true => String::new(),
            false => ", channel_id=1, use_global_device_ids=true".to_string(),
        };
        let rg = groups_text(&groups);
        let d = rng.below(rank);
        let x = format!("c{s}");
        let operand = *rng.pick(&["p0", "p1"]);
        let line = match rng.below(8) {
            0 | 1 => format!(
                "  {x} = {p} all-reduce({operand}), replica_groups={rg}{mode}, to_apply=red"
            ),
            2 => {
                let mut od = dims.clone();
                od[d] *= size;
                format!(
                    "  {x} = {} all-gather({operand}), replica_groups={rg}{mode}, dimensions={{{d}}}",
                    shape(&od)
                )
            }
            3 => {
                let mut od = dims.clone();
                od[d] /= size;
                format!(
                    "  {x} = {} reduce-scatter({operand}), replica_groups={rg}{mode}, dimensions={{{d}}}, to_apply=red",
                    shape(&od)
                )
            }
            4 => {
                let channel = if by_replica { "" } else { ", channel_id=1" };
                format!(
                    "  {x} = {p} all-to-all({operand}), replica_groups={rg}{channel}, dimensions={{{d}}}"
                )
            }
            5 => {
                // A random partial permutation of the scope.
                let mut targets: Vec<i64> = (0..n).collect();
                rng.shuffle(&mut targets);
                let pairs: Vec<String> = (0..n)
                    .filter(|_| rng.below(4) != 0)
                    .map(|s| format!("{{{s},{}}}", targets[s as usize]))
                    .collect();
                let channel = if by_replica { "" } else { ", channel_id=1" };
                format!(
                    "  {x} = {p} collective-permute({operand}), source_target_pairs={{{}}}{channel}",
                    pairs.join(",")
                )
            }
            6 => {
                // An async all-reduce with independent work between start and done.
                body.push(format!(
                    "  {x}.s = {p} all-reduce-start({operand}), replica_groups={rg}{mode}, to_apply=red"
                ));
                body.push(format!("  {x}.w = {p} negate(p0)"));
                roots.push(format!("{x}.w"));
                format!("  {x} = {p} all-reduce-done({x}.s)")
            }
            _ => {
                let mut od = dims.clone();
                od[d] *= size;
                let o = shape(&od);
                body.push(format!(
                    "  {x}.s = ({p}, {o}) all-gather-start({operand}), replica_groups={rg}{mode}, dimensions={{{d}}}"
                ));
                body.push(format!("  {x}.w = {p} add(p0, p1)"));
                roots.push(format!("{x}.w"));
                format!("  {x} = {o} all-gather-done({x}.s)")
            }
        };
        body.push(line);
        // Some results go through a kernel first.
        if rng.below(2) == 0 {
            let sh = body
                .last()
                .and_then(|l| l.split(" = ").nth(1))
                .and_then(|r| r.split(' ').next())
                .unwrap_or_default()
                .to_string();
            body.push(format!("  {x}.k = {sh} add({x}, {x})"));
            roots.push(format!("{x}.k"));
        } else {
            roots.push(x);
        }
    }
    if rng.below(2) == 0 {
        body.push("  pid = u32[] partition-id()".into());
        body.push("  rid = u32[] replica-id()".into());
        roots.push("pid".into());
        roots.push("rid".into());
    }
    let shapes: Vec<String> = roots
        .iter()
        .map(|r| {
            body.iter()
                .find_map(|l| l.strip_prefix(&format!("  {r} = ")))
                .and_then(|rest| rest.split(' ').next())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    format!(
        "{header}\n\nred {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT r = {ty}[] {reducer}(a, b)\n}}\n\nENTRY e {{\n{}\n  ROOT t = ({}) tuple({})\n}}\n",
        body.join("\n"),
        shapes.join(", "),
        roots.join(", ")
    )
}

#[test]
fn random_collectives_match_the_n_device_evaluator() {
    let options = crate::gen::options("random_collectives");
    let mut failures = Vec::new();
    let mut ran = 0;
    for seed in seeds(0..24) {
        crate::gen::check_on_devices(seed, &module(seed), &options, &mut failures);
        ran += 1;
    }
    assert!(ran > 0);
    crate::gen::assert_none(&failures);
}

/// A module partitioned for 4 devices is refused on 2, and without a device count.
#[test]
fn a_module_of_fewer_devices_than_asked_is_refused() {
    let m = hlo::parse_module(
        "HloModule m, num_partitions=4\n\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] negate(p)\n}\n",
    )
    .expect("parses");
    let e = runtime::device_grid(&m, Some(2)).unwrap_err();
    assert!(e.contains("partitioned for 4 devices"), "{e}");
    let e = runtime::device_grid(&m, None).unwrap_err();
    assert!(e.contains("--devices 4"), "{e}");
}
