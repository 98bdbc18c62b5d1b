//! `hloc run FILE --devices N` on an already-partitioned module (issue 35 item 5): XLA's
//! per-device program (its header's `num_partitions` x `replica_count` devices) run on N
//! devices in this process, each on its own arguments: the npz holds `in<i>.dev<k>`
//! (parameter `i` of device `k`; random per device without `--inputs`), and the outputs
//! are `out<i>.dev<k>`, printed, written and checked (`--check-reference`: the N-device
//! reference evaluator on the same arguments) per device.

use std::io::BufReader;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use hlo::literal::ArrayLiteral;
use hlo::{Literal, Module};
use hlo_eval::npy::{adapt_to, read_npz_from};

use crate::run_cmd::{
    flatten, output_entries, parameters, summary, write_outputs, Backend, RunArgs,
};

/// How long a device waits at a collective for the others.
const COLLECTIVE_TIMEOUT: Duration = Duration::from_secs(120);

/// `hloc run --devices N` on a partitioned `module` (read by `run_global::dispatch`).
pub fn run(args: RunArgs, module: Module) -> Result<ExitCode> {
    let grid = runtime::device_grid(&module, args.devices).map_err(|e| anyhow!("{e}"))?;
    let n = grid.count() as usize;
    let memory_limit = args
        .max_memory
        .unwrap_or_else(hlo_eval::memory::default_size_limit);
    let module = &module;
    let args = &args;
    for (flag, set) in [
        ("--profile", args.profile || args.profile_json.is_some()),
        ("--time-passes", args.time_passes),
        ("--memory-limit", args.memory_limit.is_some()),
    ] {
        if set {
            bail!("{flag} is not supported with --devices yet");
        }
    }
    let per_device = memory_limit / n as u64;
    let inputs = match &args.inputs {
        Some(path) => read_device_inputs(module, path, n, per_device)?,
        None => (0..n)
            .map(|k| random_inputs(module, args.seed.wrapping_add(k as u64), per_device))
            .collect::<Result<_>>()?,
    };
    let start = Instant::now();
    let Some((outputs, timing_line)) = execute(module, grid, &inputs, args, per_device)? else {
        // An MPI rank other than 0: rank 0 reports the run.
        return Ok(ExitCode::SUCCESS);
    };
    let elapsed = start.elapsed();
    let reference = match args.check_reference {
        true => Some(
            runtime::reference_reports_on_devices(module, grid, &inputs, &outputs)
                .map_err(|e| anyhow!("{e}"))?,
        ),
        false => None,
    };
    for (k, outs) in outputs.iter().enumerate() {
        for (i, o) in outs.iter().enumerate() {
            outln!("out{i}.dev{k}: {}", summary(o));
        }
    }
    print_time(timing_line, args.no_timing, elapsed);
    if let Some(path) = &args.outputs {
        let entries = output_entries(outputs.iter().enumerate().flat_map(|(k, outs)| {
            outs.iter()
                .enumerate()
                .map(move |(i, o)| (format!("out{i}.dev{k}"), o))
        }));
        write_outputs(path, &entries)?;
    }
    let mut failed = false;
    if let Some(path) = &args.expect {
        failed |= !check_expected(module, path, &outputs, memory_limit)?;
    }
    if let Some(reports) = reference {
        let mut bad = 0;
        let mut total = 0;
        let (mut abs, mut rel) = (0f64, 0f64);
        for (k, device) in reports.iter().enumerate() {
            for (i, r) in device.iter().enumerate() {
                total += 1;
                abs = abs.max(r.max_abs_error);
                rel = rel.max(r.max_rel_error);
                if !r.matches || r.inf_vs_nan > 0 {
                    let shape = outputs[k][i].shape().to_string_without_layout();
                    eprintln!("{}", r.line(&format!("out{i}.dev{k}"), &shape, "reference"));
                }
                bad += usize::from(!r.matches);
            }
        }
        if bad > 0 {
            eprintln!("{bad} of {total} outputs differ from the reference");
            failed = true;
        } else {
            outln!(
                "check-reference: {total} outputs on {n} devices match (max abs error {}, max rel error {})",
                hlo::literal::format_g(abs, 3),
                hlo::literal::format_g(rel, 3)
            );
        }
    }
    Ok(match failed {
        true => ExitCode::from(1),
        false => ExitCode::SUCCESS,
    })
}

