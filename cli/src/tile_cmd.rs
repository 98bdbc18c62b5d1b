//! `hloc tile FILE`: the symbolic tile of an instruction's output→operand map, or the tiled
//! computation of a fusion for given root tile sizes.

use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use clap::Args;

use indexing::OperandIndexing;
use tiling::{SymbolicTile, TilingError};

pub const FORMATS: &str = "\
OUTPUT FORMATS (stable; other tools parse them):
  --instr I --operand N: the symbolic tile of the output->input map from I to operand N,
  one field per line (d_i = the tile size of output dimension i):
    Symbolic tile with
      offset_map: (d0, d1)[s0] -> (s0, 0)
      size_map: (d0, d1) -> (d0, d1)
      stride_map: (d0, d1) -> (1, 1)
      constraints: d0 in [1, 1] || d1 in [8, 8]
      rt_vars: s0 in [0, 15]
  `constraints:` only when there are some: conjunctions (`&&`) joined by `||` (`&&` binds
  tighter), each constraint `expr in [lo, hi]` over the tile sizes; `rt_vars:` only when
  offsets depend on runtime values, which the offset map names `s0, s1, ...`. Where no exact
  tile exists (or the operand is not read): the single line `no symbolic tile`. Several maps
  (an operand read in several ways): one tile after another. An instruction with several
  outputs: each output's tiles under an `output id = K` header.
  --fusion F --tile-sizes s0,s1,...: the tiled computation of fusion F with its root tiled by
  s0,s1,..., one line per tiled instruction (operands before users):
    NAME: tile_sizes=(1, 10), tile_strides=(1, 1), tile_offsets_indexing=(pid_0) -> (...), domain: pid_0 in [0, 19]
  (the program-id -> tile-offsets map in the text form of `hloc map`, with runtime variables
  rtK where offsets are dynamic), or `not tileable: <reason>`.
  Exit codes: 0 an answer (`no symbolic tile` and `not tileable` included), 2 bad input
  (unreadable file, unknown instruction, wrong operand, tile sizes of the wrong rank or < 1).";

/// Arguments of `hloc tile`.
#[derive(Args)]
pub struct TileArgs {
    /// The HLO module (text, as XLA or JAX dump it); - for standard input.
    file: String,
    /// The instruction whose output->operand map is tiled (with --operand).
    #[arg(long, requires = "operand", conflicts_with = "fusion")]
    instr: Option<String>,
    /// The operand of --instr.
    #[arg(long, requires = "instr")]
    operand: Option<usize>,
    /// The fusion to tile (with --tile-sizes).
    #[arg(long, requires = "tile_sizes")]
    fusion: Option<String>,
    /// Root tile sizes, comma-separated (one per root dimension).
    #[arg(long = "tile-sizes", requires = "fusion")]
    tile_sizes: Vec<String>,
}

fn read_module(file: &str) -> Result<hlo::Module> {
    let text = if file == "-" {
        crate::input::text_arg("-")?
    } else {
        std::fs::read_to_string(file).map_err(|e| anyhow!("{file}: {e}"))?
    };
    let options = hlo::ParseOptions {
        file_name: Some(file.to_string()),
        ..hlo::ParseOptions::default()
    };
    Ok(hlo::parse_module_with(&text, &options)
        .map_err(|e| anyhow!("{e}"))?
        .module)
}

pub fn run(args: TileArgs) -> Result<ExitCode> {
    let module = read_module(&args.file)?;
    match (&args.instr, args.operand, &args.fusion) {
        (Some(name), Some(n), None) => print_operand_tile(&module, name, n),
        (None, None, Some(f)) => print_tiled(&module, f, &args.tile_sizes),
        _ => bail!("give --instr I --operand N, or --fusion F --tile-sizes s0,s1,..."),
    }
}

fn print_operand_tile(module: &hlo::Module, name: &str, n: usize) -> Result<ExitCode> {
    let handle = module
        .instr(name)
        .ok_or_else(|| anyhow!("--instr: no instruction named `{name}`"))?;
    let arity = handle.instr().operands().len();
    if n >= arity {
        bail!("--operand: `{name}` has {arity} operands; operand {n} does not exist");
    }
    let grouped = indexing::output_to_input(&handle)?;
    let multi = grouped.len() > 1;
    for (k, g) in grouped.iter().enumerate() {
        if multi {
            println!("output id = {k}");
        }
        let tiles: Vec<Option<SymbolicTile>> = match g.operands.get(n) {
            Some(set @ OperandIndexing::Maps(_)) => set
                .maps()
                .map(|m| SymbolicTile::from_indexing_map(&m.map))
                .collect(),
            Some(OperandIndexing::Undefined(_)) | None => Vec::new(),
        };
        if tiles.is_empty() {
            println!("{}", tiling::text::NO_TILE);
        }
        for t in tiles {
            match t {
                Some(t) => println!("{t}"),
                None => println!("{}", tiling::text::NO_TILE),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses `s0,s1,...`; a size must be a positive integer.
fn parse_sizes(text: &str) -> Result<Vec<i64>> {
    if let Some((name, _)) = text.split_once('=') {
        bail!("--tile-sizes: nested tilings (`{name}=...`) are not supported yet");
    }
    text.split(',')
        .map(|s| {
            let v: i64 = s
                .trim()
                .parse()
                .map_err(|_| anyhow!("--tile-sizes: `{}` is not an integer", s.trim()))?;
            if v < 1 {
                bail!("--tile-sizes: size {v} is below 1");
            }
            Ok(v)
        })
        .collect()
}

fn print_tiled(module: &hlo::Module, name: &str, sizes: &[String]) -> Result<ExitCode> {
    let fusion = module
        .instr(name)
        .ok_or_else(|| anyhow!("--fusion: no instruction named `{name}`"))?;
    let [sizes] = sizes else {
        bail!("--tile-sizes: give exactly one list of root tile sizes");
    };
    let sizes = parse_sizes(sizes)?;
    let shape = fusion.instr().shape();
    let root = if shape.is_tuple() {
        shape
            .tuple_shapes()
            .first()
            .map(|s| s.dims())
            .unwrap_or(&[])
    } else {
        shape.dims()
    };
    if sizes.len() != root.len() {
        bail!(
            "--tile-sizes: {} sizes for `{name}`, whose root has rank {}",
            sizes.len(),
            root.len()
        );
    }
    let analysis = match tiling::analyze(&fusion) {
        Ok(a) => a,
        Err(TilingError::NotAFusion(n)) => bail!("--fusion: `{n}` is not a fusion"),
        Err(e @ TilingError::NotTileable(_)) => {
            println!("{e}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.into()),
    };
    match analysis.tiled(&sizes) {
        Ok(t) => print!("{t}"),
        Err(e @ TilingError::NotTileable(_)) => println!("{e}"),
        Err(TilingError::BadTileSizes(m)) => bail!("--tile-sizes: {m}"),
        Err(e) => return Err(e.into()),
    }
    Ok(ExitCode::SUCCESS)
}
