//! A ragged dot's non-contracting form with its group sizes as runtime values (issue 37
//! item 5): `ragged-dot(lhs [.., M, .., K], rhs [G, .., K, .., N], group_sizes [G])` with
//! the ragged dimension `M` a free lhs dimension and `G` the rhs group dimension: output row
//! `m` uses `rhs[g]` of the group `g` holding it, `start(g) <= m < start(g + 1)` with
//! `start(g)` the sum of the group sizes before `g` clamped to `M` (as the evaluator
//! clamps); rows at or past `start(G)` belong to no group and read nothing (zeros).
//!
//! An output tile whose rows are `a .. b` (its ragged dimension's tile, stride 1, masked by
//! its upper bound) reads, through three runtime values held by the group sizes:
//! - lhs rows `a .. min(b, rt_t)` (upper bound `min(ub, rt_t)`), `rt_t = start(G)` in
//!   `[0, M]` ([`PREFIX_SUM`] `G`): exactly the rows that belong to a group;
//! - rhs groups `rt_f .. rt_e` along the group dimension, `rt_f` the group holding row `a`
//!   (the number of groups ending at or before `a`, [`GROUP_OF_ROW`]) and `rt_e` the number
//!   of groups starting before `b` ([`GROUPS_BEFORE`]), both in `[0, G]` (the group count).
//!   Every group with a row in the tile is there; the only others are empty groups between
//!   two of them (a tile is one progression), which hold no row and are read by nothing;
//! - group sizes `0 .. rt_e`: the sizes that place the tile's rows (and, where the tile
//!   reaches past `start(G)`, every size).
//!
//! A tile whose rows all lie past `start(G)` reads no rhs group (`rt_f = G >= rt_e`).

use affine::{Expr, Interval};
use hlo::{AttrName, InstrRef, Opcode};

use super::ragged_steps::PREFIX_SUM;
use super::space::TilingSpace;
use super::tile::{DimTile, Tile};

/// The text of the runtime value "the group holding row `r`": the number of groups whose
/// rows end at or before `r` (the group count when `r` is past every group), followed by `r`.
pub const GROUP_OF_ROW: &str = "group of row";

/// The text of the runtime value "the number of groups starting before row `r`", followed by
/// `r`.
pub const GROUPS_BEFORE: &str = "groups starting before row";

fn ints(instr: &hlo::Instruction, name: AttrName) -> Vec<usize> {
    match instr.attr(&name) {
        Some(hlo::AttrValue::IntList(v)) => {
            v.iter().filter_map(|&d| usize::try_from(d).ok()).collect()
        }
        _ => Vec::new(),
    }
}

/// Where the non-contracting form's dimensions are: the lhs ragged dimension, its position
/// in the output, the rhs group dimension and the group count.
struct Form {
    ragged: usize,
    out: usize,
    group: usize,
    count: i64,
    rows: i64,
}

fn form(instr: &InstrRef<'_>) -> Option<Form> {
    let i = instr.instr();
    if i.opcode() != Opcode::RaggedDot {
        return None;
    }
    let (ragged, group) = (
        ints(i, AttrName::LhsRaggedDims),
        ints(i, AttrName::RhsGroupDims),
    );
    let (&[r], &[g]) = (ragged.as_slice(), group.as_slice()) else {
        return None;
    };
    let comp = instr.computation();
    let dims = |j: usize| -> Option<Vec<i64>> {
        Some(comp.instr(*i.operands().get(j)?).shape().dims().to_vec())
    };
    let (lhs, rhs, sizes) = (dims(0)?, dims(1)?, dims(2)?);
    let dn = i.dot_dimension_numbers();
    let has = |v: &[i64], d: usize| v.iter().any(|&x| usize::try_from(x).ok() == Some(d));
    if has(&dn.lhs_batch_dims, r) || has(&dn.lhs_contracting_dims, r) {
        return None;
    }
    let count = *rhs.get(g)?;
    if sizes.as_slice() != [count] {
        return None;
    }
    // The output: batch dimensions, then the lhs's free dimensions in order.
    let free_before = (0..r)
        .filter(|&d| !has(&dn.lhs_batch_dims, d) && !has(&dn.lhs_contracting_dims, d))
        .count();
    Some(Form {
        ragged: r,
        out: dn.lhs_batch_dims.len() + free_before,
        group: g,
        count,
        rows: *lhs.get(r)?,
    })
}

/// Narrows the lhs, rhs and group-size tiles of a ragged dot's non-contracting form (see the
/// module documentation) from `tile`, the output tile; other forms, and a ragged dimension
/// tiled with another stride, keep the tiles of `tiles` (every group read).
pub(crate) fn narrow_non_contracting(
    space: &mut TilingSpace,
    instr: &InstrRef<'_>,
    tile: &Tile,
    tiles: &mut [Result<Tile, String>],
) {
    let Some(f) = form(instr) else {
        return;
    };
    let Some(rt) = tile.dims.get(f.out).copied() else {
        return;
    };
    let Some(&gs) = instr.instr().operands().get(2) else {
        return;
    };
    if rt.stride.as_const() != Some(1) || tiles.len() != 3 {
        return;
    }
    let a = space.simplify(rt.offset.max(Expr::constant(0)));
    let b = space.simplify(rt.offset.add(rt.size).min(rt.upper_bound));
    let groups = Interval::new(0, f.count);
    let total = space.runtime(
        gs,
        format!("{PREFIX_SUM} {}", f.count),
        Interval::new(0, f.rows),
    );
    let first = space.runtime(gs, format!("{GROUP_OF_ROW} {a}"), groups);
    let end = space.runtime(gs, format!("{GROUPS_BEFORE} {b}"), groups);
    let (total, first, end) = (
        Expr::runtime(total as u32),
        Expr::runtime(first as u32),
        Expr::runtime(end as u32),
    );
    if let Some(Ok(lhs)) = tiles.get_mut(0) {
        if let Some(d) = lhs.dims.get_mut(f.ragged) {
            d.upper_bound = space.simplify(d.upper_bound.min(total));
        }
    }
    if let Some(Ok(rhs)) = tiles.get_mut(1) {
        if let Some(d) = rhs.dims.get_mut(f.group) {
            *d = DimTile {
                offset: first,
                size: space.simplify(end.sub(first)),
                stride: Expr::constant(1),
                upper_bound: Expr::constant(f.count),
            };
        }
    }
    if let Some(Ok(sizes)) = tiles.get_mut(2) {
        sizes.dims = vec![DimTile {
            offset: Expr::constant(0),
            size: end,
            stride: Expr::constant(1),
            upper_bound: Expr::constant(f.count),
        }];
    }
}
