//! `hloc cache info|clear|prune`: the compiled-object cache.

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use backend_cpu::cache_admin;
use clap::Subcommand;

/// `hloc cache` subcommands.
#[derive(Subcommand)]
pub enum CacheCommand {
    /// Print the cache directory, its number of objects and their bytes.
    Info,
    /// Remove every cached object.
    Clear,
    /// Remove the least recently used objects until the rest hold at most SIZE (the most
    /// recent one always stays). Without it, the default cap every compile keeps.
    Prune {
        /// Bytes or K/M/G/T (powers of 1024), e.g. 500M.
        #[arg(long, value_name = "SIZE", value_parser = parse_size)]
        max_size: Option<u64>,
    },
}

fn parse_size(text: &str) -> Result<u64, String> {
    hlo_eval::memory::parse_size(text).map_err(|e| e.to_string())
}

/// Runs the command on the cache directory (`$HLOC_CACHE_DIR`, else the default).
pub fn run(cmd: CacheCommand) -> Result<ExitCode> {
    let dir = runtime::cache_dir(None);
    let shown = dir.display();
    let io = |e: std::io::Error| anyhow!("cache {shown}: {e}");
    match cmd {
        CacheCommand::Info => {
            let entries = cache_admin::entries(&dir).map_err(io)?;
            let bytes: u64 = entries.iter().map(|e| e.bytes).sum();
            outln!("dir: {shown}");
            outln!("objects: {}", entries.len());
            outln!("bytes: {bytes}");
            outln!("cap: {}", cache_admin::DEFAULT_MAX_BYTES);
        }
        CacheCommand::Clear => {
            let (n, bytes) = cache_admin::prune(&dir, 0).map_err(io)?;
            // `prune` keeps the most recent object; clearing removes it too.
            let last = cache_admin::entries(&dir).map_err(io)?;
            let mut removed = (n, bytes);
            for e in last {
                std::fs::remove_file(&e.path).map_err(io)?;
                removed = (removed.0 + 1, removed.1 + e.bytes);
            }
            outln!("removed {} objects, {} bytes", removed.0, removed.1);
        }
        CacheCommand::Prune { max_size } => {
            let cap = max_size.unwrap_or(cache_admin::DEFAULT_MAX_BYTES);
            let (n, bytes) = cache_admin::prune(&dir, cap).map_err(io)?;
            outln!("removed {n} objects, {bytes} bytes");
        }
    }
    Ok(ExitCode::SUCCESS)
}
