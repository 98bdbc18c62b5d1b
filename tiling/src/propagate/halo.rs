//! The halo tile of a result `a * v + w + c`: a convolution's input position read by an
//! output position `v` (stride `a`) and a window position `w`.
//!
//! Along the result, the source tile of `v` (offset `o`, stride 1, size `n`) and the tile
//! of `w` (offset `o_w`, stride 1, size `n_w`, at most `cnt` of its positions valid) read
//! the union of the intervals `[a * p + o_w, a * p + o_w + cnt)` over the valid positions
//! `p` of `v`. When `a <= cnt` at every tile id, consecutive intervals touch or overlap, so
//! the union is one interval: offset `a * o + o_w + c`, stride 1, size `a * (n - 1) + cnt`,
//! and an upper bound at the end of the last valid interval. At stride 2 a window tile
//! that may hold one valid position or several (symbolic window sizes) reads either every
//! other element or a run: the same offset and upper bound, with the stride
//! `2 - min(cnt - 1, 1)` and the size `n` or `2 * (n - 1) + cnt` chosen the same way. Otherwise (a window narrower than a stride above 2, or a window
//! tile that may hold between 2 and `a - 1` valid positions) the interval would also hold
//! elements no output reads, so there is no tile: an over-approximation is refused rather
//! than given as exact.
//!
//! Both tiles must start inside their domains and `v`'s must hold a valid position at every
//! tile id: provably, or because only the domain's end masks it (a tile id of the grid
//! starts inside its dimension; an empty tile of `v` would still read a window). A constraint `result in [0, cap)` (a padded convolution) masks the target
//! positions outside it: those below 0 by the tile's implicit lower bound, those at or above
//! `cap` by the upper bound.

use affine::{Expr, Interval};

use super::space::TilingSpace;
use super::tile::DimTile;

/// The end of the valid positions of `t` in `domain`: the smaller of its upper bound and
/// the domain's end, written without `min` where one provably is the smaller.
fn valid_end(space: &TilingSpace, t: &DimTile, domain: Interval) -> Expr {
    smaller(
        space,
        t.upper_bound,
        Expr::constant(domain.hi.saturating_add(1)),
    )
}

/// `min(x, y)`, or the one that is provably the smaller.
fn smaller(space: &TilingSpace, x: Expr, y: Expr) -> Expr {
    let d = space.range(x - y);
    if d.hi <= 0 {
        x
    } else if d.lo >= 0 {
        y
    } else {
        x.min(y)
    }
}

/// A tile's upper bound `upper`, no higher than `cap` where there is one, simplified; a
/// constant bound is at least 0 (an empty tile, not a negative end).
fn capped_upper(space: &TilingSpace, upper: Expr, cap: Option<i64>) -> Expr {
    let upper = match cap {
        Some(u) => smaller(space, upper, Expr::constant(u)),
        None => upper,
    };
    let upper = space.simplify(upper);
    match upper.as_const() {
        Some(u) => Expr::constant(u.max(0)),
        None => upper,
    }
}