/// Runs `module` on every device of `grid` (device `k` on `inputs[k]`) with the backend
/// `args` asks for; each device's outputs (the root's leaves), and the `--repeat` timing
/// line. Shared by partitioned modules and the ones hloc partitions (`run_global.rs`).
/// With `--collectives mpi` this process runs one device (`run_mpi.rs`) and only rank 0
/// gets the outputs: `None` on the other ranks.
pub(crate) fn execute(
    module: &Module,
    grid: plan::Grid,
    inputs: &[Vec<Literal>],
    args: &RunArgs,
    per_device: u64,
) -> Result<crate::run_mpi::RankResult> {
    let mut timing_line = None;
    let outputs: Vec<Vec<Literal>> = match args.backend {
        Backend::Reference => {
            if args.repeat.is_some() {
                bail!("--repeat times compiled code: add --backend cpu");
            }
            let eval_grid = hlo_eval::device::DeviceGrid {
                replicas: grid.replicas,
                partitions: grid.partitions,
            };
            hlo_eval::multi_device::evaluate_on_devices(module, eval_grid, inputs)
                .map_err(|e| anyhow!("{e}"))?
                .into_iter()
                .map(|l| {
                    let mut leaves = Vec::new();
                    flatten(l, &mut leaves);
                    leaves
                })
                .collect()
        }
        Backend::Cuda => bail!("--devices runs on --backend cpu or cuda-host"),
        Backend::Cpu | Backend::CudaHost => {
            let options = runtime::CompileOptions {
                cuda_host: matches!(args.backend, Backend::CudaHost),
                max_while_iterations: args.max_while_iterations,
                size_limit: Some(per_device),
                ..Default::default()
            };
            if args.collectives == crate::run_cmd::Collectives::Mpi {
                return crate::run_mpi::execute(module, grid, inputs, &options, args.repeat);
            }
            let exe = runtime::compile(module, &options).map_err(|e| anyhow!("{e}"))?;
            let (outputs, times) = runtime::run_on_devices_repeated(
                &exe,
                grid,
                inputs,
                COLLECTIVE_TIMEOUT,
                args.repeat.unwrap_or(0),
            )
            .map_err(|e| anyhow!("{e}"))?;
            if args.repeat.is_some() {
                timing_line = Some(crate::run_cmd::devices_timing_line(times, &exe));
            }
            outputs
        }
    };
    Ok(Some((outputs, timing_line)))
}

/// Compares every device's outputs with `out<i>.dev<k>` of the `--expect` npz (as
/// tools/spmd_corpus.py records XLA's), at the precision of each output's last rounding;
/// prints an `expect:` line per output and returns whether all match.
fn check_expected(
    module: &Module,
    path: &Path,
    outputs: &[Vec<Literal>],
    limit: u64,
) -> Result<bool> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| anyhow!("cannot read {shown}: {e}"))?;
    let arrays = read_npz_from(BufReader::new(file), limit).map_err(|e| anyhow!("{shown}: {e}"))?;
    let precision = hlo_eval::report::rounding_types(module);
    let mut bad = 0;
    let mut total = 0;
    for (k, outs) in outputs.iter().enumerate() {
        for (i, got) in outs.iter().enumerate() {
            let key = format!("out{i}.dev{k}");
            let want = arrays
                .iter()
                .find(|(name, _)| *name == key)
                .map(|(_, a)| a)
                .ok_or_else(|| anyhow!("{shown} has no array {key}"))?;
            let got_array = got
                .as_array()
                .ok_or_else(|| anyhow!("{key}: not an array"))?;
            let want =
                adapt_to(want.clone(), &got.shape(), &key).map_err(|e| anyhow!("{shown}: {e}"))?;
            let p = precision.get(i).copied().flatten();
            let r = hlo_eval::report::compare_report(got_array, &want, p);
            let shape = got.shape().to_string_without_layout();
            outln!("expect: {}", r.line(&key, &shape, "expected"));
            total += 1;
            bad += usize::from(!r.matches);
        }
    }
    if bad > 0 {
        eprintln!("{bad} of {total} outputs differ from the expected ones");
    }
    Ok(bad == 0)
}

