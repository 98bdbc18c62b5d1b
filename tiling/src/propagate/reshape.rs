//! Tile propagation through a reshape by its dimension groups, for the reshapes whose
//! indexing maps sum indices (`d0 * 4 + d1`, collapsing) or split one (`d0 floordiv 4`,
//! `d0 mod 4`, expanding), which [`super::derive`] leaves without a tile.
//!
//! The source and target shapes split into the fewest groups of consecutive dimensions with
//! equal element counts (a source dimension of one element with no target of its own joins
//! the next group). A group's source tile is first collapsed to one arithmetic progression
//! over the group's row-major linear index ([`collapse`]), then expanded over the target
//! dimensions of the group ([`expand`]); each step is exact or fails with the reason:
//!
//! - collapse: along the dimensions holding more than one index (active), each one's step
//!   must be the whole extent of the next active one (`L_p * s_p = L_q * s_q * n_q`, `L` the
//!   linear weights); only the outermost active dimension and the single-index dimensions
//!   outside it may be masked. The upper bound `sum L_i * min(last_i, U_i - 1) + 1` (`last_i`
//!   the tile's last index, `U_i` its mask) masks exactly the masked positions: a masked
//!   outer index makes it fall below the offset.
//! - expand: a progression of a constant size and stride that is masked only by the end of
//!   the group (or not masked at all) is a box when it fits inside one target dimension, or covers whole rows of
//!   the inner ones and continues along an outer one; the outermost target dimension's
//!   bound masks what lies past the end, and its implicit lower bound 0 what lies before
//!   the start (a progression that may start below 0, e.g. a concatenation's later operand:
//!   the offsets unwrap by floor division, so a negative position gets a negative
//!   outermost index and the inner ones stay in range).

use affine::Expr;

use super::space::TilingSpace;
use super::tile::DimTile;

/// A group: source dimensions `from` and target dimensions `to`.
type Group = (std::ops::Range<usize>, std::ops::Range<usize>);

/// The tile of a reshape's target (of dimensions `to`) from the tile `source` of its source
/// (of dimensions `from`), group by group; `Err(reason)` where a group has no exact tile.
pub(crate) fn reshape_tile(
    space: &TilingSpace,
    source: &[DimTile],
    from: &[i64],
    to: &[i64],
) -> Result<Vec<DimTile>, String> {
    if source.len() != from.len() {
        return Err(format!(
            "a tile of {} dimensions for a reshape source of {}",
            source.len(),
            from.len()
        ));
    }
    let groups = groups(from, to).ok_or("the reshape's element counts differ")?;
    let mut out = Vec::with_capacity(to.len());
    for (f, t) in groups {
        let tiles = &source[f.clone()];
        if f.len() == 1 && t.len() == 1 {
            out.push(tiles[0]);
            continue;
        }
        let ap = collapse(space, tiles, &from[f])?;
        out.extend(expand(space, ap, &to[t])?);
    }
    Ok(out)
}

/// The groups of consecutive dimensions with equal element counts, source dimensions of one
/// element with no target of their own joined to the next group (to the previous one at the
/// end); `None` when the counts differ or an extent is not positive.
fn groups(from: &[i64], to: &[i64]) -> Option<Vec<Group>> {
    if from.iter().chain(to).any(|&e| e < 1) {
        return None;
    }
    let (n, m) = (from.len(), to.len());
    let (mut i, mut j) = (0, 0);
    let mut out: Vec<Group> = Vec::new();
    let mut pending: Option<usize> = None;
    while i < n || j < m {
        let (i0, j0) = (i, j);
        let (mut pi, mut pj) = (1i64, 1i64);
        loop {
            if (i > i0 || j > j0) && pi == pj {
                break;
            }
            if (pi < pj || j == m) && i < n {
                pi = pi.checked_mul(from[i])?;
                i += 1;
            } else if j < m {
                pj = pj.checked_mul(to[j])?;
                j += 1;
            } else {
                return None;
            }
        }
        if j == j0 {
            // Source dimensions of one element without a target: joined to the next group.
            pending.get_or_insert(i0);
            continue;
        }
        out.push((pending.take().unwrap_or(i0)..i, j0..j));
    }
    if pending.is_some() {
        let last = out.last_mut()?;
        last.0 = last.0.start..n;
    }
    Some(out)
}

