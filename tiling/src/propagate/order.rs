//! Order constraints between a map dimension and a range variable: a scan's output at
//! position `t` reads the input rows at or before `t` (forward) or at or after it (reverse),
//! `t - s in [k, H]` or `t - s in [-H, -k]` for the row `s`. Such a row variable is tiled as
//! the window the source tile's positions reach: every row up to the source tile's last
//! position (less `k`), or every row from its first position (plus `k`), each once.

use affine::linear::Linear;
use affine::{Constraint, Expr, IndexingMap, Interval, VarKind};

use super::space::TilingSpace;
use super::tile::DimTile;

/// Which side of the dimension the rows lie on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// Rows `s <= t - k`.
    UpTo(i64),
    /// Rows `s >= t + k`.
    From(i64),
}

/// An order constraint: range variable `range` lies on `side` of map dimension `dim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Order {
    pub(crate) dim: usize,
    pub(crate) range: usize,
    pub(crate) side: Side,
}

/// Reads `c` as an order constraint: `±(d_i - s_m)` in an interval whose far end never cuts
/// (every row on the near side of the dimension satisfies it), with `k >= 0`.
pub(crate) fn order_of(m: &IndexingMap, c: &Constraint) -> Option<Order> {
    let lin = Linear::of(c.expr)?;
    if lin.constant != 0 || lin.terms.len() != 2 {
        return None;
    }
    let (mut dim, mut range) = (None, None);
    for &(atom, k) in &lin.terms {
        let v = atom.as_var()?;
        match (v.kind, k.abs()) {
            (VarKind::Dim, 1) => dim = Some((v.index as usize, k)),
            (VarKind::Range, 1) => range = Some((v.index as usize, k)),
            _ => return None,
        }
    }
    let ((i, kd), (r, kr)) = (dim?, range?);
    if kd != -kr {
        return None;
    }
    // `e = d - s` in `interval`.
    let interval = if kd == 1 {
        c.interval
    } else {
        Interval::new(c.interval.hi.checked_neg()?, c.interval.lo.checked_neg()?)
    };
    let (d, s) = (*m.dims().get(i)?, *m.ranges().get(r)?);
    let side = if interval.lo >= 0 && interval.hi >= d.hi - s.lo {
        Side::UpTo(interval.lo)
    } else if interval.hi <= 0 && interval.lo <= d.lo - s.hi {
        Side::From(-interval.hi)
    } else {
        return None;
    };
    Some(Order {
        dim: i,
        range: r,
        side,
    })
}

/// The tile of the rows an order constraint admits for the source tile `t` of its
/// dimension (positive stride, holding its first position), over the rows' bounds `rows`:
/// up to `min(last, upper bound - 1) - k`, or from `first + k`; read in one tile whose size
/// is the next power of two of the rows' extent.
pub(crate) fn window(
    space: &TilingSpace,
    t: &DimTile,
    rows: Interval,
    side: Side,
) -> Result<DimTile, String> {
    if space.range(t.stride).lo < 1 || space.range(t.offset).lo < 0 || rows.lo != 0 {
        return Err("an ordered read of a tile that is reversed or may start below 0".into());
    }
    let full = DimTile::full(rows.lo, rows.hi);
    let end = Expr::constant(rows.hi.saturating_add(1));
    Ok(match side {
        Side::UpTo(k) => {
            let last = (t.offset + (t.size - 1) * t.stride).min(t.upper_bound - 1);
            DimTile {
                upper_bound: space.simplify((last - k + 1).min(end)),
                ..full
            }
        }
        Side::From(k) => DimTile {
            offset: space.simplify(t.offset + k),
            ..full
        },
    })
}
