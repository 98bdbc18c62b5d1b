//! `hloc partition FILE --devices N [--explain PATH|-]`: hloc's SPMD partitioner (the
//! `spmd` crate) on a module with `sharding=` annotations; prints the per-device module
//! in XLA's text (`num_partitions=N`, parameters and root with their global shardings).
//! --explain writes every instruction's chosen sharding and why, one line each
//! (`name: sharding <- reason`), to PATH or, with -, to stderr. --stats adds, after the
//! module, `collective_bytes: X` (bytes one device's collectives move per run) and a line
//! per collective kind; on a module already partitioned (XLA's after-optimizations
//! module) it prints only those lines, so the two partitioners' bytes can be compared.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use clap::Args;

/// Arguments of `hloc partition`.
#[derive(Args)]
pub struct PartitionArgs {
    /// The annotated HLO module (before XLA's partitioner, as JAX lowers it).
    file: PathBuf,
    /// How many devices (partitions) the program runs on.
    #[arg(long, default_value_t = 1)]
    devices: usize,
    /// Write the propagation's decisions (text, a line per instruction) to this file, or -
    /// for stderr.
    #[arg(long, value_name = "PATH|-", num_args = 0..=1, default_missing_value = "-")]
    explain: Option<String>,
    /// Print the bytes the per-device module's collectives move (`collective_bytes: X`).
    #[arg(long)]
    stats: bool,
}

/// Runs `hloc partition`.
pub fn run(args: PartitionArgs) -> Result<ExitCode> {
    let module = crate::compile_cmd::read_module(&args.file, &mut Vec::new())?;
    let partitioned = hlo::collective_groups::Grid::of_module(&module).count() > 1;
    if args.stats && partitioned {
        let stats = spmd::collective_stats(&module).map_err(|e| anyhow!("{e}"))?;
        out!("{}", stats.text());
        return Ok(ExitCode::SUCCESS);
    }
    let p = spmd::partition(&module, args.devices).map_err(|e| anyhow!("{e}"))?;
    match args.explain.as_deref() {
        Some("-") => eprint!("{}", p.explain),
        Some(path) => {
            std::fs::write(path, &p.explain).map_err(|e| anyhow!("cannot write {path}: {e}"))?
        }
        None => {}
    }
    out!("{}", hlo::print_module(&p.module));
    if args.stats {
        let stats = spmd::collective_stats(&p.module).map_err(|e| anyhow!("{e}"))?;
        out!("{}", stats.text());
    }
    Ok(ExitCode::SUCCESS)
}
