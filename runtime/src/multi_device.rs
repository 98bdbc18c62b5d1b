//! SPMD runs on N devices in one process (issue 35): one compiled program, N executors on
//! N threads, each under its own in-process communicator
//! (`crate::backends::communicators`, installed with [`plan::with_communicator`]), so every
//! collective step of the program meets the other devices' and `replica-id` /
//! `partition-id` answer per device. A device that fails stops the others at their next
//! collective; the first failure that is not a consequence of another is the run's error.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

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
    run_on_devices_repeated(exe, grid, args, timeout, 0).map(|(out, _)| out)
}

/// [`run_on_devices`] once, then `repeat` more times, each run's wall time (ms, from the
/// moment the first device starts to the moment the last one finishes, as the devices read
/// the clock) returned with the last run's outputs. The devices read it, not the thread
/// that releases them: on a loaded machine that thread, preempted between the barrier and
/// its clock, timed 16 chained 1 MB all-reduces at 0.02 ms. The device threads live
/// across the runs and meet at a barrier before and after each: spawning and joining 8
/// threads per run cost more than a small program's whole step on a loaded 2-core machine
/// (an 8-device step with no collectives took 0.26 ms, the same module's global run on one
/// device 0.02 ms).
pub fn run_on_devices_repeated(
    exe: &Executable,
    grid: Grid,
    args: &[Vec<Literal>],
    timeout: Duration,
    repeat: usize,
) -> Result<(Vec<Vec<Literal>>, Vec<f64>), RuntimeError> {
    if args.len() as i64 != grid.count() {
        return Err(RuntimeError::Internal(format!(
            "{} devices but arguments for {}",
            grid.count(),
            args.len()
        )));
    }
    let devices = communicators(grid, timeout);
    let n = devices.len();
    // The devices and this thread, which times each run between the two barriers.
    let start = Barrier::new(n + 1);
    let end = Barrier::new(n + 1);
    // Set by a device that failed during a run, read by every thread after the run's end
    // barrier: all stop after the same run.
    let failed = AtomicBool::new(false);
    // The current run's earliest device start and latest device end.
    let span: Mutex<Option<(Instant, Instant)>> = Mutex::new(None);
    let mut times = Vec::with_capacity(repeat);
    let results: Vec<Result<Vec<Literal>, RuntimeError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .into_iter()
            .zip(args)
            .map(|(device, a)| {
                let (start, end, failed, span) = (&start, &end, &failed, &span);
                scope.spawn(move || {
                    let mut last = Err(RuntimeError::Internal("no run".into()));
                    for _ in 0..=repeat {
                        start.wait();
                        let began = Instant::now();
                        // A panic must not skip the barrier the other threads wait at.
                        let run = AssertUnwindSafe(|| {
                            plan::with_communicator(device.clone(), || exe.run(a))
                        });
                        last = std::panic::catch_unwind(run).unwrap_or_else(|_| {
                            Err(RuntimeError::Internal("a device's run panicked".into()))
                        });
                        if let Err(e) = &last {
                            device.fail(&e.to_string());
                            failed.store(true, Ordering::SeqCst);
                        }
                        let ended = Instant::now();
                        {
                            let mut s = span.lock().unwrap_or_else(|e| e.into_inner());
                            *s = Some(match *s {
                                None => (began, ended),
                                Some((b, e)) => (b.min(began), e.max(ended)),
                            });
                        }
                        end.wait();
                        if failed.load(Ordering::SeqCst) {
                            break;
                        }
                    }
                    last
                })
            })
            .collect();
        for run in 0..=repeat {
            start.wait();
            end.wait();
            let took = span.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let (true, Some((began, ended))) = (run > 0, took) {
                times.push(ended.duration_since(began).as_secs_f64() * 1e3);
            }
            if failed.load(Ordering::SeqCst) {
                break;
            }
        }
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(RuntimeError::Internal("a device's thread panicked".into()))
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
        None => Ok((out, times)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CompileOptions;

    const MODULE: &str = "HloModule m, num_partitions=4\n\n\
        add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\n\
        ENTRY e {\n  p = f32[4] parameter(0)\n  \
        a = f32[4] all-reduce(p), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add\n  \
        ROOT t = f32[4] multiply(a, p)\n}\n";

    fn compiled() -> (Executable, Grid) {
        let module = hlo::parse_module(MODULE).expect("parses");
        let options = CompileOptions {
            cache_dir: Some(std::env::temp_dir().join("hloc-runtime-multi-device-tests")),
            ..CompileOptions::default()
        };
        let grid = Grid::of_module(&module);
        (crate::compile(&module, &options).expect("compiles"), grid)
    }

    fn f32s(v: Vec<f32>) -> Literal {
        let shape = hlo::Shape::array(hlo::ElementType::F32, vec![v.len() as i64]);
        Literal::Array(
            hlo::literal::ArrayLiteral::new(shape, hlo::literal::ArrayData::F32(v)).expect("fits"),
        )
    }

    fn args(lengths: [usize; 4]) -> Vec<Vec<Literal>> {
        lengths
            .iter()
            .enumerate()
            .map(|(d, &n)| {
                let v: Vec<f32> = (0..n).map(|i| (d * 10 + i) as f32).collect();
                vec![f32s(v)]
            })
            .collect()
    }

    /// Every repeated run is timed, and the last one's outputs are the one-run outputs:
    /// device `d`'s `(sum over devices of p) * p_d`.
    #[test]
    fn repeated_runs_are_timed_and_give_the_one_run_outputs() {
        let (exe, grid) = compiled();
        let a = args([4; 4]);
        let once = run_on_devices(&exe, grid, &a, Duration::from_secs(60)).expect("runs");
        let (again, times) =
            run_on_devices_repeated(&exe, grid, &a, Duration::from_secs(60), 7).expect("runs");
        assert_eq!(times.len(), 7);
        assert_eq!(once, again);
        let sum = |i: usize| (0..4).map(|d| (d * 10 + i) as f32).sum::<f32>();
        for (d, out) in once.iter().enumerate() {
            let want: Vec<f32> = (0..4).map(|i| sum(i) * (d * 10 + i) as f32).collect();
            let got = out[0].as_array().expect("an array");
            let want = hlo::literal::ArrayLiteral::new(
                got.shape().clone(),
                hlo::literal::ArrayData::F32(want),
            );
            assert_eq!(out.len(), 1);
            assert_eq!(Some(got), want.as_ref(), "device {d}");
        }
    }

    /// A device whose run fails (an argument of the wrong shape) ends the repeated runs of
    /// every device (the others wait at the all-reduce until they hear of it) with its
    /// error, not a peer's, and no thread is left at a barrier.
    #[test]
    fn a_failing_device_ends_the_repeated_runs() {
        let (exe, grid) = compiled();
        let err =
            run_on_devices_repeated(&exe, grid, &args([4, 4, 3, 4]), Duration::from_secs(60), 5)
                .expect_err("device 2's argument has the wrong shape");
        let text = err.to_string();
        assert!(!is_peer_failure(&text), "{text}");
    }
}