/// Every device's arguments from the npz: `in<i>.dev<k>` (a tuple parameter's elements
/// `in<i>.dev<k>.<j>`).
fn read_device_inputs(
    module: &Module,
    path: &Path,
    devices: usize,
    limit: u64,
) -> Result<Vec<Vec<Literal>>> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| anyhow!("cannot read {shown}: {e}"))?;
    let arrays = read_npz_from(BufReader::new(file), limit.saturating_mul(devices as u64))
        .map_err(|e| anyhow!("{shown}: {e}"))?;
    let params = parameters(module)?;
    let mut used = vec![false; arrays.len()];
    let mut take = |key: &str, shape: &hlo::Shape, what: &str| -> Result<ArrayLiteral> {
        let pos = arrays.iter().position(|(k, _)| k == key).ok_or_else(|| {
            anyhow!(
                "{shown} has no array {key} for {what} (a module run on {devices} devices \
                 takes in<i>.dev<k>: parameter i of device k)"
            )
        })?;
        used[pos] = true;
        adapt_to(arrays[pos].1.clone(), shape, &format!("{key} for {what}"))
            .map_err(|e| anyhow!("{shown}: {e}"))
    };
    let mut out = Vec::with_capacity(devices);
    for k in 0..devices {
        let mut device = Vec::with_capacity(params.len());
        for (i, (pname, shape)) in params.iter().enumerate() {
            let key = format!("in{i}.dev{k}");
            let what = format!("parameter {i} (`{pname}`) of device {k}");
            device.push(match shape.is_tuple() {
                false => Literal::Array(take(&key, shape, &what)?),
                true => Literal::Tuple(
                    shape
                        .tuple_shapes()
                        .iter()
                        .enumerate()
                        .map(|(j, s)| Ok(Literal::Array(take(&format!("{key}.{j}"), s, &what)?)))
                        .collect::<Result<_>>()?,
                ),
            });
        }
        out.push(device);
    }
    // Expected outputs may share the file (`out<i>.dev<k>`, for --expect).
    let unused: Vec<&str> = arrays
        .iter()
        .zip(&used)
        .filter(|((k, _), u)| !**u && !k.starts_with("out"))
        .map(|((k, _), _)| k.as_str())
        .collect();
    if !unused.is_empty() {
        eprintln!("warning: {shown}: array(s) {} unused", unused.join(", "));
    }
    Ok(out)
}

/// Random arguments of one device (seeded per device).
fn random_inputs(module: &Module, seed: u64, limit: u64) -> Result<Vec<Literal>> {
    parameters(module)?
        .iter()
        .enumerate()
        .map(|(n, (pname, shape))| {
            hlo_eval::random::random_literal(shape, seed, n as u64, limit)
                .map_err(|e| anyhow!("parameter {n} (`{pname}`): {e}"))
        })
        .collect()
}

/// The run's time line: the timing's own (`--repeat`) when there is one, else the one run's
/// wall time unless `--no-timing`.
pub(crate) fn print_time(
    timing_line: Option<String>,
    no_timing: bool,
    elapsed: std::time::Duration,
) {
    match timing_line {
        Some(line) => outln!("{line}"),
        None if !no_timing => outln!("time: {:.3} ms", elapsed.as_secs_f64() * 1e3),
        None => {}
    }
}
