//! `hloc fuse`: the fusion pipeline on one module for a target, with the explain report.

use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;
use hlo::pass::Pass;

/// Arguments of `hloc fuse`.
#[derive(Args, Debug)]
#[command(after_help = "\
EXAMPLE:
  hloc fuse corpus/softmax/before_optimizations.hlo --target cpu --explain -

Runs the target-independent pipeline (as `hloc opt` does; --no-simplify skips it), then the
fusion passes for the target's device description, then CSE and DCE, and prints the fused
module: fusion(...) instructions with kind=kLoop|kInput|kOutput and calls= fused
computations (fused_computation, fused_computation.1, ...).
--explain PATH writes one JSON object per line describing the final module:
  {\"fusion\": NAME, \"kind\": \"loop|input|output\", \"emitter\": \"loop|reduction|transpose\",
   \"members\": [original names], \"decisions\": [{\"producer\", \"consumer\", \"reason\", \"cost\"}]}
for every fusion of ENTRY and of the computations it runs through while/conditional/call, and
  {\"producer\": P, \"consumer\": C, \"fused\": false, \"reason\": CODE, \"cost\": {...}}
for every edge between two kernels that stayed unfused. Reason codes: fused, not-profitable,
would-duplicate-expensive, would-create-cycle, hero-incompatible, too-large, unfusible-op,
consumer-is-library-call, target-incompatible (the target's compiler could not take the
fusion: for --target cpu, XLA:CPU, which compiles the fused module too; the text report names
the value and the rule). cost: unfused_us, fused_us, bytes_unfused, bytes_fused,
flops_unfused, flops_fused, duplication. --explain - writes the same as text to stderr.

EXIT CODES: 0 fused; 1 the module does not verify (the verifier's errors) or a pass failed;
2 unreadable file, syntax error, unknown target or bad device description.")]
pub struct FuseArgs {
    /// The HLO module file, or - for standard input.
    file: String,
    /// The device description: `cpu`, `h100`, or a path to a description file.
    #[arg(long, default_value = "cpu")]
    target: String,
    /// Write the explain report: a JSON-lines file, or - for text on stderr.
    #[arg(long, value_name = "PATH")]
    explain: Option<String>,
    /// Skip the target-independent passes before fusion.
    #[arg(long)]
    no_simplify: bool,
    /// With `--target cpu`: measure this machine (cores, caches, bandwidth, FMA rate; about
    /// half a second) instead of using the shipped description's defaults.
    #[arg(long)]
    probe: bool,
    /// Print the module without blank lines.
    #[arg(long)]
    compact: bool,
}

/// Runs `hloc fuse`.
pub fn run(args: FuseArgs) -> Result<ExitCode> {
    let device = if args.probe {
        if args.target != "cpu" {
            bail!("--probe measures this CPU: it needs --target cpu");
        }
        device::probe_cpu()?
    } else if std::path::Path::new(&args.target).is_file() {
        device::load_file(std::path::Path::new(&args.target))?
    } else {
        device::load(&args.target)?
    };
    let (src, parsed) = crate::source::load(&args.file)?;
    if let Err(errors) = hlo::verifier::verify_parsed(&parsed, &src.text) {
        for e in errors {
            eprintln!("{e}");
        }
        return Ok(ExitCode::from(1));
    }
    let mut module = parsed.module;
    if !args.no_simplify {
        if let Err(e) = hlo_transforms::default_pipeline().run(&mut module) {
            eprintln!("{e}");
            return Ok(ExitCode::from(1));
        }
    }
    let log = match fusion::fuse_logged(&mut module, &device) {
        Ok(log) => log,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(1));
        }
    };
    let cleanup = hlo_transforms::Cse
        .run(&mut module)
        .and_then(|_| hlo_transforms::Dce.run(&mut module));
    if let Err(e) = cleanup {
        eprintln!("{e}");
        return Ok(ExitCode::from(1));
    }
    // The printed module is one XLA reads back: every array with a layout.
    hlo::ir::edit::default_missing_layouts(&mut module);
    let report = fusion::FusionReport::build(&module, &log);
    match args.explain.as_deref() {
        Some("-") => eprint!("{}", report.to_text()),
        Some(path) => {
            if let Err(e) = std::fs::write(path, report.to_json_lines()) {
                bail!("writing `{path}`: {e}");
            }
        }
        None => {}
    }
    let text = hlo::print_module(&module);
    if args.compact {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            outln!("{line}");
        }
    } else {
        out!("{text}");
    }
    Ok(ExitCode::SUCCESS)
}
