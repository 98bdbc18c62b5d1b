//! A ragged dot tiled in group steps (issue 37 item 5; [`TilingSpace::group_steps`]): the
//! schedule XLA's tile propagation describes for its grouped GEMM emitter, where a program
//! walks the groups one after another and its tiles are written relative to the group of
//! the step. The group's first row or contracting position, `start(g)` (the sum of the
//! group sizes before `g`), is the emitter's to add: the non-contracting form carries it
//! from step to step, the contracting form reads it as a runtime value. So a tile's rows
//! along the ragged dimension are relative to `start(g)` and masked by the size of group
//! `g`, a runtime value held by the group sizes; this is what makes each step read its own
//! group's rows only, whatever the group sizes are.
//!
//! - Non-contracting form, `ragged-dot(lhs [.., M, .., K], rhs [G, .., K, .., N],
//!   group_sizes [G])`: the space gains the group dimension `G` as a sequential dimension
//!   ahead of the contracting ones (the outer loop over groups, then the contraction). At
//!   step `g` the program with output rows `o .. o + n` writes the rows
//!   `start(g) + o .. start(g) + min(o + n, size(g))`: the lhs tile is the output tile's rows
//!   (relative) with upper bound `rt = size(g)`, the contracting dimensions the step's; the
//!   rhs tile reads group `g` (the step's tile of `G`) and the group sizes tile `g` too.
//! - Contracting form, `ragged-dot(lhs [.., M], rhs [M, ..], group_sizes [G])` with the
//!   ragged dimension `M` contracting, output `[G, ..]`: the group is an output dimension
//!   (parallel) and `M` the sequential one. The lhs and rhs tiles along `M` are the step's
//!   positions relative to `start(g)`, masked by `size(g)`; the group sizes tile is the output
//!   tile's groups. The space holds `start(g)` as a second runtime value (the emitter's offset;
//!   no tile expression reads it).
//!
//! `g` is the first group of the step's (or the output tile's) group tile: the form is exact
//! for a group tile of one group, the size XLA's emitter uses (checked against the evaluator
//! in `tests/tiling/ragged_groups.rs`); with several groups a tile holds their rhs groups and
//! sizes but the rows of the first group only.

use affine::{Expr, Interval};
use hlo::InstrRef;

use super::ragged_form::{form, Form};
use super::ragged_steps::PREFIX_SUM;
use super::space::TilingSpace;
use super::tile::{DimTile, Tile};

/// The text of the runtime value "the size of group `g`" (the group-sizes element `g`),
/// followed by `g` (an expression over the space's variables).
pub const GROUP_SIZE: &str = "size of group";

/// Rewrites the operand tiles of a ragged dot in group steps (see the module
/// documentation) from `tile`, its output tile; `first` is the space's first dimension of
/// the op's own (the group dimension of the non-contracting form). Other ops, and a
/// ragged dimension the derived tiles do not hold, keep `tiles`.
pub(crate) fn relative_rows(
    space: &mut TilingSpace,
    instr: &InstrRef<'_>,
    first: usize,
    tile: &Tile,
    tiles: &mut [Result<Tile, String>],
) {
    let Some(f) = form(instr) else {
        return;
    };
    let Some(&gs) = instr.instr().operands().get(2) else {
        return;
    };
    if tiles.len() != 3 {
        return;
    }
    match f {
        Form::NonContracting { ragged, rows, .. } => {
            let g = space.dim_tile(first).offset;
            let g = space.simplify(g);
            let size = space.runtime(gs, format!("{GROUP_SIZE} {g}"), Interval::new(0, rows));
            mask(space, &mut tiles[0], ragged, Expr::runtime(size as u32));
        }
        Form::Contracting { lhs, rhs, extent } => {
            let Some(gt) = tile.dims.first().copied() else {
                return;
            };
            let g = space.simplify(gt.offset);
            let bounds = Interval::new(0, extent);
            let size = space.runtime(gs, format!("{GROUP_SIZE} {g}"), bounds);
            // The emitter's offset of the group's positions (no tile expression reads it).
            space.runtime(gs, format!("{PREFIX_SUM} {g}"), bounds);
            let size = Expr::runtime(size as u32);
            mask(space, &mut tiles[0], lhs, size);
            mask(space, &mut tiles[1], rhs, size);
            if let Ok(t) = &mut tiles[2] {
                t.dims = vec![gt];
            }
        }
    }
}

/// Masks dimension `d` of `t` by `size`: positions relative to the group's first, which
/// the group holds below its size.
fn mask(space: &TilingSpace, t: &mut Result<Tile, String>, d: usize, size: Expr) {
    if let Ok(t) = t {
        if let Some(dim) = t.dims.get_mut(d) {
            *dim = DimTile {
                upper_bound: space.simplify(dim.upper_bound.min(size)),
                ..*dim
            };
        }
    }
}
