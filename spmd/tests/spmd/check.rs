//! The oracle the tests share: a module partitioned by `spmd`, evaluated on N devices by
//! the N-device reference evaluator from the global inputs split by the parameters'
//! shardings, its outputs assembled by the root's sharding, equals the global evaluation.

use hlo::{Literal, Module};
use hlo_eval::device::DeviceGrid;
use hlo_eval::multi_device::evaluate_on_devices;
use hlo_eval::multi_device_shards::{assemble_global, split_global};

/// The leaves of a literal, depth first.
pub fn leaves(l: Literal) -> Vec<Literal> {
    match l {
        Literal::Tuple(t) => t.into_iter().flat_map(leaves).collect(),
        other => vec![other],
    }
}

/// The global outputs of partitioned module `p` (of unpartitioned `module`) run on
/// `devices` devices from global arguments `args`.
pub fn run_partitioned(
    module: &Module,
    p: &Module,
    devices: usize,
    args: &[Literal],
) -> Result<Vec<Literal>, String> {
    let entry = p.entry();
    let mut per_device: Vec<Vec<Literal>> = vec![Vec::new(); devices];
    for (i, a) in args.iter().enumerate() {
        let param = entry.instr(entry.parameter(i).ok_or("missing parameter")?);
        let s = param.sharding().ok_or("a parameter without sharding")?;
        let shards = split_global(a, s, devices as i64, param.name()).map_err(|e| e.to_string())?;
        for (d, s) in shards.into_iter().enumerate() {
            per_device[d].push(s);
        }
    }
    let grid = DeviceGrid {
        replicas: 1,
        partitions: devices as i64,
    };
    let outs = evaluate_on_devices(p, grid, &per_device).map_err(|e| e.to_string())?;
    let per_device: Vec<Vec<Literal>> = outs.into_iter().map(leaves).collect();
    let s = entry
        .root_instr()
        .sharding()
        .ok_or("the root has no sharding")?;
    let shardings = s.leaves();
    // The global shapes: the unpartitioned module's outputs (shards may be padded).
    let global = module.entry().root_instr().shape();
    let shapes: Vec<hlo::Shape> = match global.is_tuple() {
        true => global.tuple_shapes().to_vec(),
        false => vec![global.clone()],
    };
    (0..shardings.len())
        .map(|i| {
            let pieces: Vec<Literal> = per_device.iter().map(|d| d[i].clone()).collect();
            assemble_global(&pieces, shardings[i], &shapes[i], "output").map_err(|e| e.to_string())
        })
        .collect()
}

/// Partitions `module` on `devices` devices, runs it on `args` and compares every output
/// with the global evaluation; the partitioned module, or why it differs.
pub fn check_module(
    module: &Module,
    devices: usize,
    args: &[Literal],
) -> Result<spmd::Partitioned, String> {
    let p = spmd::partition(module, devices).map_err(|e| e.to_string())?;
    let want = global_evaluation(module, devices, args)?;
    let got = run_partitioned(module, &p.module, devices, args)?;
    if got.len() != want.len() {
        return Err(format!(
            "{} outputs, the global evaluation has {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let (Some(g), Some(w)) = (g.as_array(), w.as_array()) else {
            return Err(format!("output {i} is not an array"));
        };
        let r = hlo_eval::report::compare_report(g, w, None);
        if !r.matches {
            return Err(format!(
                "output {i} differs from the global evaluation: {}\n{}",
                r.line(&format!("out{i}"), "", "global"),
                hlo::print_module(&p.module)
            ));
        }
    }
    Ok(p)
}

/// Whether `module` holds a manual region (GSPMD's `SPMDFullToShardShape` or Shardy's
/// `xla.sdy.GlobalToLocalShape`), whose body only means something on N devices.
fn has_manual_region(module: &Module) -> bool {
    module.computations.iter().any(|c| {
        c.instructions().any(|(_, i)| {
            matches!(
                i.custom_call_target(),
                Some("SPMDFullToShardShape" | "xla.sdy.GlobalToLocalShape")
            )
        })
    })
}

/// The global outputs of unpartitioned `module`: one evaluation, or, for a module with a
/// manual region, the evaluator's N-device run of the unpartitioned module (every device
/// holds the global values outside the region; the region's calls give each device its
/// piece and assemble the pieces again), where every device's outputs must agree.
pub fn global_evaluation(
    module: &Module,
    devices: usize,
    args: &[Literal],
) -> Result<Vec<Literal>, String> {
    if !has_manual_region(module) {
        return Ok(leaves(
            hlo_eval::evaluate(module, args).map_err(|e| e.to_string())?,
        ));
    }
    let grid = DeviceGrid {
        replicas: 1,
        partitions: devices as i64,
    };
    let per_device = vec![args.to_vec(); devices];
    let outs = evaluate_on_devices(module, grid, &per_device).map_err(|e| e.to_string())?;
    let mut outs = outs.into_iter().map(leaves);
    let first = outs.next().ok_or("no devices")?;
    for (d, other) in outs.enumerate() {
        if other != first {
            return Err(format!(
                "device {} of the global evaluation differs from device 0",
                d + 1
            ));
        }
    }
    Ok(first)
}

/// Random global arguments of `module`'s entry parameters.
pub fn random_args(module: &Module, seed: u64) -> Vec<Literal> {
    let entry = module.entry();
    (0..entry.parameters().len())
        .map(|n| {
            let shape = entry.instr(entry.parameters()[n]).shape();
            hlo_eval::random::random_literal(shape, seed, n as u64, 1 << 28)
                .expect("random argument")
        })
        .collect()
}

/// Runs `cases` random modules from `module_text` (given the generator and a device count of
/// 2, 4 or 8 in turn) through [`check_module`] and fails with every differing module's text:
/// the loop the random tests share, each test supplying only its generator.
pub fn check_random_modules(
    seed: u64,
    cases: usize,
    what: &str,
    module_text: impl Fn(&mut rand_xoshiro::SplitMix64, i64) -> String,
) {
    use rand_core::SeedableRng;
    let mut rng = rand_xoshiro::SplitMix64::seed_from_u64(seed);
    let mut failures = Vec::new();
    for case in 0..cases {
        let devices = [2i64, 4, 8][case % 3];
        let text = module_text(&mut rng, devices);
        let module =
            hlo::parse_module(&text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        if let Err(e) = check_module(
            &module,
            devices as usize,
            &random_args(&module, case as u64),
        ) {
            failures.push(format!("case {case} on {devices} devices: {e}\n{text}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} random {what} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
