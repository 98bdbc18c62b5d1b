//! `hloc`: a compiler and indexing analyzer for XLA HLO.
//!
//! Exit codes: 0 success (and `equal`), 1 a negative answer (`different`, verification
//! errors, `run` outputs that differ from `--expect` or `--check-reference`), 2 bad input
//! (syntax errors, unreadable files, bad flags, a run over its time or memory limit), 3
//! `unknown`.

#[macro_use]
mod stdout;
mod cache_cmd;
mod coalescing_launch;
mod compile_cmd;
mod compile_gpu;
mod compile_report;
mod fuse_cmd;
mod hlo_cmd;
mod indexing_cmd;
mod input;
mod logging;
mod map_cmd;
mod opt_cmd;
mod partition_cmd;
mod progress;
mod run_cmd;
mod run_devices;
mod run_global;
mod run_mpi;
mod source;
mod tile_cmd;
mod timeout;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A first tour, printed under the command list.
const TOUR: &str = "\
EXAMPLES:
  hloc run module.hlo                      evaluate on random inputs, summarize outputs
  hloc run module.hlo --inputs in.npz --outputs out.npz
  hloc opt module.hlo --time-passes        optimize; a table of pass times on stderr
  hloc opt module.hlo --dump-to dumps/ --dump-pass-re '.*'
  hloc verify module.hlo                   `ok`, or every error with file:line:column
  hloc indexing module.hlo --instr fusion.3
                                           which operand elements each output reads
  hloc map simplify '(d0) -> (d0 floordiv 8 * 8 + d0 mod 8), domain: d0 in [0, 63]'

EXIT CODES:
  0 success (and `equal`), 1 a negative answer (`different`, verification errors,
  `run` outputs that differ from --expect/--check-reference), 2 bad input (syntax errors,
  unreadable files, bad flags, a run over --timeout or --max-memory), 3 `unknown`.";

/// hloc — compile and analyze XLA HLO.
///
/// Every command reads HLO text as XLA and JAX dump it (`--xla_dump_to`) or indexing maps in
/// XLA's syntax, and prints text that other tools may parse; see each command's --help for
/// its exact format.
#[derive(Parser)]
#[command(
    name = "hloc",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = TOUR
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simplify, compare and compose indexing maps.
    #[command(subcommand, after_help = map_cmd::MAP_SYNTAX)]
    Map(map_cmd::MapCommand),
    /// Print an HLO module in XLA's canonical text.
    Fmt(hlo_cmd::FmtArgs),
    /// Verify an HLO module: structure and every instruction's shape; prints `ok` or errors.
    Verify(hlo_cmd::VerifyArgs),
    /// Write the dataflow graph of an HLO module as JSON or Graphviz dot.
    Graph(hlo_cmd::GraphArgs),
    /// Indexing maps of an instruction, fusion or producer-consumer pair.
    #[command(after_help = indexing_cmd::FORMATS)]
    Indexing(indexing_cmd::IndexingArgs),
    /// Run optimization passes on an HLO module and print the result.
    Opt(opt_cmd::OptArgs),
    /// Run a module (compiled for this CPU, or on the reference evaluator) on inputs
    /// (.npz/.npy or random) and summarize its outputs.
    Run(run_cmd::RunArgs),
    /// Fuse a module for a target and explain every fusion decision.
    Fuse(fuse_cmd::FuseArgs),
    /// Compile a module for this CPU: kernels, C, the system C compiler; stats and dumps.
    #[command(after_help = compile_cmd::FORMATS)]
    Compile(compile_cmd::CompileArgs),
    /// The compiled-object cache: info, clear, prune --max-size.
    #[command(subcommand)]
    Cache(cache_cmd::CacheCommand),
    /// Symbolic tiles of an instruction's operands, or the tiled computation of a fusion.
    #[command(after_help = tile_cmd::FORMATS)]
    Tile(tile_cmd::TileArgs),
    /// Partition a module with sharding annotations into the program every device runs.
    Partition(partition_cmd::PartitionArgs),
}

fn main() -> ExitCode {
    logging::init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Map(cmd) => map_cmd::run(cmd),
        Command::Fmt(args) => hlo_cmd::fmt(args),
        Command::Verify(args) => hlo_cmd::verify(args),
        Command::Graph(args) => hlo_cmd::graph(args),
        Command::Indexing(args) => indexing_cmd::run(args),
        Command::Opt(args) => opt_cmd::run(args),
        Command::Run(args)
            if args.devices.is_some() || args.collectives != run_cmd::Collectives::Inprocess =>
        {
            run_global::dispatch(args)
        }
        Command::Run(args) => run_cmd::run(args),
        Command::Fuse(args) => fuse_cmd::run(args),
        Command::Compile(args) => compile_cmd::run(args),
        Command::Tile(args) => tile_cmd::run(args),
        Command::Cache(cmd) => cache_cmd::run(cmd),
        Command::Partition(args) => partition_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("{err}");
            ExitCode::from(2)
        }
    }
}
