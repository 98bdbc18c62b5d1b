//! One propagation step: the tile of a map's target from the tile of its source.
//!
//! Each result of the (normalized) map must be `a * v + c` with at most one index `v` (a
//! dimension of the source, or a range variable) and `c` a constant plus terms of runtime
//! values that are constant over a tile; every index read by one result only. Along a
//! result `a * v + c`, the target tile is the source's tile of `v` scaled: offset
//! `a * offset + c`, stride `a * stride`, the same size, and an upper bound that masks
//! exactly the positions the source masks or the map's domain leaves out; when the implicit
//! lower bound 0 of the target cannot stand for them (the source tile may start below the
//! domain, or `a < 0` with a cut upper end), there is no tile. A range variable that is one
//! of the tiling space's sequential dimensions is tiled by it; any other one is read whole
//! (one tile of the next power of two). A result `v floordiv q + c` (a block-scale operand:
//! `q` source elements share one target element) of a unit-stride source tile that starts
//! inside the domain and is masked only by the domain's end reads the contiguous elements
//! `o floordiv q ..= (o + size - 1) floordiv q`: offset `o floordiv q + c`, stride 1, size
//! `(o + size - 1) floordiv q - o floordiv q + 1`, upper bound `(end - 1) floordiv q + c + 1`.
//! A constraint `result in [0, hi]` (an all-gather's shard of one participant; a padded
//! convolution's `result - k in [k, hi - k]`, the same range written without the padding's
//! offset) caps that result's upper bound at `hi + 1`, and target positions below 0 are then masked rather
//! than refused. A constraint ordering a range variable after or before a dimension (a
//! scan's rows up to or from its position, `order.rs`) reads the window the source tile
//! reaches, or, for a scan tiled in steps, the source tile's own rows (`scan_steps.rs`). A source dimension of one index that no result reads (a transpose or
//! reshape moving a unit dimension) is paired with a constant result, so the target tile is
//! empty wherever the source tile is (its one index masked).
//! A result `a * v + w + c` (a convolution's input read by an output position `v` and a
//! window position `w`) is a halo tile (`halo.rs`) when it is exact, else refused. A
//! constraint `a * d + b * s + k in [lo, hi]` on a range variable `s` that is a whole result
//! (a padded convolution's kernel tap) limits `s`'s tile to the taps `d`'s tile reads
//! (`limit.rs`).
//! Anything else (other sums of indices, other divisions and remainders from reshapes, products,
//! other constraints, runtime values that vary within a tile) has no tile: `Err(reason)`.

use affine::linear::Linear;
use affine::{Expr, ExprKind, IndexingMap, Interval, MapForm, VarKind};
use indexing::IndexedMap;

use super::limit::{limit_of, restrict, Limit};
use super::order::{order_of, window, Order};
use super::scan_steps::step_rows;
use super::space::TilingSpace;
use super::tile::DimTile;

/// The source of one result: its tile, the domain of its variable, the coefficient and the
/// constant part.
struct Scaled {
    tile: DimTile,
    domain: Interval,
    a: i64,
    c: Expr,
    /// `q` for a result `v floordiv q + c` (then `a` is 1).
    div: Option<i64>,
    /// For a result `a * v + w + c` (a convolution's window `w`): the tile and domain of
    /// `w`, read at every position of `v`'s tile (`halo.rs`).
    halo: Option<(DimTile, Interval)>,
}