/// The halo tile of result `r = a * v + w + c` (see the module documentation): `main` is
/// `v`'s tile, domain, coefficient `a` and the constant part `c`; `window` is `w`'s tile and
/// domain; `cap` the map's constraint on `r` (`[0, cap)`), if any.
pub(crate) fn halo(
    space: &TilingSpace,
    main: (DimTile, Interval, i64, Expr),
    window: (DimTile, Interval),
    r: Expr,
    cap: Option<i64>,
) -> Result<DimTile, String> {
    let (t, domain, a, c) = main;
    let (w, wdomain) = window;
    if a < 1 {
        return Err(format!("`{r}`: a window beside a reversed index"));
    }
    if !is_one(space, t.stride) || !is_one(space, w.stride) {
        return Err(format!("`{r}`: a window beside a strided tile"));
    }
    let end = valid_end(space, &t, domain);
    let w_end = valid_end(space, &w, wdomain);
    let starts_inside = space.range(t.offset).lo >= domain.lo.max(0)
        && space.range(w.offset).lo >= wdomain.lo.max(0)
        && (space.range(t.upper_bound).lo > domain.hi || space.range(end - t.offset).lo >= 1);
    if !starts_inside {
        return Err(format!(
            "`{r}`: a window beside a tile that may start outside its domain or be empty"
        ));
    }
    let ka = Expr::constant(a);
    let lowest = ka * Expr::constant(domain.lo.max(0)) + Expr::constant(wdomain.lo.max(0)) + c;
    if cap.is_none() && space.range(lowest).lo < 0 {
        return Err(format!(
            "`{r}`: the tile may start below 0 (no constraint to mask it)"
        ));
    }
    // The valid window positions of the window tile, at least `a` at every tile id. A tile
    // of the grid of its dimension (masked only by the domain's end: a tiling space's
    // dimension, e.g. a convolution's window walked in steps) holds at least one.
    let w_last = smaller(space, w.offset + w.size, w_end);
    let cnt = space.simplify(w_last - w.offset);
    let grid = space.range(w.upper_bound).lo > wdomain.hi;
    let cnt_range = space.range(cnt);
    let cnt_lo = if grid {
        cnt_range.lo.max(1)
    } else {
        cnt_range.lo
    };
    if cnt_lo >= 1 && cnt_range.hi <= 1 {
        // One window position (a window step of one tap, or an output tile of one
        // position beside a dilated window): the main tile shifted, at stride `a`.
        return Ok(one_position(space, (t, end, a, c), w.offset, cap));
    }
    // Stride 2 beside a window step of one tap or of a run of at least two: the step's
    // positions are every other element or a run, never a run with gaps.
    let one_or_run = a == 2 && cnt_lo >= 1;
    if cnt_lo < a && !one_or_run {
        return Err(format!(
            "`{r}`: sums two indices with gaps (the unit one may read fewer than {a} positions)"
        ));
    }
    // Only the `cnt` valid window positions are read, so the tile ends at
    // `a * (o + n - 1) + o_w + cnt + c`; the last valid `p` is `min(o + n - 1, end - 1)`, so
    // the upper bound `a * (end - 1) + o_w + cnt + c` leaves exactly the valid positions.
    let upper = ka * (end - 1) + w_last + c;
    let upper = capped_upper(space, upper, cap);
    // Where the step may hold one tap (`one_or_run`), its positions are `a * p + o_w`: the
    // same offset and upper bound at stride `a` and size `n`. With `m = min(cnt - 1, 1)`
    // (0 at one tap, 1 at a run), the stride `a - (a - 1) * m` and the size
    // `n + m * ((a - 1) * (n - 1) + cnt - 1)` are each form's.
    let run_size = ka * (t.size - 1) + cnt;
    let (stride, size) = if cnt_lo < a {
        let one = Expr::constant(1);
        let m = (cnt - one).min(one);
        let k1 = Expr::constant(a - 1);
        (
            space.simplify(ka - k1 * m),
            space.simplify(t.size + m * (k1 * (t.size - one) + cnt - one)),
        )
    } else {
        (Expr::constant(1), space.simplify(run_size))
    };
    Ok(DimTile {
        offset: space.simplify(ka * t.offset + w.offset + c),
        size,
        stride,
        upper_bound: upper,
    })
}

/// The tile of `a * v + o_w + c` for one window position `o_w`: `v`'s tile (offset `o`,
/// stride 1, valid positions up to `end`) scaled by `a` and shifted; its upper bound ends at
/// the last valid position (and at `cap`).
fn one_position(
    space: &TilingSpace,
    main: (DimTile, Expr, i64, Expr),
    o_w: Expr,
    cap: Option<i64>,
) -> DimTile {
    let (t, end, a, c) = main;
    let ka = Expr::constant(a);
    let upper = ka * (end - 1) + o_w + c + 1;
    let upper = capped_upper(space, upper, cap);
    DimTile {
        offset: space.simplify(ka * t.offset + o_w + c),
        size: space.simplify(t.size),
        stride: Expr::constant(a),
        upper_bound: upper,
    }
}

/// Whether `e` is provably 1 over the space.
fn is_one(space: &TilingSpace, e: Expr) -> bool {
    space.simplify(e).as_const() == Some(1)
}
