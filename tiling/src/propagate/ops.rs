//! Propagation through one instruction: from a tile of an output to a tile of every operand
//! ([`to_operands`]), and from a tile of an operand to a tile of every output
//! ([`to_outputs`]), by [`super::derive`] on the instruction's indexing maps
//! (`indexing::output_to_input` / `input_to_output`: the op's own table, runtime values of
//! constants folded; a fusion or call through its computation).

use hlo::InstrRef;
use indexing::{IndexedMap, OperandIndexing};

use super::derive::derive;
use super::reshape::reshape_tile;
use super::scan_steps::{carry_operand, carry_output};
use super::space::{output_dims, own_dims_in, TilingSpace};
use super::tile::Tile;
use crate::TilingError;

/// A propagated tile, or why there is none.
pub type Propagated = Result<Tile, String>;

/// The one map of an operand set, normalized; `Err(reason)` when there is not exactly one.
fn single_map(set: &OperandIndexing) -> Result<IndexedMap, String> {
    match set {
        OperandIndexing::Undefined(r) => Err(format!("unknown indexing: {r}")),
        OperandIndexing::Maps(maps) => {
            let mut it = maps.values();
            match (it.next(), it.next()) {
                (None, _) => Err("not read".into()),
                (Some(m), None) => {
                    let mut m = m.clone();
                    m.normalize().map_err(|e| format!("map algebra: {e}"))?;
                    Ok(m)
                }
                (Some(_), Some(_)) => Err(format!("read in {} ways", maps.len())),
            }
        }
    }
}

/// Sets every tile's variable counts to the space's.
fn finish(space: &TilingSpace, tiles: Vec<Propagated>) -> Vec<Propagated> {
    tiles
        .into_iter()
        .map(|t| {
            t.map(|mut t| {
                t.num_tids = space.dims.len();
                t.num_rt = space.rt.len();
                t
            })
        })
        .collect()
}

/// The tiles of every operand of `instr` that `tile`, a tile of its output `output`, reads.
/// The op's own dimensions (reduced, contracting) are added to `space` (see
/// [`TilingSpace::add_own_dims`]) and tiled by their tile ids; runtime values the offsets
/// read are added too. Fails when `tile`'s rank is not the output's, or the indexing maps
/// cannot be computed; an operand without a tile gets `Err(reason)`.
pub fn to_operands(
    space: &mut TilingSpace,
    instr: &InstrRef<'_>,
    output: usize,
    tile: &Tile,
) -> Result<Vec<Propagated>, TilingError> {
    let dims = output_dims(instr.instr(), output).ok_or_else(|| {
        TilingError::BadTile(format!("`{}` has no array output {output}", instr.name()))
    })?;
    if tile.dims.len() != dims.len() {
        return Err(TilingError::BadTile(format!(
            "a tile of rank {} for output {output} of `{}`, of rank {}",
            tile.dims.len(),
            instr.name(),
            dims.len()
        )));
    }
    tile.check_vars()?;
    space.fit(tile);
    if let Some(why) = carry_output(space, instr, output) {
        return Ok(vec![Err(why); instr.instr().operands().len()]);
    }
    let first = space.add_own_dims(instr);
    let own = own_dims_in(instr, space.group_steps);
    let grouped = crate::ragged::output_to_input(instr)?;
    // A reshape's operand dimensions (its tile by dimension groups where the map fails).
    let source_dims = row_major_reshape(instr)
        .then(|| {
            let op = *instr.instr().operands().first()?;
            let s = instr.computation().instr(op).shape();
            (!s.is_tuple()).then(|| s.dims().to_vec())
        })
        .flatten();
    let Some(g) = grouped.get(output) else {
        return Ok(Vec::new());
    };
    let mut tiles = Vec::with_capacity(g.operands.len());
    for (j, set) in g.operands.iter().enumerate() {
        let t = single_map(set).and_then(|m| {
            let mut seq = vec![None; m.map.ranges().len()];
            for (p, (_, positions)) in own.iter().enumerate() {
                let pos = positions.get(j).copied().flatten();
                let var = pos
                    .and_then(|pos| m.map.results().get(pos))
                    .and_then(|&e| index_var(e).or_else(|| window_var(e)));
                let slot = var
                    .filter(|v| v.kind == affine::VarKind::Range)
                    .and_then(|v| seq.get_mut(v.index as usize));
                match slot {
                    Some(slot) => *slot = Some(first + p),
                    // The map's bounds fixed the position (a padded window of which one
                    // tap reads the input): every step would read it again.
                    None if pos.is_some() && several_steps(space, first + p) => {
                        return Err(format!(
                            "own dimension {p} of `{}` is no variable of operand {j}'s map (folded by its bounds), so each of its steps would read the same elements",
                            instr.name()
                        ))
                    }
                    None => {}
                }
            }
            let derived = derive(space, &tile.dims, &m, &seq);
            // A reshape whose map sums or splits indices: by its dimension groups.
            let derived = match (derived, &source_dims) {
                (Err(e), Some(to)) => reshape_tile(space, &tile.dims, &dims, to)
                    .map_err(|r| format!("{e}; by dimension groups: {r}")),
                (d, _) => d,
            };
            derived.map(|d| space.tile(d))
        });
        tiles.push(t);
    }
    // A ragged dot's contracting form: each step reads only its tile's groups' positions;
    // its non-contracting form: only the groups of the tile's rows.
    // In group steps, both forms' rows relative to the step's group instead.
    if output == 0 && space.group_steps {
        super::ragged_groups::relative_rows(space, instr, first, tile, &mut tiles);
    } else if output == 0 {
        super::ragged_steps::narrow_contracting(space, instr, tile, &mut tiles);
        super::ragged_rows::narrow_non_contracting(space, instr, tile, &mut tiles);
    }
    Ok(finish(space, tiles))
}

