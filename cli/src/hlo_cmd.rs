//! `hloc fmt`, `hloc verify`, `hloc graph`: HLO modules in XLA's text format.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use clap::{Args, ValueEnum};

use hlo::graph::{to_dot, to_json, Graph};
use hlo::{print_module, print_module_with, PrintOptions};

/// `hloc fmt FILE|-`.
#[derive(Args)]
#[command(after_help = "\
EXAMPLE:
  hloc fmt corpus/softmax/before_optimizations.hlo
  cat jax_dump.txt | hloc fmt -      (read standard input)

Prints the module in XLA's canonical text: one instruction per line, computed signatures,
numbers in XLA's shortest round-trip form, in the conventions the input used (sigils,
operand shapes); --xla-style prints with % sigils and operand shapes as
HloModule::ToString() does. Parser warnings (unknown module attributes kept verbatim) go to
stderr; an unknown instruction attribute is an error, as in XLA.

EXIT CODES: 0 printed; 2 unreadable file or syntax error (file:line:col, the line and a caret).")]
pub struct FmtArgs {
    /// The HLO module file, or - for standard input.
    file: String,
    /// Print in HloModule::ToString()'s style whatever the input's conventions.
    #[arg(long)]
    xla_style: bool,
}

/// `hloc verify FILE|-`.
#[derive(Args)]
#[command(after_help = "\
EXAMPLE:
  hloc verify corpus/attention/after_optimizations.hlo
  prints: ok

Checks structure (unique names, operands defined before use, no cycles, parameters, root),
infers every instruction's shape by XLA's rules (elementwise, broadcast, reshape, slices,
reduce and its reducer's signature, dot and convolution dimension numbers, gather/scatter,
while/conditional/call signatures, collectives, async chains and their single-user rule, ...)
and compares it with the declared shape, ignoring layouts (unless --layouts); layouts must
be permutations of their dimensions.
Every error is printed, one per line:
  FILE:LINE:COL: error: COMPUTATION/INSTRUCTION: message
or, for problems of a whole computation or module (no line to point at),
  FILE: COMPUTATION: message

EXIT CODES: 0 ok; 1 verification errors; 2 unreadable file or syntax error.")]
pub struct VerifyArgs {
    /// The HLO module file, or - for standard input.
    file: String,
    /// Also check layouts as after XLA's layout assignment: every array has one, and loop
    /// state, called computations' parameters and roots, tuple elements and the entry
    /// computation layout agree on them.
    #[arg(long)]
    layouts: bool,
}

/// Output formats of `hloc graph`.
#[derive(Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    /// JSON, schema "hloc-graph-1" (see the hlo crate's `graph` module docs).
    Json,
    /// Graphviz dot (render with `dot -Tsvg`).
    Dot,
}

/// `hloc graph FILE --format json|dot [-o OUT]`.
#[derive(Args)]
#[command(after_help = "\
EXAMPLE:
  hloc graph corpus/mlp_forward/before_optimizations.hlo --format dot -o mlp.dot
  dot -Tsvg mlp.dot > mlp.svg

Nodes are instructions (name, opcode, shape, metadata op_name and source file:line), edges
are operand uses labelled with the operand index, computations are clusters nested under
the computation that first calls them (dashed edges go from a caller to the callee's root).
JSON lists computations, nodes and edges in module order, one per line:
  {\"schema\": \"hloc-graph-1\", \"module\", \"entry\", \"computations\": [{index, name,
  parent, callers, root, nodes}], \"nodes\": [{id, computation, name, opcode, shape,
  op_name, source, calls}], \"edges\": [{from, to, operand}]}

EXIT CODES: 0 written; 2 unreadable file, syntax error or unwritable output.")]
pub struct GraphArgs {
    /// The HLO module file, or - for standard input.
    file: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    format: GraphFormat,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long = "output")]
    output: Option<String>,
}

/// Writes to stdout, ignoring a closed pipe (`hloc fmt big.hlo | head`).
fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// `hloc fmt`.
pub fn fmt(args: FmtArgs) -> Result<ExitCode> {
    let (_, parsed) = crate::source::load(&args.file)?;
    let printed = if args.xla_style {
        print_module_with(&parsed.module, &PrintOptions::default())
    } else {
        print_module(&parsed.module)
    };
    emit(&printed)?;
    Ok(ExitCode::SUCCESS)
}

/// `hloc verify`.
pub fn verify(args: VerifyArgs) -> Result<ExitCode> {
    let (crate::source::Source { text, name }, parsed) = crate::source::load(&args.file)?;
    let options = hlo::verifier::VerifyOptions {
        layout_sensitive: args.layouts,
    };
    match hlo::verifier::verify_parsed_with(&parsed, &text, &options) {
        Ok(()) => {
            emit("ok\n")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            let mut out = String::new();
            for e in &errors {
                out.push_str(&e.render(&name));
                out.push('\n');
            }
            emit(&out)?;
            Ok(ExitCode::from(1))
        }
    }
}

/// `hloc graph`.
pub fn graph(args: GraphArgs) -> Result<ExitCode> {
    let (_, parsed) = crate::source::load(&args.file)?;
    let g = Graph::of_module(&parsed.module);
    let out = match args.format {
        GraphFormat::Json => to_json(&g),
        GraphFormat::Dot => to_dot(&g),
    };
    match &args.output {
        Some(path) => std::fs::write(path, out).map_err(|e| anyhow!("cannot write {path}: {e}"))?,
        None => emit(&out)?,
    }
    Ok(ExitCode::SUCCESS)
}
