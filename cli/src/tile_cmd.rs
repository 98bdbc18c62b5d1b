//! `hloc tile FILE`: the symbolic tile of an instruction's output→operand map, the tiled
//! computation of a fusion for given root tile sizes, or tile propagation through one
//! instruction (to its operands or to its outputs).

use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use clap::Args;

use indexing::OperandIndexing;
use tiling::propagate::{Propagated, Tile, TilingMode, TilingSpace};
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
  --map (FILE holds an indexing map, not a module): its symbolic tile, as above.
  --fusion F alone: the symbolic tile analysis of F, or `not tileable: <reason>`:
    symbolic tile analysis of F, root dimensions [4, 8]
    constraints: d0 mod 8 in [0, 0] || 8 mod d0 in [0, 0]
    p0: (d0, d1) -> (d0 floordiv 2, d1), domain: d0 in [0, 3], d1 in [0, 7]
      rt0 = off: (d0, d1) -> (), domain: d0 in [0, 3], d1 in [0, 7]
      Symbolic tile with
        ...
  (`constraints: none` when every tile size is admitted; per tiled instruction its map
  from the root's indices, one `rtK = PRODUCER: MAP` line per runtime variable, and its
  symbolic tile indented; tiling::SymbolicTileAnalysis::parse reads it back).
  --fusion F --tile-sizes s0,s1,... [--tile-sizes NAME=t0,...]: the tiled computation of
  fusion F with its root tiled by s0,s1,... and, with NAME=..., the own dimensions of the
  dot or reduce NAME (contracting, reduced) tiled by t0,... (walked inside each program; the
  offsets are those of the first step; computed by tile propagation), one line per tiled
  instruction (operands before users); with --regions (computed by tile propagation), the
  instructions under a nested tiling of n_1, n_2, ... steps (outermost first) are numbered
  as XLA's regions are: pid_0 in [0, P * n_1 * n_2 ... - 1] for P programs, pid_0 =
  (p * n_1 + s_1) * n_2 + s_2 ..., with the offsets of step s_1, s_2, ... of program p:
    NAME: tile_sizes=(1, 10), tile_strides=(1, 1), tile_offsets_indexing=(pid_0) -> (...), domain: pid_0 in [0, 19]
  (the program-id -> tile-offsets map in the text form of `hloc map`, with runtime variables
  rtK where offsets are dynamic), or `not tileable: <reason>`.
  --instr I --to-operands [--output K] [--tile TILE | --tile-sizes s0,...] and
  --instr I --to-output --operand N --tile TILE [--space-extents e0,... [--space-tile-sizes
  s0,...]]: tile propagation through I (the tile's tile ids inside the extents given, with
  the concrete tile sizes given, else any). A TILE, in and
  out, is one line over tile ids tid_i, tile sizes ts_i and runtime values rt_i:
    (tid_0, tid_1){rt_0} -> offsets [tid_0 * ts_0, tid_1 * ts_1 + rt_0] sizes [ts_0, ts_1] strides [1, 2] upper bounds [10, 15]
  (along each dimension the indices offset + k * stride, k < size, those outside
  [0, upper bound) masked). The tiling space of I numbers the dimensions of output K first,
  then I's own dimensions (a reduce's reduced dimensions, a dot's contracting dimensions);
  --tile-sizes gives one concrete size per dimension of that space; with neither --tile nor
  --tile-sizes, the symbolic root tile. Output: `operand id = N` (or `output id = K`)
  headers, each followed by its tile or by `no tile: <reason>` where none is exact.
  Exit codes: 0 an answer (`no symbolic tile` and `not tileable` included), 2 bad input
  (unreadable file, unknown instruction, wrong operand, tile sizes of the wrong rank or < 1,
  a tile that does not parse or fit; the message names the flag).";

