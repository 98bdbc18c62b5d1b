//! A ragged dot's contracting form with its group sizes as runtime values (issue 37 item
//! 5, XLA's `start_m` design): `ragged-dot(lhs [.., K], rhs [K, ..], group_sizes [G])` with
//! the ragged dimension `K` contracting gives one output slice per group, group `g`
//! contracting over `K` positions `start(g) .. start(g + 1)` with `start(g)` the sum of the
//! group sizes before `g` (clamped to `K`, as the evaluator clamps). An output tile over
//! groups `first .. end` (the group dimension's tile, stride 1) reads, at each step of the
//! contracting dimension, the positions of that step inside `start(first) .. start(end)`:
//! along `K`, offset `max(o, rt_s)`, size `o + size - max(o, rt_s)` and upper bound
//! `min(ub, rt_e)`, with the runtime values `rt_s = start(first)` and `rt_e = start(end)`
//! (each in `[0, K]`, held by the group sizes; their text is [`PREFIX_SUM`] and the group
//! expression). The group sizes read are those before `end`. Every tile is exact: the
//! steps together read exactly the positions of the tile's groups, none twice.

use affine::{Expr, Interval};
use hlo::{AttrName, InstrRef, Opcode};

use super::space::TilingSpace;
use super::tile::{DimTile, Tile};

/// The text of a runtime value `start(g)`: the sum of the group sizes before group `g`,
/// followed by `g` (an expression over the space's variables).
pub const PREFIX_SUM: &str = "sum of the elements before";

fn ints(instr: &hlo::Instruction, name: AttrName) -> Vec<usize> {
    match instr.attr(&name) {
        Some(hlo::AttrValue::IntList(v)) => {
            v.iter().filter_map(|&d| usize::try_from(d).ok()).collect()
        }
        _ => Vec::new(),
    }
}

/// Narrows the lhs, rhs and group-size tiles of a ragged dot's contracting form (see the
/// module documentation) from `tile`, the output tile; other forms, and a group dimension
/// tiled with another stride, keep the tiles of `tiles` (the contracting dimension read
/// whole per step).
pub(crate) fn narrow_contracting(
    space: &mut TilingSpace,
    instr: &InstrRef<'_>,
    tile: &Tile,
    tiles: &mut [Result<Tile, String>],
) {
    let i = instr.instr();
    if i.opcode() != Opcode::RaggedDot || !ints(i, AttrName::RhsGroupDims).is_empty() {
        return;
    }
    let comp = instr.computation();
    let dims = |j: usize| -> Option<Vec<i64>> {
        Some(comp.instr(*i.operands().get(j)?).shape().dims().to_vec())
    };
    let (Some(lhs), Some(groups)) = (dims(0), dims(2)) else {
        return;
    };
    let dn = i.dot_dimension_numbers();
    let ragged = ints(i, AttrName::LhsRaggedDims);
    let [r] = ragged.as_slice() else {
        return;
    };
    let Some(c) = dn
        .lhs_contracting_dims
        .iter()
        .position(|&d| usize::try_from(d).ok() == Some(*r))
    else {
        return;
    };
    let Some(rc) = dn
        .rhs_contracting_dims
        .get(c)
        .and_then(|&d| usize::try_from(d).ok())
    else {
        return;
    };
    let (Some(&k), [g_count]) = (lhs.get(*r), groups.as_slice()) else {
        return;
    };
    let Some(gt) = tile.dims.first() else {
        return;
    };
    if gt.stride.as_const() != Some(1) || tiles.len() != 3 {
        return;
    }
    let Some(gs) = i.operands().get(2).copied() else {
        return;
    };
    let first = space.simplify(gt.offset.max(Expr::constant(0)));
    let end = space.simplify(
        gt.offset
            .add(gt.size)
            .min(gt.upper_bound)
            .min(Expr::constant(*g_count)),
    );
    let bounds = Interval::new(0, k);
    let rt_s = Expr::runtime(space.runtime(gs, format!("{PREFIX_SUM} {first}"), bounds) as u32);
    let rt_e = Expr::runtime(space.runtime(gs, format!("{PREFIX_SUM} {end}"), bounds) as u32);
    let narrow = |space: &TilingSpace, d: DimTile| -> Option<DimTile> {
        (d.stride.as_const() == Some(1)).then(|| {
            let offset = space.simplify(d.offset.max(rt_s));
            DimTile {
                offset,
                size: space.simplify(d.offset.add(d.size).sub(offset)),
                stride: d.stride,
                upper_bound: space.simplify(d.upper_bound.min(rt_e)),
            }
        })
    };
    for (t, dim) in [(0usize, *r), (1, rc)] {
        if let Some(Ok(op)) = tiles.get_mut(t) {
            if let Some(d) = op.dims.get(dim).copied().and_then(|d| narrow(space, d)) {
                op.dims[dim] = d;
            }
        }
    }
    if let Some(Ok(op)) = tiles.get_mut(2) {
        op.dims = vec![DimTile {
            offset: Expr::constant(0),
            size: end,
            stride: Expr::constant(1),
            upper_bound: Expr::constant(*g_count),
        }];
    }
}
