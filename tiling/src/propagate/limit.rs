//! Window limits: a padded convolution's kernel reads tap `s` for output position `d` only
//! where the input position `a * d + b * s + k` lies inside the input, the constraint
//! `a * d + b * s + k in [lo, hi]` (`a` the stride, `b` the window dilation, `k` less the low
//! padding). Its kernel tile along `s` (a whole result) holds the taps of `s`'s tile that
//! some valid output position `p` of `d`'s tile reads:
//! `ceil((lo - k - a * p_last) / b) <= s <= floor((hi - k - a * p_first) / b)`.
//! That is exact when every tap's own output positions `p` (an interval) are not empty,
//! which holds when the constraint spans at least `a` values (`hi - lo + 1 >= a`); otherwise
//! there is no tile. `d`'s tile must be of stride 1, start inside its domain and hold a
//! valid position (provably, or as a tile of its dimension's grid), as for a halo tile.

use affine::linear::Linear;
use affine::{Constraint, Expr, IndexingMap, Interval, VarKind};

use super::space::TilingSpace;
use super::tile::DimTile;

/// A constraint `a * d_dim + b * s_range + k in [lo, hi]` with `a, b > 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limit {
    pub(crate) dim: usize,
    pub(crate) range: usize,
    a: i64,
    b: i64,
    k: i64,
    bounds: Interval,
}

/// Reads `c` as a window limit.
pub(crate) fn limit_of(m: &IndexingMap, c: &Constraint) -> Option<Limit> {
    let lin = Linear::of(c.expr)?;
    if lin.terms.len() != 2 {
        return None;
    }
    let (mut dim, mut range) = (None, None);
    for &(atom, k) in &lin.terms {
        let v = atom.as_var()?;
        match v.kind {
            VarKind::Dim if k > 0 => dim = Some((v.index as usize, k)),
            VarKind::Range if k > 0 => range = Some((v.index as usize, k)),
            _ => return None,
        }
    }
    let ((dim, a), (range, b)) = (dim?, range?);
    (dim < m.dims().len() && range < m.ranges().len()).then_some(Limit {
        dim,
        range,
        a,
        b,
        k: lin.constant,
        bounds: c.interval,
    })
}

/// `min(x, y)` or `max(x, y)`, or the one that provably wins.
fn pick(space: &TilingSpace, x: Expr, y: Expr, min: bool) -> Expr {
    let d = space.range(x - y);
    match (d.hi <= 0, d.lo >= 0) {
        (true, _) => {
            if min {
                x
            } else {
                y
            }
        }
        (_, true) => {
            if min {
                y
            } else {
                x
            }
        }
        _ if min => x.min(y),
        _ => x.max(y),
    }
}

/// The taps of `s` (tile `s_tile`) that the positions of `d`'s tile `d_tile` (domain
/// `d_domain`) read under `lim` (see the module documentation).
pub(crate) fn restrict(
    space: &TilingSpace,
    s_tile: DimTile,
    d_tile: &DimTile,
    d_domain: Interval,
    lim: &Limit,
) -> Result<DimTile, String> {
    let Limit {
        a, b, k, bounds, ..
    } = *lim;
    let span = bounds.hi.saturating_sub(bounds.lo).saturating_add(1);
    if span < a {
        return Err(format!(
            "a window limit spanning {span} positions under stride {a} (taps whose outputs all fall between)"
        ));
    }
    let one = |e: Expr| space.simplify(e).as_const() == Some(1);
    if !one(d_tile.stride) || !one(s_tile.stride) {
        return Err("a window limit on a strided tile".into());
    }
    let end = pick(
        space,
        d_tile.upper_bound,
        Expr::constant(d_domain.hi.saturating_add(1)),
        true,
    );
    let holds = space.range(d_tile.offset).lo >= d_domain.lo.max(0)
        && (space.range(d_tile.upper_bound).lo > d_domain.hi
            || space.range(end - d_tile.offset).lo >= 1);
    if !holds || space.range(s_tile.offset).lo < 0 {
        return Err(
            "a window limit on a tile that may start outside its domain or be empty".into(),
        );
    }
    let (Some(lo_k), Some(hi_k)) = (bounds.lo.checked_sub(k), bounds.hi.checked_sub(k)) else {
        return Err("a window limit out of range".into());
    };
    let first = d_tile.offset;
    let last = pick(space, d_tile.offset + d_tile.size, end, true) - 1;
    let (ka, kb) = (Expr::constant(a), Expr::constant(b));
    let lowest = (Expr::constant(lo_k) - ka * last).ceil_div(kb);
    let past = (Expr::constant(hi_k) - ka * first).floor_div(kb) + 1;
    let offset = pick(space, s_tile.offset, lowest, false);
    let upper = pick(
        space,
        pick(space, s_tile.offset + s_tile.size, s_tile.upper_bound, true),
        past,
        true,
    );
    Ok(DimTile {
        offset: space.simplify(offset),
        size: space.simplify(s_tile.size),
        stride: Expr::constant(1),
        upper_bound: space.simplify(upper),
    })
}