/// Derives the target tile of `map` from `source` (one [`DimTile`] per map dimension);
/// `seq[m]` is the space dimension tiling range variable `m`, if any.
pub(crate) fn derive(
    space: &mut TilingSpace,
    source: &[DimTile],
    map: &IndexedMap,
    seq: &[Option<usize>],
) -> Result<Vec<DimTile>, String> {
    let m = &map.map;
    match m.form() {
        MapForm::Undefined => return Err("unknown indexing".into()),
        MapForm::KnownEmpty => return Err("the map reads no element".into()),
        MapForm::Normal => {}
    }
    // A constraint `result in [0, hi]` is the target's own bounds: the tile masks it. An
    // order between a dimension and a range variable (a scan's rows) is a window.
    let mut caps: Vec<Option<i64>> = vec![None; m.results().len()];
    let mut orders: Vec<Order> = Vec::new();
    let mut limits: Vec<Limit> = Vec::new();
    for c in m.constraints() {
        // The result `c.expr + k` for a constant `k` (a padded convolution's constraint
        // leaves out the padding's offset), constrained to `[0, hi + k]`.
        let shift = |r: Expr| {
            Linear::of(r - c.expr)
                .filter(|l| l.terms.is_empty())
                .map(|l| l.constant)
        };
        let j = m.results().iter().enumerate().find_map(|(j, &r)| {
            shift(r)
                .filter(|&k| c.interval.lo.checked_add(k) == Some(0) && caps[j].is_none())
                .map(|k| (j, k))
        });
        match (j, order_of(m, c)) {
            (Some((j, k)), _) => caps[j] = Some(c.interval.hi.saturating_add(k).saturating_add(1)),
            (None, Some(o)) if !orders.iter().any(|p| p.range == o.range) => orders.push(o),
            (None, None)
                if limit_of(m, c).is_some_and(|l| !limits.iter().any(|p| p.range == l.range)) =>
            {
                limits.extend(limit_of(m, c))
            }
            _ => {
                return Err(format!(
                    "the map's domain is constrained (`{} in {}`)",
                    c.expr, c.interval
                ))
            }
        }
    }
    if source.len() != m.dims().len() {
        return Err(format!(
            "a tile of {} dimensions for a map of {}",
            source.len(),
            m.dims().len()
        ));
    }
    let rt = runtime_ids(space, map)?;
    let pairs = unit_pairs(space, source, m)?;
    let mut used = Vec::new();
    let mut out = Vec::with_capacity(m.results().len());
    for (j, &r) in m.results().iter().enumerate() {
        let mut s = split(space, source, m, r, &rt, seq, &mut used)?;
        if let Some(i) = pairs[j] {
            // A constant result standing for the source's unit dimension `i`.
            s.tile = source[i];
            s.domain = m.dims()[i];
        }
        if let Some(o) = orders.iter().find(|o| r == Expr::range(o.range as u32)) {
            if seq.get(o.range).copied().flatten().is_some() {
                return Err(format!("`{r}`: an ordered sequential dimension"));
            }
            s.tile = if space.scan_steps {
                // A step reads all of its rows (those its outputs skip too, for the carry):
                // the whole scanned dimension, not only the rows the outputs reach (an
                // exclusive scan's first output reads none, its last row reaches none).
                let (d, rows) = (m.dims()[o.dim], m.ranges()[o.range]);
                s.domain = Interval::new(d.lo.min(rows.lo), d.hi.max(rows.hi));
                step_rows(&source[o.dim])
            } else {
                window(space, &source[o.dim], m.ranges()[o.range], o.side)?
            };
        }
        let mut t = scale(space, s, r, caps[j])?;
        if let Some(l) = limits.iter().find(|l| r == Expr::range(l.range as u32)) {
            t = restrict(space, t, &source[l.dim], m.dims()[l.dim], l)?;
        }
        out.push(t);
    }
    // A limited range variable (a padded convolution's tap) must be a whole result, read
    // once.
    for l in &limits {
        let v = affine::Var::range(l.range as u32);
        let whole = m.results().iter().filter(|&&r| r == Expr::var(v)).count() == 1;
        if !whole || m.results().iter().filter(|r| r.may_use(v)).count() != 1 {
            return Err(format!(
                "`{v}`: a range variable limited by the domain (`{}`) not read as a whole result",
                m.constraints()
                    .iter()
                    .find(|c| c.expr.may_use(v))
                    .map(|c| format!("{} in {}", c.expr, c.interval))
                    .unwrap_or_default()
            ));
        }
    }
    // An ordered range variable must be a whole result, read once.
    for o in &orders {
        let v = affine::Var::range(o.range as u32);
        let whole = m.results().iter().filter(|&&r| r == Expr::var(v)).count() == 1;
        if !whole || m.results().iter().filter(|r| r.may_use(v)).count() != 1 {
            return Err(format!(
                "`{v}`: an ordered range variable not read as a whole result"
            ));
        }
    }
    Ok(out)
}

/// For each result, the source dimension of one index it stands for: the map reads no
/// other dimension of the source, and its tile may be empty there (its one index masked at
/// some tile ids), so the target must be empty there too. Such dimensions are paired with
/// the map's constant results in order (any pairing gives the same elements: each reads
/// only index 0); an error when there are more of them than constant results.
fn unit_pairs(
    space: &TilingSpace,
    source: &[DimTile],
    m: &IndexingMap,
) -> Result<Vec<Option<usize>>, String> {
    let mut pairs = vec![None; m.results().len()];
    let mut constants = m
        .results()
        .iter()
        .enumerate()
        .filter(|(_, r)| r.as_const().is_some())
        .map(|(j, _)| j);
    for (i, (t, b)) in source.iter().zip(m.dims()).enumerate() {
        let read = m
            .results()
            .iter()
            .chain(m.constraints().iter().map(|c| &c.expr))
            .any(|r| r.may_use(affine::Var::dim(i as u32)));
        let holds_index = is_const(space, t.offset, 0)
            && space.range(t.size).lo >= 1
            && space.range(t.upper_bound).lo >= 1;
        if read || b.lo != 0 || b.hi != 0 || holds_index {
            continue;
        }
        match constants.next() {
            Some(j) => pairs[j] = Some(i),
            None => {
                return Err(format!(
                    "the source tile may be empty along its unit dimension {i}, which the map drops"
                ))
            }
        }
    }
    Ok(pairs)
}

