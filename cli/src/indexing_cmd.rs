//! `hloc indexing FILE`: indexing maps of an instruction or fusion (logical or physical
//! shapes), of a producer-consumer pair, of a region from any of its values, epilogue maps,
//! with utilization and coalescing reports.

use std::fmt::Write;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use clap::{Args, ValueEnum};

use indexing::coalescing::{first_warp, first_warp_of_launch, SEGMENT, WARP};
use indexing::utilization::count_reads;
use indexing::{GroupedIndexing, OperandIndexing};

/// Largest number of points the utilization and coalescing reports enumerate per map.
const ENUMERATION_LIMIT: u128 = 1 << 24;

pub const FORMATS: &str = "\
OUTPUT FORMATS (stable; other tools parse them):
  out-to-in (default): one section per operand of the instruction (of the fusion, for a
  fusion: it is analysed through its computation, composing the ops' maps from the root):
    operand id = N
      <map>                      one line per map of the set (deduplicated, text order)
      runtime variables:         after a map with runtime variables rtK, one line each:
        rtK: <producer>; <map from the same variables to the producer's element read>
      unknown indexing: <reason> instead of maps when the access cannot be described
  An operand that is not read has a header and no maps. An instruction with several
  outputs (a tuple shape) groups the sections under `output id = K` headers, indented by
  two more spaces.
  in-to-out: for operand N (--operand; all operands under `operand id = N` headers when
  omitted): one `output id = K` section per output, holding the maps from the operand's
  indices to the output's.
  --producer P --consumer C: one `instr = NAME` section per instruction of the would-be
  fusion (fused computations are looked through) and per operand it reads, each holding
  the maps from C's output to that instruction, in traversal order from C.
  --instr R --grouped [--from S]: the same `instr = NAME` sections for the region R (a
  fusion or call, looked through; any other instruction is a region of one op), from the
  output of S (default: R itself; S may be R, an instruction of the computation R calls,
  or an operand of R) to every value of the region S reads and to R's operands it reads
  (parameters of R's computation are listed as the operands they stand for); several
  outputs of S are grouped under `output id = K`.
  --epilogue H [--to R]: `output id = K` sections as in-to-out, holding the maps from the
  output of H to output K of R (default: the root of H's computation; R must be in H's
  computation), composed forward through every path (the identity when H is R); empty
  when H does not reach that output.
  --physical-layout (out-to-in or in-to-out): the same sections, each map going between
  physical shapes instead of logical ones: the physical shape lists the dimensions in the
  layout's order, most major first (a shape without a layout is row-major); the logical
  map is composed with the physical-to-logical permutation of its source and the
  logical-to-physical permutation of its target, then simplified. Tiled layouts give
  `unknown indexing`.
  --utilization: `utilization:` then `  operand id = N: reads R, elements read U of E,
  reads per element: 0xA 1xB ...` (exact counts by enumerating every map's domain; each
  distinct map is one access; `not counted: ...` when a domain exceeds 2^24 points or
  positions depend on runtime values).
  --coalescing: `coalescing:` then `  operand id = N map M: L loads, T transactions, ideal
  I: coalesced|not coalesced` for the first warp (32 threads of block 0) under the thread
  map of the GPU emitter the instruction gets on --target (h100 unless given; the same map
  `hloc compile --target` builds the kernel from), printed first as `  thread map: ...`
  (per output of a multi-output instruction); addresses from the operand's layout,
  128-byte segments; each point of the operand map's range variables is one load, and a
  thread's unrolled elements (`unroll_id`) belong to the same load. Runtime variables the
  same for the whole warp (a dynamic slice's start, the gather index of the warp's row)
  are counted at 0 (or their bound nearest 0), the line then ending `(warp-uniform rt0 =
  V, ...)`;
  a runtime variable that differs between the warp's threads gives `not counted`.
  A map prints in XLA's syntax on one line: (d0, d1)[s0]{rt0} -> (...), domain: ...
  Exit codes: 0 success, 2 bad input (unreadable file, syntax error, unknown name).";

/// Which direction of maps to print.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Direction {
    /// From the output's indices to each operand's elements.
    OutToIn,
    /// From an operand's indices to each output's elements.
    InToOut,
}

/// Arguments of `hloc indexing`.
#[derive(Args)]
pub struct IndexingArgs {
    /// The HLO module (text, as XLA or JAX dump it); - for standard input.
    file: String,
    /// The instruction (any computation); default: the ENTRY root.
    #[arg(long)]
    instr: Option<String>,
    /// Direction of the maps.
    #[arg(long, value_enum, default_value = "out-to-in")]
    direction: Direction,
    /// Only this operand.
    #[arg(long)]
    operand: Option<usize>,
    /// Producer of a producer-consumer pair (with --consumer).
    #[arg(long, requires = "consumer")]
    producer: Option<String>,
    /// Consumer of a producer-consumer pair (with --producer).
    #[arg(long, requires = "producer")]
    consumer: Option<String>,
    /// Grouped maps of the region --instr (a fusion, looked through, or one op) from the
    /// value --from to every value it reads.
    #[arg(long, requires = "instr", conflicts_with_all = ["producer", "utilization", "coalescing", "physical_layout", "epilogue"])]
    grouped: bool,
    /// Where --grouped starts (default: the region itself).
    #[arg(long, requires = "grouped")]
    from: Option<String>,
    /// Epilogue maps: from this instruction's output to the root of its computation.
    #[arg(long, conflicts_with_all = ["instr", "producer", "utilization", "coalescing", "physical_layout"])]
    epilogue: Option<String>,
    /// Where --epilogue ends (default: the root of the hero's computation).
    #[arg(long, requires = "epilogue")]
    to: Option<String>,
    /// Maps between physical (layout-ordered) shapes of the output and operands.
    #[arg(long, conflicts_with_all = ["producer", "utilization", "coalescing"])]
    physical_layout: bool,
    /// Add the utilization report (out-to-in).
    #[arg(long)]
    utilization: bool,
    /// Add the coalescing report (out-to-in).
    #[arg(long)]
    coalescing: bool,
    /// The GPU whose emitters' thread maps --coalescing uses.
    #[arg(long, value_enum, default_value = "h100", requires = "coalescing")]
    target: GpuTarget,
}

/// GPU targets of --coalescing.
#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum GpuTarget {
    /// NVIDIA H100 (132 SMs).
    H100,
    /// NVIDIA H200 (132 SMs, HBM3e).
    H200,
}

