//! `hloc run FILE --devices N` on a module that is not partitioned (issue 35 item 5):
//! hloc's partitioner (`spmd`) writes the per-device program from the module's
//! `sharding=` annotations, the GLOBAL inputs (`in<i>` of --inputs, or random) are split
//! per the entry parameters' shardings (device k gets partition k's piece), the program
//! runs on N devices, and the GLOBAL outputs are assembled per the root's shardings: printed
//! and written as `out<i>`, compared with --expect's `out<i>`, and with the reference
//! evaluator's global evaluation of the unpartitioned module (--check-reference).

use std::io::BufReader;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use hlo::literal::ArrayLiteral;
use hlo::{Literal, Module, Shape};
use hlo_eval::multi_device_shards::{assemble_global, split_global};
use hlo_eval::npy::{adapt_to, read_npz_from};

use crate::run_cmd::{flatten, output_entries, parameters, summary, write_outputs, RunArgs};
use crate::run_devices::{execute, print_time};

/// `hloc run --devices N`: a module that is not partitioned (no `num_partitions` or
/// `replica_count` above 1) on more than one device is partitioned here; any other goes
/// to `run_devices.rs` as it is.
pub fn dispatch(args: RunArgs) -> Result<ExitCode> {
    crate::run_mpi::check(&args)?;
    let module = crate::compile_cmd::read_module(&args.file, &mut Vec::new())?;
    let unpartitioned = hlo::collective_groups::Grid::of_module(&module).count() == 1;
    match args.devices.is_some_and(|n| n > 1) && unpartitioned {
        true => run(args, module),
        false => crate::run_devices::run(args, module),
    }
}

/// Partitions `module` on `--devices` devices and runs it on global inputs.
pub fn run(args: RunArgs, module: Module) -> Result<ExitCode> {
    let n = args.devices.unwrap_or(1);
    let partitioned = spmd::partition(&module, n).map_err(|e| anyhow!("partitioning: {e}"))?;
    let p = &partitioned.module;
    let memory_limit = args
        .max_memory
        .unwrap_or_else(hlo_eval::memory::default_size_limit);
    let globals = match &args.inputs {
        Some(path) => read_global_inputs(&module, path, memory_limit)?,
        None => parameters(&module)?
            .iter()
            .enumerate()
            .map(|(i, (name, shape))| {
                hlo_eval::random::random_literal(shape, args.seed, i as u64, memory_limit)
                    .map_err(|e| anyhow!("parameter {i} (`{name}`): {e}"))
            })
            .collect::<Result<_>>()?,
    };
    let entry = p.entry();
    let mut inputs: Vec<Vec<Literal>> = vec![Vec::new(); n];
    for (i, g) in globals.iter().enumerate() {
        let param = entry.instr(
            entry
                .parameter(i)
                .ok_or_else(|| anyhow!("the partitioned module has no parameter {i}"))?,
        );
        let s = param
            .sharding()
            .ok_or_else(|| anyhow!("partitioned parameter {i} has no sharding"))?;
        let shards =
            split_global(g, s, n as i64, param.name()).map_err(|e| anyhow!("in{i}: {e}"))?;
        for (k, shard) in shards.into_iter().enumerate() {
            inputs[k].push(shard);
        }
    }
    let grid = plan::Grid {
        replicas: 1,
        partitions: n as i64,
    };
    let start = Instant::now();
    let Some((per_device, timing_line)) =
        execute(p, grid, &inputs, &args, memory_limit / n.max(1) as u64)?
    else {
        // An MPI rank other than 0: rank 0 reports the run.
        return Ok(ExitCode::SUCCESS);
    };
    let elapsed = start.elapsed();
    let outputs = assemble(&module, p, &per_device)?;
    for (i, o) in outputs.iter().enumerate() {
        outln!("out{i}: {}", summary(o));
    }
    print_time(timing_line, args.no_timing, elapsed);
    if let Some(path) = &args.outputs {
        let entries = output_entries(
            outputs
                .iter()
                .enumerate()
                .map(|(i, o)| (format!("out{i}"), o)),
        );
        write_outputs(path, &entries)?;
    }
    let mut failed = false;
    if let Some(path) = &args.expect {
        let arrays = read_npz(path, memory_limit)?;
        failed |= !compare(&module, &outputs, "expected", |i| {
            let key = format!("out{i}");
            arrays
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, a)| a.clone())
                .ok_or_else(|| anyhow!("{} has no array {key}", path.display()))
        })?;
    }
    if args.check_reference {
        let mut want = Vec::new();
        flatten(
            hlo_eval::evaluate(&module, &globals).map_err(|e| anyhow!("reference: {e}"))?,
            &mut want,
        );
        failed |= !compare(&module, &outputs, "reference", |i| {
            want.get(i)
                .and_then(Literal::as_array)
                .cloned()
                .ok_or_else(|| anyhow!("the reference has no output {i}"))
        })?;
    }
    Ok(match failed {
        true => ExitCode::from(1),
        false => ExitCode::SUCCESS,
    })
}

