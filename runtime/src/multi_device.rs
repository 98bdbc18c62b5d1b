//! SPMD runs on N devices in one process (issue 35): one compiled program, N executors on
//! N threads, each under its own in-process communicator
//! (`crate::backends::communicators`, installed with [`plan::with_communicator`]), so every
//! collective step of the program meets the other devices' and `replica-id` /
//! `partition-id` answer per device. A device that fails stops the others at their next
//! collective; the first failure that is not a consequence of another is the run's error.

use std::time::Duration;

use hlo::{Literal, Module};
use plan::Grid;

use crate::backends::{communicators, is_peer_failure};
use crate::{Executable, RuntimeError};

/// The device grid a partitioned module runs on (`replica_count` x `num_partitions`),
/// checked against the `devices` asked for: a module with more than one device run
/// without `--devices`, or with another count, is an error that says so.
pub fn device_grid(module: &Module, devices: Option<usize>) -> Result<Grid, String> {
    let grid = Grid::of_module(module);
    let want = grid.count();
    match devices {
        None if want > 1 => Err(format!(
            "the module runs on {want} devices (replica_count={}, num_partitions={}): run it with --devices {want}",
            grid.replicas, grid.partitions
        )),
        Some(n) if n as i64 != want && want > 1 => Err(format!(
            "--devices {n}, but the module is partitioned for {want} devices (replica_count={}, num_partitions={})",
            grid.replicas, grid.partitions
        )),
        Some(n) if n > 1 && want == 1 => Err(format!(
            "--devices {n} on a module that is not partitioned (no num_partitions or replica_count above 1): \
             partition it first (`hloc partition FILE --devices {n}`; `hloc run --devices {n}` does so \
             for a module whose parameters carry shardings)"
        )),
        _ => Ok(grid),
    }
}

/// Runs `exe` on every device of `grid` at once, device `d` on `args[d]` (one literal per
/// entry parameter); each device's outputs (the root's leaves) in device order.
pub fn run_on_devices(
    exe: &Executable,
    grid: Grid,
    args: &[Vec<Literal>],
    timeout: Duration,
) -> Result<Vec<Vec<Literal>>, RuntimeError> {
    if args.len() as i64 != grid.count() {
        return Err(RuntimeError::Internal(format!(
            "{} devices but arguments for {}",
            grid.count(),
            args.len()
        )));
    }
    let devices = communicators(grid, timeout);
    let results: Vec<Result<Vec<Literal>, RuntimeError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .into_iter()
            .zip(args)
            .map(|(device, a)| {
                scope.spawn(move || {
                    let r = plan::with_communicator(device.clone(), || exe.run(a));
                    if let Err(e) = &r {
                        device.fail(&e.to_string());
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(RuntimeError::Internal("a device's run panicked".into()))
                })
            })
            .collect()
    });
    let mut first: Option<(bool, RuntimeError)> = None;
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(v) => out.push(v),
            Err(e) => {
                let secondary = is_peer_failure(&e.to_string());
                match &first {
                    None => first = Some((secondary, e)),
                    Some((true, _)) if !secondary => first = Some((false, e)),
                    _ => {}
                }
            }
        }
    }
    match first {
        Some((_, e)) => Err(e),
        None => Ok(out),
    }
}

/// Every device's outputs (flattened leaves) compared with the N-device reference
/// evaluator's on the same arguments: one report per device and output; `Err` when the
/// reference fails or the outputs do not line up with its results.
pub fn reference_reports_on_devices(
    module: &Module,
    grid: Grid,
    args: &[Vec<Literal>],
    outputs: &[Vec<Literal>],
) -> Result<Vec<Vec<hlo_eval::report::OutputReport>>, String> {
    let eval_grid = hlo_eval::device::DeviceGrid {
        replicas: grid.replicas,
        partitions: grid.partitions,
    };
    let want = hlo_eval::multi_device::evaluate_on_devices(module, eval_grid, args)
        .map_err(|e| format!("reference evaluator on {} devices: {e}", grid.count()))?;
    let precision = hlo_eval::report::rounding_types(module);
    want.into_iter()
        .zip(outputs)
        .enumerate()
        .map(|(d, (w, got))| {
            let mut leaves = Vec::new();
            flatten(w, &mut leaves);
            if leaves.len() != got.len() {
                return Err(format!(
                    "device {d}: {} outputs, the reference has {}",
                    got.len(),
                    leaves.len()
                ));
            }
            got.iter()
                .zip(&leaves)
                .enumerate()
                .map(|(i, (g, w))| {
                    let (Some(g), Some(w)) = (g.as_array(), w.as_array()) else {
                        return Err(format!("out{i}.dev{d}: not an array"));
                    };
                    let p = precision.get(i).copied().flatten();
                    Ok(hlo_eval::report::compare_report(g, w, p))
                })
                .collect()
        })
        .collect()
}

fn flatten(l: Literal, out: &mut Vec<Literal>) {
    match l {
        Literal::Tuple(t) => t.into_iter().for_each(|x| flatten(x, out)),
        other => out.push(other),
    }
}