impl GpuTarget {
    /// The device description's name.
    fn name(self) -> &'static str {
        match self {
            GpuTarget::H100 => "h100",
            GpuTarget::H200 => "h200",
        }
    }
}

fn read_module(file: &str) -> Result<hlo::Module> {
    Ok(crate::source::load(file)?.1.module)
}

fn lookup<'m>(module: &'m hlo::Module, flag: &str, name: &str) -> Result<hlo::InstrRef<'m>> {
    crate::source::instr(module, flag, name)
}

pub fn run(args: IndexingArgs) -> Result<ExitCode> {
    let module = read_module(&args.file)?;
    let mut out = String::new();
    if let (Some(p), Some(c)) = (&args.producer, &args.consumer) {
        let producer = lookup(&module, "--producer", p)?;
        let consumer = lookup(&module, "--consumer", c)?;
        if producer.comp_id() != consumer.comp_id() {
            bail!("`{p}` and `{c}` are in different computations");
        }
        let v = indexing::producer_consumer(&producer, &consumer)?;
        out!("{}", indexing::format_values(&v));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(h) = &args.epilogue {
        let hero = lookup(&module, "--epilogue", h)?;
        let maps = match &args.to {
            Some(r) => indexing::epilogue_indexing_to(&hero, &lookup(&module, "--to", r)?)?,
            None => indexing::epilogue_indexing(&hero)?,
        };
        out!("{}", indexing::format_in_to_out(&maps));
        return Ok(ExitCode::SUCCESS);
    }
    let handle = match &args.instr {
        Some(n) => lookup(&module, "--instr", n)?,
        None => module
            .instr_ref(module.entry_id(), module.entry().root())
            .ok_or_else(|| anyhow!("the entry computation has no root"))?,
    };
    if args.grouped {
        let start = match &args.from {
            Some(n) => lookup(&module, "--from", n)?,
            None => handle,
        };
        let v = indexing::grouped_from(&handle, &start)?;
        out!("{}", indexing::format_values(&v));
        return Ok(ExitCode::SUCCESS);
    }
    let instr = handle.instr();
    let arity = instr.operands().len();
    if let Some(n) = args.operand {
        if n >= arity {
            bail!(
                "`{}` has {arity} operands; operand {n} does not exist",
                instr.name()
            );
        }
    }
    if args.direction == Direction::InToOut {
        let operands: Vec<usize> = match args.operand {
            Some(n) => vec![n],
            None => (0..arity).collect(),
        };
        for n in operands {
            let v = if args.physical_layout {
                indexing::input_to_output_physical(&handle, n)?
            } else {
                indexing::input_to_output(&handle, n)?
            };
            if args.operand.is_some() {
                out.push_str(&indexing::format_in_to_out(&v));
            } else {
                let _ = writeln!(out, "operand id = {n}");
                for line in indexing::format_in_to_out(&v).lines() {
                    let _ = writeln!(out, "  {line}");
                }
            }
        }
        out!("{out}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut grouped = if args.physical_layout {
        indexing::output_to_input_physical(&handle)?
    } else {
        indexing::output_to_input(&handle)?
    };
    if let Some(n) = args.operand {
        for g in &mut grouped {
            for (j, s) in g.operands.iter_mut().enumerate() {
                if j != n {
                    *s = OperandIndexing::none();
                }
            }
        }
        out.push_str(&only_operand(&grouped, n));
    } else {
        out.push_str(&indexing::format_grouped(&grouped));
    }
    let operand_shape = |j: usize| {
        let c = handle.computation();
        c.instr(instr.operands()[j]).shape().clone()
    };
    let selected = |j: usize| args.operand.is_none_or(|n| n == j);
    if args.utilization {
        out.push_str("utilization:\n");
        for (k, g) in grouped.iter().enumerate() {
            for (j, s) in g.operands.iter().enumerate().filter(|(j, _)| selected(*j)) {
                let u = count_reads(s, operand_shape(j).dims(), ENUMERATION_LIMIT);
                let _ = writeln!(out, "  {}operand id = {j}: {u}", output_prefix(&grouped, k));
            }
        }
    }
    if args.coalescing {
        let device = device::load(args.target.name())?;
        let _ = writeln!(
            out,
            "coalescing: first warp of {WARP} threads on {}, {SEGMENT}-byte segments",
            args.target.name()
        );
        for (k, g) in grouped.iter().enumerate() {
            let shape = if instr.shape().is_tuple() {
                instr.shape().tuple_shapes()[k].clone()
            } else {
                instr.shape().clone()
            };
            let counted = crate::coalescing_launch::CountedLaunch::choose(
                &module,
                handle.computation(),
                handle.id(),
                &shape,
                &device,
            )?;
            let launch = &counted.launch;
            let _ = writeln!(
                out,
                "  {}{}\n  {}thread map: {}",
                output_prefix(&grouped, k),
                launch.dims_text(),
                output_prefix(&grouped, k),
                launch.thread_map_text()
            );
            if let Some((read, prologue)) = &counted.transpose_reads {
                let shown = fusion::gpu_launch::Launch {
                    thread_map: read.clone(),
                    ..launch.clone()
                };
                let _ = writeln!(
                    out,
                    "  {}read map (operands {prologue:?}): {}",
                    output_prefix(&grouped, k),
                    shown.thread_map_text()
                );
            }
            for (j, s) in g.operands.iter().enumerate().filter(|(j, _)| selected(*j)) {
                let threads = first_warp_of_launch(counted.thread_map_for(j))?;
                if let OperandIndexing::Undefined(r) = s {
                    let _ = writeln!(
                        out,
                        "  {}operand id = {j}: not counted: unknown indexing: {r}",
                        output_prefix(&grouped, k)
                    );
                    continue;
                }
                for (m, map) in s.maps().enumerate() {
                    let Some(map) = counted.operand_map(map) else {
                        let _ = writeln!(
                            out,
                            "  {}operand id = {j} map {m}: not counted: the reduction's \
                             dimensions are not the map's range variables",
                            output_prefix(&grouped, k)
                        );
                        continue;
                    };
                    let c = first_warp(&threads, &map, &operand_shape(j), ENUMERATION_LIMIT)?;
                    let _ = writeln!(
                        out,
                        "  {}operand id = {j} map {m}: {c}",
                        output_prefix(&grouped, k)
                    );
                }
            }
        }
    }
    out!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn output_prefix(grouped: &[GroupedIndexing], k: usize) -> String {
    if grouped.len() > 1 {
        format!("output id = {k} ")
    } else {
        String::new()
    }
}

/// The sections of operand `n` only.
fn only_operand(grouped: &[GroupedIndexing], n: usize) -> String {
    let mut s = String::new();
    let multi = grouped.len() > 1;
    for (k, g) in grouped.iter().enumerate() {
        let pad = if multi {
            let _ = writeln!(s, "output id = {k}");
            "  "
        } else {
            ""
        };
        let _ = writeln!(s, "{pad}operand id = {n}");
        s.push_str(&indexing::format_operand(
            &g.operands[n],
            &format!("{pad}  "),
        ));
    }
    s
}
