//! `hloc opt`: run passes on an HLO module, print the result; dumps and timing.

use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;
use hlo::pass::{DumpConfig, Pass, PassContext};

/// Arguments of `hloc opt`.
#[derive(Args, Debug)]
#[command(after_help = "\
Output: the optimized module on stdout, in the input's text conventions.
--time-passes prints to stderr one row per pass, slowest first: time in ms, share of the
total, runs, runs that changed the module, name; then a `total` row.
Dumps (XLA's names): module_0000.<name>.before_optimizations.txt, ...after_optimizations.txt,
and with --dump-pass-re, module_0000.<name>.SSSS.<pipeline>.after_<pass>.before_<next>.txt
after every matching pass that changed the module.
Logging: RUST_LOG=info,hlo::pass=debug (levels off|error|warn|info|debug|trace; HLOC_LOG is an alias),
HLOC_LOG_FILE=path to append to a file instead of stderr.
Exit codes: 0 success, 1 a pass or the verifier failed, 2 bad input or flags.")]
pub struct OptArgs {
    /// The HLO module file (`-` for standard input).
    #[arg(required_unless_present = "list_passes")]
    file: Option<String>,
    /// Comma-separated passes to run in order; `default` is the default target-independent
    /// pipeline, `fusion` the fusion passes for --target followed by CSE and DCE.
    #[arg(long, default_value = "default")]
    passes: String,
    /// The device description the fusion passes read (`cpu`, `h100`, or a file).
    #[arg(long, default_value = "cpu")]
    target: String,
    /// Skip the pass (or pipeline) of this name; repeatable or comma-separated.
    #[arg(long, value_delimiter = ',')]
    disable: Vec<String>,
    /// Write XLA-style dumps into this directory.
    #[arg(long, value_name = "DIR")]
    dump_to: Option<String>,
    /// Also dump after every pass whose name matches this regex (needs --dump-to).
    #[arg(long, value_name = "RE")]
    dump_pass_re: Option<String>,
    /// Print the wall time and change count of every pass to stderr.
    #[arg(long)]
    time_passes: bool,
    /// Run the verifier after every pass.
    #[arg(long)]
    verify_each: bool,
    /// List the passes with a one-line description and exit.
    #[arg(long)]
    list_passes: bool,
    /// Print the module without blank lines (for line-oriented tools and golden tests).
    #[arg(long)]
    compact: bool,
}

/// Runs `hloc opt`.
pub fn run(args: OptArgs) -> Result<ExitCode> {
    let device = load_device(&args.target)?;
    if args.list_passes {
        let passes = runtime::pipeline::all_passes(&device);
        let width = passes.iter().map(|p| p.name().len()).max().unwrap_or(0);
        for p in &passes {
            outln!("{:width$}  {}", p.name(), p.description());
        }
        outln!("{:width$}  the default pipeline", "default");
        outln!("{:width$}  the fusion passes, then cse and dce", "fusion");
        return Ok(ExitCode::SUCCESS);
    }
    let file = args.file.as_deref().unwrap_or("-");
    let mut module = crate::source::load(file)?.1.module;
    let mut pipeline = runtime::pipeline::pipeline_from_list("opt", &args.passes, &device)
        .map_err(anyhow::Error::msg)?;
    let mut ctx = PassContext::new();
    for d in &args.disable {
        ctx.disable(d.trim());
    }
    if args.verify_each {
        ctx.set_verifier(hlo::pass::verify::verify_hook());
    }
    if args.dump_pass_re.is_some() && args.dump_to.is_none() {
        bail!("--dump-pass-re needs --dump-to");
    }
    let dump = match &args.dump_to {
        Some(dir) => {
            let mut d = DumpConfig::new(dir, 0);
            if let Some(re) = &args.dump_pass_re {
                let re = match regex::Regex::new(re) {
                    Ok(re) => re,
                    Err(e) => bail!("bad --dump-pass-re: {e}"),
                };
                d = d.with_pass_filter(Box::new(move |name| re.is_match(name)));
            }
            d.write_before_optimizations(&module)?;
            Some(d)
        }
        None => None,
    };
    let after_dump = dump.as_ref().map(|d| DumpConfig::new(d.dir(), 0));
    if let Some(d) = dump {
        ctx.set_dump(d);
    }
    let result = pipeline.run_in(&mut module, &mut ctx);
    if args.time_passes {
        eprint!("{}", ctx.stats().table());
    }
    if let Err(e) = result {
        eprintln!("{e}");
        return Ok(ExitCode::from(1));
    }
    if let Some(d) = after_dump {
        d.write_after_optimizations(&module)?;
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

/// The device description named by `--target`: a shipped name or a file.
fn load_device(target: &str) -> Result<device::Device> {
    let loaded = if std::path::Path::new(target).is_file() {
        device::load_file(std::path::Path::new(target))
    } else {
        device::load(target)
    };
    loaded.map_err(|e| anyhow::anyhow!("--target: {e}"))
}
