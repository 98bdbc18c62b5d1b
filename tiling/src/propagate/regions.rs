//! How a tiled computation with nested tilings numbers its programs ([`TilingMode`]): the
//! tile id of every dimension of the tiling space as a function of the program id `pid_0`
//! of one tiled instruction, given the region it lies in (the sequential dimensions of the
//! dots and reduces whose operands it feeds, outermost first).

use affine::Expr;

use super::space::TilingSpace;
use crate::TilingError;

/// How [`tiled_by_propagation_with`](super::tiled_by_propagation_with) numbers the programs
/// of the instructions under a nested tiling (the operands of a dot whose contracting
/// dimensions, or of a reduce whose reduced dimensions, are tiled by sizes of their own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TilingMode {
    /// One program id per root tile for every instruction (`pid_0` in `[0, P - 1]` for `P`
    /// root tiles); an instruction under a nested tiling has the offsets of its first step.
    #[default]
    FirstStep,
    /// XLA's regions: an instruction under nested tilings of `n_1, ..., n_k` steps (the
    /// outermost first) has program ids over programs × steps, `pid_0` in
    /// `[0, P * n_1 * ... * n_k - 1]` with `pid_0 = ((p * n_1 + s_1) * n_2 + s_2) ...`, and
    /// the offsets of step `s_1, ..., s_k` of program `p`; the other instructions are
    /// numbered as in [`TilingMode::FirstStep`].
    Regions,
}

/// The number of steps of dimension `i` of a space with concrete tile sizes:
/// `ceil(extent / tile size)`, at least 1.
fn steps(space: &TilingSpace, i: usize) -> Result<i64, TilingError> {
    let d = space
        .dims
        .get(i)
        .ok_or_else(|| TilingError::BadTileSizes(format!("no dimension {i} in the space")))?;
    let extent = d.extent.unwrap_or(1).max(1);
    let size = d.tile_size.unwrap_or(extent).max(1);
    Ok(affine::arith::ceil_div(extent, size).unwrap_or(1).max(1))
}

/// The tile ids of every dimension of `space` as expressions of `pid_0` (the affine
/// dimension `d0`), and the number of program ids, for an instruction in `region` (indices
/// of sequential dimensions of the space, outermost first) under `mode`. `counts` are the
/// tile counts of the parallel dimensions (the root's), numbered row-major. Sequential
/// dimensions outside the region (all of them in [`TilingMode::FirstStep`]) are at their
/// first step.
pub(crate) fn tile_ids(
    space: &TilingSpace,
    counts: &[i64],
    region: &[usize],
    mode: TilingMode,
) -> Result<(Vec<Expr>, i64), TilingError> {
    let region: &[usize] = match mode {
        TilingMode::FirstStep => &[],
        TilingMode::Regions => region,
    };
    let too_many = || TilingError::BadTileSizes("too many programs".into());
    let pid = Expr::dim(0);
    let mut tid = vec![Expr::constant(0); space.dims.len().max(counts.len())];
    // Innermost first: the steps of the region, then the parallel dimensions.
    let mut inner = 1i64;
    for &i in region.iter().rev() {
        let n = steps(space, i)?;
        if let Some(slot) = tid.get_mut(i) {
            *slot = pid
                .floor_div(Expr::constant(inner))
                .modulo(Expr::constant(n));
        }
        inner = inner.checked_mul(n).ok_or_else(too_many)?;
    }
    for (i, &n) in counts.iter().enumerate().rev() {
        tid[i] = pid
            .floor_div(Expr::constant(inner))
            .modulo(Expr::constant(n));
        inner = inner.checked_mul(n).ok_or_else(too_many)?;
    }
    Ok((tid, inner))
}