/// An arithmetic progression over a group's linear index: `offset + k * stride` for
/// `k < size`, the positions at or past `upper` masked.
struct Progression {
    offset: Expr,
    size: Expr,
    stride: Expr,
    upper: Expr,
}

/// `e` clamped to at most `hi`, written as simply as the space allows.
fn clamp_hi(space: &TilingSpace, e: Expr, hi: i64) -> Expr {
    let r = space.range(e);
    if r.lo >= hi {
        Expr::constant(hi)
    } else if r.hi <= hi {
        e
    } else {
        e.min(Expr::constant(hi))
    }
}

/// Whether `e` is provably at least `v` over the space.
fn at_least(space: &TilingSpace, e: Expr, v: i64) -> bool {
    space.range(space.simplify(e)).lo >= v
}

/// The group's source tiles (dimensions of extents `ext`, row-major) as one progression over
/// the linear index (see the module documentation).
fn collapse(space: &TilingSpace, tiles: &[DimTile], ext: &[i64]) -> Result<Progression, String> {
    let n = ext.len();
    if let ([t], [e]) = (tiles, ext) {
        return Ok(Progression {
            offset: t.offset,
            size: t.size,
            stride: t.stride,
            upper: clamp_hi(space, t.upper_bound, *e),
        });
    }
    let mut weights = vec![1i64; n];
    for i in (0..n.saturating_sub(1)).rev() {
        weights[i] = weights[i + 1]
            .checked_mul(ext[i + 1])
            .ok_or("the reshape's linear index overflows")?;
    }
    let mut active = Vec::new();
    let mut lasts = Vec::with_capacity(n);
    let mut masks = Vec::with_capacity(n);
    for (i, t) in tiles.iter().enumerate() {
        if !at_least(space, t.offset, 0) {
            return Err(format!(
                "a collapsed dimension's tile may start below 0 (`{}`)",
                t.offset
            ));
        }
        let is_active = ext[i] > 1 && space.range(t.size).hi > 1;
        if is_active {
            if !at_least(space, t.stride, 1) {
                return Err(format!(
                    "a collapsed dimension's stride `{}` may be below 1",
                    t.stride
                ));
            }
            active.push(i);
        }
        lasts.push(if is_active {
            t.offset + (t.size - 1) * t.stride
        } else {
            t.offset
        });
        masks.push(clamp_hi(space, t.upper_bound, ext[i]));
    }
    // Whether dimension `i`'s indices are all valid (nothing masked there).
    let unmasked = |i: usize| at_least(space, masks[i] - lasts[i], 1);
    if let Some(&first) = active.first() {
        if let Some(i) = (first + 1..n).find(|&i| !unmasked(i)) {
            return Err(format!(
                "collapsed dimension {i} inside the tile's outermost dimension of several indices may be masked"
            ));
        }
        for w in active.windows(2) {
            let (p, q) = (w[0], w[1]);
            let outer = tiles[p].stride * weights[p];
            let inner = tiles[q].stride * tiles[q].size * weights[q];
            if space.simplify(outer - inner).as_const() != Some(0) {
                return Err(format!(
                    "collapsed dimensions {p} and {q} do not form one progression (step `{}` against `{}`)",
                    space.simplify(outer),
                    space.simplify(inner)
                ));
            }
        }
        if active.len() > 1
            && !unmasked(first)
            && space.simplify(tiles[first].stride).as_const() != Some(1)
        {
            return Err(format!(
                "collapsed dimension {first} is strided and may be masked inside a progression"
            ));
        }
    }
    let mut offset = Expr::constant(0);
    let mut upper = Expr::constant(1);
    for i in 0..n {
        offset = offset + tiles[i].offset * weights[i];
        upper = upper + lasts[i].min(masks[i] - 1) * weights[i];
    }
    let (size, stride) = match active.last() {
        Some(&q) => (
            active
                .iter()
                .fold(Expr::constant(1), |acc, &i| acc * tiles[i].size),
            tiles[q].stride * weights[q],
        ),
        None => (Expr::constant(1), Expr::constant(1)),
    };
    Ok(Progression {
        offset: space.simplify(offset),
        size: space.simplify(size),
        stride: space.simplify(stride),
        upper: space.simplify(upper),
    })
}