/// Whether `instr` reshapes its operand in row-major order: a reshape, or a bitcast whose
/// operand and output both have the default (descending) layout or none, so that its
/// tiles may be built by dimension groups as a reshape's are.
fn row_major_reshape(instr: &InstrRef<'_>) -> bool {
    let i = instr.instr();
    let descending = |s: &hlo::Shape| {
        !s.is_tuple()
            && s.layout().is_none_or(|l| {
                let r = l.minor_to_major.len() as i64;
                l.minor_to_major.iter().rev().copied().eq(0..r)
            })
    };
    match i.opcode() {
        hlo::Opcode::Reshape => true,
        hlo::Opcode::Bitcast => {
            let operand = i
                .operands()
                .first()
                .map(|&o| instr.computation().instr(o).shape());
            descending(i.shape()) && operand.is_some_and(descending)
        }
        _ => false,
    }
}

/// Whether space dimension `i` may be walked in more than one step.
fn several_steps(space: &TilingSpace, i: usize) -> bool {
    let d = &space.dims[i];
    match (d.extent, d.tile_size) {
        (Some(e), Some(s)) => s < e,
        (Some(e), None) => e > 1,
        (None, _) => true,
    }
}

/// The index a result reads: a variable, or the variable of `v floordiv q` (a block scale).
fn index_var(e: affine::Expr) -> Option<affine::Var> {
    match e.kind() {
        affine::ExprKind::FloorDiv(x, q) if q.as_const().is_some() => x.as_var(),
        _ => e.as_var(),
    }
}

/// The one range variable of a sum such as a convolution's input position `a * d + b * s`
/// (its window position `s` is the range variable): the own dimension of that operand
/// dimension tiles it.
fn window_var(e: affine::Expr) -> Option<affine::Var> {
    let lin = affine::linear::Linear::of(e)?;
    let mut ranges = lin
        .terms
        .iter()
        .filter_map(|&(atom, _)| atom.as_var())
        .filter(|v| v.kind == affine::VarKind::Range);
    match (ranges.next(), ranges.next()) {
        (Some(v), None) => Some(v),
        _ => None,
    }
}

/// The tiles of every output of `instr` that use the elements of `tile`, a tile of its
/// operand `operand` (for a get-tuple-element, a tile of the tuple element it selects). Range variables of the maps (broadcast dimensions, the other
/// operand's free dimensions of a dot) are read whole. Fails when `tile`'s rank is not the
/// operand's, or the indexing maps cannot be computed; an output without a tile gets
/// `Err(reason)`.
pub fn to_outputs(
    space: &mut TilingSpace,
    instr: &InstrRef<'_>,
    operand: usize,
    tile: &Tile,
) -> Result<Vec<Propagated>, TilingError> {
    let ops = instr.instr().operands();
    let Some(&op) = ops.get(operand) else {
        return Err(TilingError::BadTile(format!(
            "`{}` has {} operands; operand {operand} does not exist",
            instr.name(),
            ops.len()
        )));
    };
    let mut shape = instr.computation().instr(op).shape();
    // A get-tuple-element's operand is tiled by a tile of the element it selects.
    if shape.is_tuple() && instr.opcode() == hlo::Opcode::GetTupleElement {
        let k = instr
            .instr()
            .tuple_index()
            .and_then(|k| usize::try_from(k).ok());
        if let Some(s) = k.and_then(|k| shape.tuple_shapes().get(k)) {
            shape = s;
        }
    }
    if shape.is_tuple() || tile.dims.len() != shape.dims().len() {
        return Err(TilingError::BadTile(format!(
            "a tile of rank {} for operand {operand} of `{}`, of rank {}",
            tile.dims.len(),
            instr.name(),
            shape.dims().len()
        )));
    }
    tile.check_vars()?;
    space.fit(tile);
    if let Some(why) = carry_operand(space, instr, operand) {
        let outputs = if instr.instr().shape().is_tuple() {
            instr.instr().shape().tuple_shapes().len()
        } else {
            1
        };
        return Ok(vec![Err(why); outputs]);
    }
    let sets = indexing::input_to_output(instr, operand)?;
    let target = row_major_reshape(instr)
        .then(|| output_dims(instr.instr(), 0))
        .flatten();
    let tiles = sets
        .iter()
        .map(|set| {
            single_map(set).and_then(|m| {
                let seq = vec![None; m.map.ranges().len()];
                let derived = derive(space, &tile.dims, &m, &seq);
                // A reshape whose map sums or splits indices: by its dimension groups.
                let derived = match (derived, &target) {
                    (Err(e), Some(to)) => reshape_tile(space, &tile.dims, shape.dims(), to)
                        .map_err(|r| format!("{e}; by dimension groups: {r}")),
                    (d, _) => d,
                };
                derived.map(|d| space.tile(d))
            })
        })
        .collect();
    Ok(finish(space, tiles))
}