/// Arguments of `hloc tile`.
#[derive(Args)]
pub struct TileArgs {
    /// The HLO module (text, as XLA or JAX dump it); - for standard input.
    file: String,
    /// The instruction whose output->operand map is tiled (with --operand), or through
    /// which a tile is propagated (with --to-operands or --to-output).
    #[arg(long, conflicts_with = "fusion")]
    instr: Option<String>,
    /// The operand of --instr.
    #[arg(long, requires = "instr")]
    operand: Option<usize>,
    /// The fusion to tile: its symbolic tile analysis, or with --tile-sizes its tiled
    /// computation.
    #[arg(long)]
    fusion: Option<String>,
    /// FILE holds an indexing map (XLA's syntax, as `hloc map` reads it), not a module:
    /// print its symbolic tile.
    #[arg(long, conflicts_with_all = ["instr", "fusion", "tile", "tile_sizes"])]
    map: bool,
    /// Tile sizes, comma-separated: one per root dimension of --fusion, or one per dimension
    /// of the tiling space of --instr with --to-operands.
    #[arg(long = "tile-sizes")]
    tile_sizes: Vec<String>,
    /// Propagate a tile of an output of --instr to its operands.
    #[arg(long = "to-operands", requires = "instr", conflicts_with = "to_output")]
    to_operands: bool,
    /// Propagate a tile of operand --operand of --instr to its outputs.
    #[arg(long = "to-output", requires_all = ["instr", "operand", "tile"])]
    to_output: bool,
    /// The output of --instr whose tile is propagated (with --to-operands; default 0).
    #[arg(long, requires = "to_operands")]
    output: Option<usize>,
    /// The tile to propagate (see OUTPUT FORMATS).
    #[arg(long, conflicts_with = "tile_sizes")]
    tile: Option<String>,
    /// With --to-output: the extents of the tiling space the --tile is written over, one per
    /// tile id (tile ids then stay inside them, so a tile along a dimension of extent 1 holds
    /// its one index); default: unknown (any tile id).
    #[arg(long = "space-extents", requires = "to_output")]
    space_extents: Option<String>,
    /// With --space-extents: the concrete tile size of every dimension of that space (tile
    /// ids then stay inside the tiles that fit the extents, as for a tile of those sizes);
    /// default: symbolic sizes ts_i.
    #[arg(long = "space-tile-sizes", requires = "space_extents")]
    space_tile_sizes: Option<String>,
    /// With --fusion F --tile-sizes: number the programs of the instructions under a nested
    /// tiling as XLA's regions do (program ids over programs x steps).
    #[arg(long, requires_all = ["fusion", "tile_sizes"])]
    regions: bool,
    /// With --to-operands or --to-output: a scan's programs along its scanned dimension run
    /// in order, each step reading only its own rows (the carry holds the earlier ones), as
    /// XLA's tile propagation has it; a carry output or init then has no tile.
    #[arg(long = "scan-steps")]
    scan_steps: bool,
    /// With --to-operands or --to-output: a ragged dot's programs walk its groups one after
    /// another, as XLA's tile propagation has it: tiles along the ragged dimension are
    /// relative to the step's group and masked by its size (a runtime value), and the
    /// non-contracting form's space gains the group dimension ahead of the contracting ones.
    #[arg(long = "group-steps")]
    group_steps: bool,
}

fn read_module(file: &str) -> Result<hlo::Module> {
    Ok(crate::source::load(file)?.1.module)
}

pub fn run(args: TileArgs) -> Result<ExitCode> {
    if args.map {
        return print_map_tile(&args.file);
    }
    let module = read_module(&args.file)?;
    if args.to_operands || args.to_output {
        return propagate(&module, &args);
    }
    if args.tile.is_some() {
        bail!("--tile: give it with --to-operands or --to-output");
    }
    match (&args.instr, args.operand, &args.fusion) {
        (Some(name), Some(n), None) => print_operand_tile(&module, name, n),
        (None, None, Some(f)) if args.tile_sizes.is_empty() => print_analysis(&module, f),
        (None, None, Some(f)) => print_tiled(&module, f, &args.tile_sizes, args.regions),
        (Some(_), None, None) => {
            bail!(
                "--instr: give --operand N, --to-operands, or --to-output --operand N --tile TILE"
            )
        }
        _ => bail!("give --instr I --operand N, or --fusion F --tile-sizes s0,s1,..."),
    }
}