/// The tiling space's runtime value for each runtime variable of `map` (registered when
/// new); an error when one depends on the indices.
fn runtime_ids(space: &mut TilingSpace, map: &IndexedMap) -> Result<Vec<usize>, String> {
    let mut ids = Vec::with_capacity(map.runtime.len());
    for (k, rv) in map.runtime.iter().enumerate() {
        let varies = rv
            .map
            .results()
            .iter()
            .any(|e| e.uses_kind(VarKind::Dim) || e.uses_kind(VarKind::Range));
        if varies {
            return Err(format!(
                "runtime value rt{k} (from `{}`) varies within a tile",
                rv.producer_name
            ));
        }
        let bounds = map.map.runtimes().get(k).copied().unwrap_or(Interval::FULL);
        let results: Vec<String> = rv.map.results().iter().map(|e| e.to_string()).collect();
        ids.push(space.runtime(rv.producer, results.join(", "), bounds));
    }
    Ok(ids)
}

/// One index of a result: its tile, its domain, its coefficient, the divisor of a
/// `v floordiv q` term and its kind.
type Index = (DimTile, Interval, i64, Option<i64>, VarKind);

/// Splits result `r` into its one index (or, for a halo, two) (with its tile) and the rest.
fn split(
    space: &TilingSpace,
    source: &[DimTile],
    m: &IndexingMap,
    r: Expr,
    rt: &[usize],
    seq: &[Option<usize>],
    used: &mut Vec<affine::Var>,
) -> Result<Scaled, String> {
    let lin = Linear::of(r).ok_or_else(|| format!("`{r}` overflows"))?;
    let mut c = Expr::constant(lin.constant);
    let mut index: Vec<Index> = Vec::new();
    for &(atom, k) in &lin.terms {
        if !atom.uses_kind(VarKind::Dim) && !atom.uses_kind(VarKind::Range) {
            let renamed = atom.substitute(&mut |v| {
                (v.kind == VarKind::Runtime)
                    .then(|| rt.get(v.index as usize).map(|&i| Expr::runtime(i as u32)))
                    .flatten()
            });
            c = c + renamed * k;
            continue;
        }
        let (v, div) = match (atom.as_var(), atom.kind()) {
            (Some(v), _) => (v, None),
            (None, ExprKind::FloorDiv(x, q)) if k == 1 => match (x.as_var(), q.as_const()) {
                (Some(v), Some(q)) if q > 1 => (v, Some(q)),
                _ => return Err(format!("`{atom}` mixes dimensions (a reshape or bitcast)")),
            },
            _ => return Err(format!("`{atom}` mixes dimensions (a reshape or bitcast)")),
        };
        // Two plain indices may make a halo (below); a third index, or a division beside
        // another index, has no tile.
        let divided = div.is_some() || index.iter().any(|i| i.3.is_some());
        if index.len() == 2 || (divided && !index.is_empty()) {
            return Err(format!("`{r}` sums several indices"));
        }
        if used.contains(&v) {
            return Err(format!("`{v}` is read by two results"));
        }
        used.push(v);
        let (tile, domain) = match v.kind {
            VarKind::Dim => {
                let i = v.index as usize;
                let t = source.get(i).ok_or("a dimension out of range")?;
                (*t, m.dims()[i])
            }
            _ => {
                let b = m.ranges()[v.index as usize];
                match seq.get(v.index as usize).copied().flatten() {
                    Some(q) if b.lo == 0 => (space.dim_tile(q), b),
                    Some(_) => return Err(format!("`{v}` does not start at 0")),
                    None => (DimTile::full(b.lo, b.hi), b),
                }
            }
        };
        index.push((tile, domain, k, div, v.kind));
    }
    match index.len() {
        // A constant: one element.
        0 => Ok(Scaled {
            tile: DimTile::constant(0, 1, 1, 1),
            domain: Interval::new(0, 0),
            a: 1,
            c,
            div: None,
            halo: None,
        }),
        1 => {
            let (tile, domain, a, div, _) = index[0];
            Ok(Scaled {
                tile,
                domain,
                a,
                c,
                div,
                halo: None,
            })
        }
        _ => {
            // The window: an index of coefficient 1 read at stride 1, a range variable first
            // (a convolution's window), the other index scaled by its coefficient.
            let unit = |i: &Index| i.2 == 1 && is_const(space, i.0.stride, 1);
            let w = (0..2)
                .filter(|&i| unit(&index[i]))
                .max_by_key(|&i| (index[i].4 == VarKind::Range, i))
                .ok_or_else(|| format!("`{r}` sums several indices, none a unit window"))?;
            let (tile, domain, a, _, _) = index[1 - w];
            Ok(Scaled {
                tile,
                domain,
                a,
                c,
                div: None,
                halo: Some((index[w].0, index[w].1)),
            })
        }
    }
}