/// The target tiles of a progression over the group's dimensions of extents `ext` (see the
/// module documentation).
fn expand(space: &TilingSpace, ap: Progression, ext: &[i64]) -> Result<Vec<DimTile>, String> {
    let r = ext.len();
    if r == 1 {
        return Ok(vec![DimTile {
            offset: ap.offset,
            size: ap.size,
            stride: ap.stride,
            upper_bound: ap.upper,
        }]);
    }
    let total: i64 = ext.iter().product();
    let last = ap.offset + (ap.size - 1) * ap.stride;
    if !at_least(space, ap.upper, total) && !at_least(space, ap.upper - last, 1) {
        return Err(format!(
            "an expanded tile masked inside the array (upper bound `{}`)",
            ap.upper
        ));
    }
    let (Some(n), Some(s)) = (
        space.simplify(ap.size).as_const(),
        space.simplify(ap.stride).as_const(),
    ) else {
        return Err(format!(
            "an expanded tile of size `{}` and stride `{}` (not constants)",
            ap.size, ap.stride
        ));
    };
    let mut weights = vec![1i64; r];
    for i in (0..r - 1).rev() {
        weights[i] = weights[i + 1] * ext[i + 1];
    }
    // Offsets: the outermost index unwrapped (past the end it is masked by its bound).
    let offsets: Vec<Expr> = (0..r)
        .map(|k| {
            let q = ap.offset.floor_div(Expr::constant(weights[k]));
            space.simplify(if k == 0 {
                q
            } else {
                q.modulo(Expr::constant(ext[k]))
            })
        })
        .collect();
    let mut sizes = vec![1i64; r];
    let mut strides = vec![1i64; r];
    if n > 1 {
        if s < 1 {
            return Err(format!("an expanded tile of stride {s}"));
        }
        let t = (0..r).find(|&k| s % weights[k] == 0).unwrap_or(r - 1);
        let mut st = s / weights[t];
        if t > 0 && st >= ext[t] {
            return Err(format!(
                "an expanded tile whose stride {s} skips across dimension {t}"
            ));
        }
        let (mut rem, mut k) = (n, t);
        loop {
            if k == 0 || space.range(offsets[k] + (rem - 1) * st).hi < ext[k] {
                sizes[k] = rem;
                strides[k] = st;
                break;
            }
            // Whole rows of dimension k, then on along dimension k - 1.
            let per = ext[k] / st;
            if ext[k] % st != 0 || rem % per != 0 || space.range(offsets[k]).hi >= st {
                return Err(format!(
                    "an expanded tile of {n} elements, stride {s}, is not a box of the target dimensions"
                ));
            }
            sizes[k] = per;
            strides[k] = st;
            rem /= per;
            st = 1;
            k -= 1;
        }
    }
    Ok((0..r)
        .map(|k| DimTile {
            offset: offsets[k],
            size: Expr::constant(sizes[k]),
            stride: Expr::constant(strides[k]),
            upper_bound: Expr::constant(ext[k]),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::groups;

    #[test]
    fn groups_of_reshapes() {
        assert_eq!(groups(&[3, 4], &[12]), Some(vec![(0..2, 0..1)]));
        assert_eq!(
            groups(&[12], &[1, 12, 1]),
            Some(vec![(0..0, 0..1), (0..1, 1..2), (1..1, 2..3)])
        );
        assert_eq!(groups(&[1, 6], &[6]), Some(vec![(0..2, 0..1)]));
        assert_eq!(groups(&[6, 1], &[6]), Some(vec![(0..2, 0..1)]));
        assert_eq!(
            groups(&[12, 1, 8], &[1, 12, 8]),
            Some(vec![(0..0, 0..1), (0..1, 1..2), (1..3, 2..3)])
        );
        assert_eq!(groups(&[4, 6], &[6, 4]), Some(vec![(0..2, 0..2)]));
        assert_eq!(groups(&[4, 6], &[5]), None);
    }
}