/// The global outputs from every device's outputs, by the partitioned root's shardings
/// and the unpartitioned module's output shapes.
fn assemble(module: &Module, p: &Module, per_device: &[Vec<Literal>]) -> Result<Vec<Literal>> {
    let root = p.entry().root_instr();
    let sharding = root
        .sharding()
        .ok_or_else(|| anyhow!("the partitioned root has no sharding"))?;
    let shardings = sharding.leaves();
    let global = module.entry().root_instr().shape();
    let shapes: Vec<Shape> = match global.is_tuple() {
        true => global.tuple_shapes().to_vec(),
        false => vec![global.clone()],
    };
    if shapes.len() != shardings.len() {
        bail!(
            "{} outputs but {} output shardings",
            shapes.len(),
            shardings.len()
        );
    }
    (0..shapes.len())
        .map(|i| {
            let pieces: Vec<Literal> = per_device
                .iter()
                .map(|d| d.get(i).cloned())
                .collect::<Option<_>>()
                .ok_or_else(|| anyhow!("a device has no output {i}"))?;
            assemble_global(&pieces, shardings[i], &shapes[i], &format!("out{i}"))
                .map_err(|e| anyhow!("out{i}: {e}"))
        })
        .collect()
}

fn read_npz(path: &Path, limit: u64) -> Result<Vec<(String, ArrayLiteral)>> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| anyhow!("cannot read {shown}: {e}"))?;
    read_npz_from(BufReader::new(file), limit).map_err(|e| anyhow!("{shown}: {e}"))
}

/// The global arguments `in<i>` of the npz, one per entry parameter.
fn read_global_inputs(module: &Module, path: &Path, limit: u64) -> Result<Vec<Literal>> {
    let arrays = read_npz(path, limit)?;
    parameters(module)?
        .iter()
        .enumerate()
        .map(|(i, (name, shape))| {
            let key = format!("in{i}");
            let a = arrays
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, a)| a.clone())
                .ok_or_else(|| {
                    anyhow!(
                        "{} has no array {key} for parameter {i} (`{name}`): a module hloc \
                         partitions takes the GLOBAL arrays in<i>",
                        path.display()
                    )
                })?;
            adapt_to(a, shape, &key)
                .map(Literal::Array)
                .map_err(|e| anyhow!("{}: {e}", path.display()))
        })
        .collect()
}

/// Compares every output with `want(i)` at its last rounding's precision, printing a
/// line per output (`expect: ...` / `check-reference: ...`); true when all match.
fn compare(
    module: &Module,
    outputs: &[Literal],
    what: &str,
    mut want: impl FnMut(usize) -> Result<ArrayLiteral>,
) -> Result<bool> {
    let precision = hlo_eval::report::rounding_types(module);
    let mut bad = 0;
    for (i, got) in outputs.iter().enumerate() {
        let got = got
            .as_array()
            .ok_or_else(|| anyhow!("out{i}: not an array"))?;
        let w = adapt_to(want(i)?, got.shape(), &format!("out{i}")).map_err(|e| anyhow!("{e}"))?;
        let r = hlo_eval::report::compare_report(got, &w, precision.get(i).copied().flatten());
        let shape = got.shape().to_string_without_layout();
        let prefix = match what {
            "expected" => "expect",
            _ => "check-reference",
        };
        outln!("{prefix}: {}", r.line(&format!("out{i}"), &shape, what));
        bad += usize::from(!r.matches);
    }
    if bad > 0 {
        eprintln!(
            "{bad} of {} outputs differ from the {what} ones",
            outputs.len()
        );
    }
    Ok(bad == 0)
}
