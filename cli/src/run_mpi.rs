//! `hloc run FILE --devices N --collectives mpi` (issue 35 item 4): the run's N devices
//! are the N processes of an MPI job, `mpirun -np N hloc run FILE --devices N
//! --collectives mpi ...`, device k on rank k, exchanging data through MPI
//! (`runtime::MpiDevice`; the cargo feature `mpi`).
//!
//! Every rank reads the module and `--inputs` itself (the same path on every rank: one
//! machine, or a filesystem the machines share), or draws the same random inputs from
//! `--seed`, partitions and slices them as the in-process run does, and keeps its own
//! device's piece; no input bytes travel over MPI. Rank 0 compiles first and the other
//! ranks then find its objects in the cache (not N C compilers at once). After the run
//! every rank sends its outputs to rank 0 (as npz bytes), which alone prints, writes and
//! checks them exactly as an in-process run does; the other ranks print nothing. An error
//! on any rank after MPI started aborts the job (`MPI_Abort`), since the other ranks would
//! otherwise wait for it forever.

use crate::run_cmd::{Backend, Collectives, RunArgs};
use anyhow::{bail, Result};

/// The error of `--collectives mpi` in an hloc built without the feature.
const NO_MPI: &str = "this hloc was built without MPI; rebuild with `--features mpi`";

/// Refuses `--collectives` choices this build or these arguments cannot run, before
/// anything is read or compiled.
pub fn check(args: &RunArgs) -> Result<()> {
    if args.collectives == Collectives::Inprocess {
        return Ok(());
    }
    if cfg!(not(feature = "mpi")) {
        bail!("{NO_MPI}");
    }
    if args.devices.is_none() {
        bail!(
            "--collectives mpi runs one device per MPI rank: add --devices N (N = the number \
             of ranks, `mpirun -np N`)"
        );
    }
    if !matches!(args.backend, Backend::Cpu | Backend::CudaHost) {
        bail!("--collectives mpi runs compiled code on the CPU: use --backend cpu or cuda-host");
    }
    for (flag, set) in [
        ("--profile", args.profile || args.profile_json.is_some()),
        ("--trace", args.trace.is_some()),
    ] {
        if set {
            bail!("{flag} is not supported with --collectives mpi");
        }
    }
    Ok(())
}

/// The outputs and `--repeat` timing line of an MPI run, on rank 0; `None` on the others.
pub(crate) type RankResult = Option<(Vec<Vec<hlo::Literal>>, Option<String>)>;

/// Without the feature there is no MPI run ([`check`] refused it earlier).
#[cfg(not(feature = "mpi"))]
pub(crate) fn execute(
    _module: &hlo::Module,
    _grid: plan::Grid,
    _inputs: &[Vec<hlo::Literal>],
    _options: &runtime::CompileOptions,
    _repeat: Option<usize>,
) -> Result<RankResult> {
    bail!("{NO_MPI}")
}

/// Runs this rank's device of `module` on `grid` (`inputs[k]` are device k's arguments):
/// every device's outputs and the timing line on rank 0, `None` on the other ranks. MPI is
/// finalized before it returns.
#[cfg(feature = "mpi")]
pub(crate) fn execute(
    module: &hlo::Module,
    grid: plan::Grid,
    inputs: &[Vec<hlo::Literal>],
    options: &runtime::CompileOptions,
    repeat: Option<usize>,
) -> Result<RankResult> {
    use anyhow::anyhow;
    use plan::Communicator;

    let device = std::sync::Arc::new(
        runtime::MpiDevice::init(grid.replicas, grid.partitions).map_err(|e| anyhow!("{e}"))?,
    );
    match mpi_run::on_rank(&device, module, inputs, options, repeat) {
        Ok(r) => Ok(r),
        Err(e) => {
            // Ends every rank of the job (MPI_Abort); the error is returned should it not.
            device.fail(&format!("{e:#}"));
            Err(e)
        }
    }
}

#[cfg(feature = "mpi")]
mod mpi_run {
    use std::sync::Arc;
    use std::time::Instant;

    use anyhow::{anyhow, Result};
    use hlo::{Literal, Module};
    use hlo_eval::npy::{adapt_to, read_npz, write_npz};
    use runtime::MpiDevice;

    use super::RankResult;
    use crate::run_cmd::devices_timing_line;
    use crate::run_cmd::output_entries;

    /// See [`super::execute`].
    pub(super) fn on_rank(
        device: &Arc<MpiDevice>,
        module: &Module,
        inputs: &[Vec<Literal>],
        options: &runtime::CompileOptions,
        repeat: Option<usize>,
    ) -> Result<RankResult> {
        let rank = device.rank() as usize;
        let args = inputs
            .get(rank)
            .ok_or_else(|| anyhow!("no arguments for device {rank}"))?;
        let barrier = || device.world_barrier().map_err(|e| anyhow!("{e}"));
        // Rank 0 compiles first; the others then load its objects from the cache.
        if rank != 0 {
            barrier()?;
        }
        let exe = runtime::compile(module, options).map_err(|e| anyhow!("{e}"))?;
        if rank == 0 {
            barrier()?;
        }
        let comm: Arc<dyn plan::Communicator> = device.clone();
        let run =
            || plan::with_communicator(comm.clone(), || exe.run(args)).map_err(|e| anyhow!("{e}"));
        let mut outputs = run()?;
        let mut timing = None;
        if let Some(k) = repeat {
            // Each timed run starts together and ends when the last device ends.
            let mut times = Vec::with_capacity(k);
            for _ in 0..k {
                barrier()?;
                let t = Instant::now();
                outputs = run()?;
                barrier()?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            timing = Some(devices_timing_line(times, &exe));
        }
        let packed = pack(&outputs)?;
        let Some(all) = device.gather_to_root(&packed).map_err(|e| anyhow!("{e}"))? else {
            return Ok(None);
        };
        let outputs = all
            .iter()
            .enumerate()
            .map(|(k, bytes)| unpack(bytes, &outputs, k))
            .collect::<Result<_>>()?;
        Ok(Some((outputs, timing)))
    }

    /// A device's outputs (the root's leaves) as npz bytes, `out<i>` per array leaf.
    fn pack(outputs: &[Literal]) -> Result<Vec<u8>> {
        let entries = output_entries(
            outputs
                .iter()
                .enumerate()
                .map(|(i, o)| (format!("out{i}"), o)),
        );
        write_npz(&entries).map_err(|e| anyhow!("packing the outputs: {e}"))
    }

    /// Device `k`'s outputs from its [`pack`]ed bytes, shaped as this device's `mine`
    /// (every device of an SPMD program has the same output shapes); a leaf that is not an
    /// array (a token) has no bytes and is this device's.
    fn unpack(bytes: &[u8], mine: &[Literal], k: usize) -> Result<Vec<Literal>> {
        let arrays = read_npz(bytes).map_err(|e| anyhow!("device {k}'s outputs: {e}"))?;
        mine.iter()
            .enumerate()
            .map(|(i, m)| {
                if m.as_array().is_none() {
                    return Ok(m.clone());
                }
                let key = format!("out{i}");
                let a = arrays
                    .iter()
                    .find(|(name, _)| *name == key)
                    .map(|(_, a)| a.clone())
                    .ok_or_else(|| anyhow!("device {k} sent no {key}"))?;
                let what = format!("{key}.dev{k}");
                Ok(Literal::Array(
                    adapt_to(a, &m.shape(), &what).map_err(|e| anyhow!("{e}"))?,
                ))
            })
            .collect()
    }
}