/// `--map`: the symbolic tile of the map in `file`.
fn print_map_tile(file: &str) -> Result<ExitCode> {
    let text = if file == "-" {
        crate::input::text_arg("-")?
    } else {
        std::fs::read_to_string(file).map_err(|e| anyhow!("{file}: {e}"))?
    };
    let map: affine::IndexingMap = text
        .parse()
        .map_err(|e| anyhow!("{file}: not an indexing map: {e}"))?;
    match SymbolicTile::derive(&map) {
        Ok(t) => outln!("{t}"),
        Err(_) => outln!("{}", tiling::text::NO_TILE),
    }
    Ok(ExitCode::SUCCESS)
}

/// `--fusion F` alone: the symbolic tile analysis of F in its text form.
fn print_analysis(module: &hlo::Module, name: &str) -> Result<ExitCode> {
    let fusion = crate::source::instr(module, "--fusion", name)?;
    match tiling::analyze(&fusion) {
        Ok(a) => out!("{a}"),
        Err(TilingError::NotAFusion(n)) => bail!("--fusion: `{n}` is not a fusion"),
        Err(e @ TilingError::NotTileable(_)) => outln!("{e}"),
        Err(e) => return Err(e.into()),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_operand_tile(module: &hlo::Module, name: &str, n: usize) -> Result<ExitCode> {
    let handle = crate::source::instr(module, "--instr", name)?;
    let arity = handle.instr().operands().len();
    if n >= arity {
        bail!("--operand: `{name}` has {arity} operands; operand {n} does not exist");
    }
    let grouped = tiling::output_to_input(&handle)?;
    let multi = grouped.len() > 1;
    for (k, g) in grouped.iter().enumerate() {
        if multi {
            outln!("output id = {k}");
        }
        let tiles: Vec<Option<SymbolicTile>> = match g.operands.get(n) {
            Some(set @ OperandIndexing::Maps(_)) => set
                .maps()
                .map(|m| SymbolicTile::from_indexing_map(&m.map))
                .collect(),
            Some(OperandIndexing::Undefined(_)) | None => Vec::new(),
        };
        if tiles.is_empty() {
            outln!("{}", tiling::text::NO_TILE);
        }
        for t in tiles {
            match t {
                Some(t) => outln!("{t}"),
                None => outln!("{}", tiling::text::NO_TILE),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses `s0,s1,...`; a size must be a positive integer.
pub(crate) fn parse_sizes(text: &str) -> Result<Vec<i64>> {
    if let Some((name, _)) = text.split_once('=') {
        bail!("--tile-sizes: a nested tiling (`{name}=...`) where one list of sizes is expected");
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

fn print_tiled(
    module: &hlo::Module,
    name: &str,
    sizes: &[String],
    regions: bool,
) -> Result<ExitCode> {
    let fusion = crate::source::instr(module, "--fusion", name)?;
    let (named, unnamed): (Vec<&String>, Vec<&String>) =
        sizes.iter().partition(|s| s.contains('='));
    let [sizes] = unnamed.as_slice() else {
        bail!("--tile-sizes: give exactly one list of root tile sizes (and NAME=... lists)");
    };
    let sizes = parse_sizes(sizes)?;
    let mut nested = Vec::new();
    for n in named {
        let (instr, list) = n.split_once('=').unwrap_or_default();
        if nested.iter().any(|(m, _): &(String, Vec<i64>)| m == instr) {
            bail!("--tile-sizes: `{instr}` is given twice");
        }
        nested.push((instr.to_string(), parse_sizes(list)?));
    }
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
    if !nested.is_empty() || regions {
        let mode = if regions {
            TilingMode::Regions
        } else {
            TilingMode::FirstStep
        };
        match tiling::propagate::tiled_by_propagation_with(&fusion, &sizes, &nested, mode) {
            Ok(t) => out!("{t}"),
            Err(TilingError::NotAFusion(n)) => bail!("--fusion: `{n}` is not a fusion"),
            Err(e @ TilingError::NotTileable(_)) => outln!("{e}"),
            Err(TilingError::BadTileSizes(m)) => bail!("--tile-sizes: {m}"),
            Err(e) => return Err(e.into()),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let analysis = match tiling::analyze(&fusion) {
        Ok(a) => a,
        Err(TilingError::NotAFusion(n)) => bail!("--fusion: `{n}` is not a fusion"),
        Err(e @ TilingError::NotTileable(_)) => {
            outln!("{e}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(e.into()),
    };
    match analysis.tiled(&sizes) {
        Ok(t) => out!("{t}"),
        Err(e @ TilingError::NotTileable(_)) => outln!("{e}"),
        Err(TilingError::BadTileSizes(m)) => bail!("--tile-sizes: {m}"),
        Err(e) => return Err(e.into()),
    }
    Ok(ExitCode::SUCCESS)
}

/// `--to-operands` / `--to-output`: tile propagation through `--instr`.
fn propagate(module: &hlo::Module, args: &TileArgs) -> Result<ExitCode> {
    let name = args.instr.as_deref().unwrap_or_default();
    let instr = crate::source::instr(module, "--instr", name)?;
    let tile = match &args.tile {
        Some(t) => Some(t.parse::<Tile>().map_err(|e| anyhow!("--tile: {e}"))?),
        None => None,
    };
    let bad_tile = |e: TilingError| match e {
        TilingError::BadTile(m) => anyhow!("--tile: {m}"),
        other => anyhow!("{other}"),
    };
    let (label, tiles): (&str, Vec<Propagated>) = if args.to_output {
        let n = args.operand.unwrap_or_default();
        let arity = instr.instr().operands().len();
        if n >= arity {
            bail!("--operand: `{name}` has {arity} operands; operand {n} does not exist");
        }
        if !args.tile_sizes.is_empty() {
            bail!("--tile-sizes: --to-output takes --tile TILE");
        }
        let tile = tile.ok_or_else(|| anyhow!("--tile: --to-output needs a tile"))?;
        let mut space = match &args.space_extents {
            Some(e) => {
                let extents = e
                    .split(',')
                    .map(|x| x.trim().parse::<i64>().ok().filter(|&v| v >= 1))
                    .collect::<Option<Vec<i64>>>()
                    .ok_or_else(|| {
                        anyhow!("--space-extents: `{e}` is not a list of positive integers")
                    })?;
                if extents.len() != tile.num_tids {
                    bail!(
                        "--space-extents: {} extents for a tile over {} tile ids",
                        extents.len(),
                        tile.num_tids
                    );
                }
                let mut space = TilingSpace::parallel(&extents);
                if let Some(sizes) = &args.space_tile_sizes {
                    space
                        .set_tile_sizes(&parse_sizes(sizes)?)
                        .map_err(|e| anyhow!("--space-tile-sizes: {e}"))?;
                }
                space
            }
            None => TilingSpace::default(),
        };
        space.scan_steps = args.scan_steps;
        space.group_steps = args.group_steps;
        let tiles =
            tiling::propagate::to_outputs(&mut space, &instr, n, &tile).map_err(bad_tile)?;
        ("output", tiles)
    } else {
        if args.operand.is_some() {
            bail!("--operand: --to-operands propagates to every operand");
        }
        let k = args.output.unwrap_or(0);
        let mut space =
            TilingSpace::for_op_in(&instr, k, args.group_steps).map_err(|e| match e {
                TilingError::BadTileSizes(m) => anyhow!("--output: {m}"),
                other => anyhow!("{other}"),
            })?;
        let root = match (tile, args.tile_sizes.as_slice()) {
            (Some(t), _) => {
                if t.num_tids != space.dims.len() {
                    bail!(
                        "--tile: the tiling space of `{name}` has {} dimensions; the tile names {} tile ids",
                        space.dims.len(),
                        t.num_tids
                    );
                }
                t
            }
            (None, []) => space.root_tile(),
            (None, [sizes]) => {
                let sizes = parse_sizes(sizes)?;
                space
                    .set_tile_sizes(&sizes)
                    .map_err(|e| anyhow!("--tile-sizes: {e}"))?;
                space.root_tile()
            }
            (None, _) => bail!("--tile-sizes: give exactly one list of tile sizes"),
        };
        space.scan_steps = args.scan_steps;
        let tiles =
            tiling::propagate::to_operands(&mut space, &instr, k, &root).map_err(bad_tile)?;
        ("operand", tiles)
    };
    for (i, t) in tiles.iter().enumerate() {
        outln!("{label} id = {i}");
        match t {
            Ok(t) => outln!("{t}"),
            Err(reason) => outln!("{}: {reason}", tiling::propagate::NO_TILE),
        }
    }
    Ok(ExitCode::SUCCESS)
}
