//! Evaluation on N devices: one thread per device, each its own [`Evaluator`] with its
//! replica and partition ids, meeting the others at every collective. Runs a partitioned
//! module (XLA's per-device program, each device its own arguments) or an unpartitioned
//! one with SPMD custom calls (each device the global arguments). A device that fails
//! stops the others at their next collective; the first failure is the run's error.
//!
//! Collectives pair up by their order on each device (the k-th collective a device runs
//! meets the k-th of each other participant), as XLA's runtime does; a module whose
//! devices run different sequences of collectives (a collective under a branch that
//! depends on the partition id) ends in an error after the collective timeout.

use std::time::Duration;

use hlo::{Literal, Module};

use crate::device::{Device, DeviceGrid, DEFAULT_COLLECTIVE_TIMEOUT};
use crate::error::EvalError;
use crate::interp::Evaluator;
use crate::rendezvous::PEER_FAILED;

/// Evaluates `module`'s entry computation on every device of `grid` (device `d` gets
/// `args[d]`), each with its share of the default size limit; the results in device order.
pub fn evaluate_on_devices(
    module: &Module,
    grid: DeviceGrid,
    args: &[Vec<Literal>],
) -> Result<Vec<Literal>, EvalError> {
    let n = grid.count().max(1) as u64;
    evaluate_on_devices_with(
        module,
        grid,
        args,
        crate::memory::default_size_limit() / n,
        DEFAULT_COLLECTIVE_TIMEOUT,
    )
}

/// [`evaluate_on_devices`] with a size limit per device and a collective timeout.
pub fn evaluate_on_devices_with(
    module: &Module,
    grid: DeviceGrid,
    args: &[Vec<Literal>],
    size_limit: u64,
    timeout: Duration,
) -> Result<Vec<Literal>, EvalError> {
    if grid.replicas < 1 || grid.partitions < 1 {
        return Err(EvalError::invalid(
            "?",
            format!("a device grid needs at least one replica and partition, not {grid:?}"),
        ));
    }
    if args.len() as i64 != grid.count() {
        return Err(EvalError::invalid(
            "?",
            format!("{} devices but arguments for {}", grid.count(), args.len()),
        ));
    }
    let devices = Device::all(grid, timeout);
    let results: Vec<Result<Literal, EvalError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .into_iter()
            .zip(args)
            .map(|(device, a)| {
                scope.spawn(move || {
                    let mut ev = Evaluator::new(module)
                        .with_size_limit(size_limit)
                        .with_device(device);
                    let r = ev.run(a);
                    if let (Err(e), Some(d)) = (&r, ev.device()) {
                        d.fail(&e.to_string());
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(EvalError::invalid("?", "a device's evaluation panicked"))
                })
            })
            .collect()
    });
    // The first error that is not a consequence of another device's.
    let mut first_error = None;
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        match r {
            Ok(v) => out.push(v),
            Err(e) => {
                let secondary = e.to_string().contains(PEER_FAILED);
                match &first_error {
                    None => first_error = Some((secondary, e)),
                    Some((true, _)) if !secondary => first_error = Some((false, e)),
                    _ => {}
                }
            }
        }
    }
    match first_error {
        Some((_, e)) => Err(e),
        None => Ok(out),
    }
}