/// Whether `e` is provably the constant `v` over the space.
fn is_const(space: &TilingSpace, e: Expr, v: i64) -> bool {
    space.simplify(e).as_const() == Some(v)
}

/// The target tile of one result `a * v + c` (see the module documentation); `cap`: the
/// map constrains the result to `[0, cap)` (target positions outside it are not read, and
/// the tile masks them).
fn scale(space: &TilingSpace, s: Scaled, r: Expr, cap: Option<i64>) -> Result<DimTile, String> {
    if let Some(q) = s.div {
        if cap.is_some() {
            return Err(format!("`{r}`: a constrained division"));
        }
        return divide(space, s, q, r);
    }
    if let Some((w, wd)) = s.halo {
        return super::halo::halo(space, (s.tile, s.domain, s.a, s.c), (w, wd), r, cap);
    }
    let Scaled {
        tile, domain, a, c, ..
    } = s;
    let (off, st, ub) = (tile.offset, tile.stride, tile.upper_bound);
    // Valid source positions: [lo_valid, hi_end) with lo_valid = max(0, domain.lo).
    let lo_valid = domain.lo.max(0);
    let end = Expr::constant(domain.hi.saturating_add(1));
    let ub_range = space.range(ub);
    let hi_end = if ub_range.lo >= domain.hi.saturating_add(1) {
        end
    } else if ub_range.hi <= domain.hi.saturating_add(1) {
        ub
    } else {
        ub.min(end)
    };
    let ka = Expr::constant(a);
    let upper = if a > 0 {
        // Lower side: the target's implicit 0 must be where the source starts to be valid.
        let at_lo = ka * lo_valid + c;
        // Under a cap, target positions below 0 are outside the constraint: masked.
        let starts_inside = space.range(st).lo >= 1
            && space.range(off).lo >= lo_valid
            && (cap.is_some() || space.range(at_lo).lo >= 0);
        if !is_const(space, at_lo, 0) && !starts_inside {
            return Err(format!(
                "`{r}`: the tile may start below the map's domain (no lower bound to mask it)"
            ));
        }
        ka * hi_end + c
    } else if a < 0 {
        let at_hi = ka * (hi_end - 1) + c;
        if !is_const(space, at_hi, 0) {
            return Err(format!(
                "`{r}`: a reversed tile whose end is cut (no lower bound to mask it)"
            ));
        }
        ka * lo_valid + c + 1
    } else {
        return Err(format!("`{r}`: a zero coefficient"));
    };
    let upper = match cap {
        Some(u) if space.range(upper).lo >= u => Expr::constant(u),
        Some(u) if space.range(upper).hi > u => upper.min(Expr::constant(u)),
        _ => upper,
    };
    let mut upper = space.simplify(upper);
    if let Some(u) = upper.as_const() {
        upper = Expr::constant(u.max(0));
    }
    Ok(DimTile {
        offset: space.simplify(ka * off + c),
        size: space.simplify(tile.size),
        stride: space.simplify(ka * st),
        upper_bound: upper,
    })
}

/// The target tile of a result `v floordiv q + c` (see the module documentation): only for
/// a unit-stride source tile that starts at or after the domain's start (0), whose only mask
/// is the domain's end, and a constant part that is never negative.
fn divide(space: &TilingSpace, s: Scaled, q: i64, r: Expr) -> Result<DimTile, String> {
    let Scaled {
        tile, domain, c, ..
    } = s;
    let end = domain.hi.saturating_add(1);
    let plain = domain.lo == 0
        && is_const(space, tile.stride, 1)
        && space.range(tile.offset).lo >= 0
        && space.range(tile.upper_bound).lo >= end
        && space.range(c).lo >= 0;
    if !plain {
        return Err(format!(
            "`{r}`: a division of a tile that is strided, masked or may start below 0"
        ));
    }
    let kq = Expr::constant(q);
    let first = tile.offset.floor_div(kq);
    let last = (tile.offset + tile.size - 1).floor_div(kq);
    Ok(DimTile {
        offset: space.simplify(first + c),
        size: space.simplify(last - first + 1),
        stride: Expr::constant(1),
        upper_bound: space.simplify(Expr::constant((end - 1).div_euclid(q) + 1) + c),
    })
}
