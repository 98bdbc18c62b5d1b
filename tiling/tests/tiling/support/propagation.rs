//! The brute-force oracle of tile propagation: for every tile-size vector of the space (all
//! of them on small extents), a few runtime values and every tile id of the parallel
//! dimensions, the elements of the propagated tile (all tile ids of the sequential dimensions
//! together, none twice) are exactly the elements the map sends the source tile's unmasked
//! elements to, wherever it sends some.

use std::collections::BTreeSet;

use affine::enumerate::for_each_in_box;
use affine::{Interval, Point};
use indexing::IndexedMap;
use tiling::propagate::{Tile, TilingSpace};

/// Runtime values tried for each runtime variable (those inside its bounds).
const RT_VALUES: [i64; 5] = [-1, 0, 1, 2, 7];

/// The cartesian product of per-dimension value lists.
fn product(lists: &[Vec<i64>]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new()];
    for l in lists {
        let mut next = Vec::with_capacity(out.len() * l.len());
        for p in &out {
            for &v in l {
                let mut q = p.clone();
                q.push(v);
                next.push(q);
            }
        }
        out = next;
    }
    out
}

/// The value of each of `map`'s runtime variables given the space's runtime values (matched
/// by producer and element map, as the propagation registers them).
fn map_runtimes(space: &TilingSpace, map: &IndexedMap, rt: &[i64]) -> Option<Vec<i64>> {
    map.runtime
        .iter()
        .map(|rv| {
            let results: Vec<String> = rv.map.results().iter().map(|e| e.to_string()).collect();
            let key = Some((rv.producer, results.join(", ")));
            let i = space.rt.iter().position(|r| r.source == key)?;
            rt.get(i).copied()
        })
        .collect()
}

/// Checks `target` (propagated through `map` from `source`) by enumeration; returns the
/// number of (sizes, runtime values, tile ids) points checked, `Err` the first mismatch.
pub fn check_propagation(
    space: &TilingSpace,
    source: &Tile,
    map: &IndexedMap,
    target: &Tile,
    budget: usize,
) -> Result<usize, String> {
    let m = &map.map;
    let extents: Vec<i64> = space
        .dims
        .iter()
        .map(|d| d.extent.unwrap_or(1).max(1))
        .collect();
    let size_box: Vec<Interval> = space
        .dims
        .iter()
        .zip(&extents)
        .map(|(d, &e)| match d.tile_size {
            Some(s) => Interval::new(s, s),
            None => Interval::new(1, e),
        })
        .collect();
    let rt_lists: Vec<Vec<i64>> = space
        .rt
        .iter()
        .map(|r| {
            RT_VALUES
                .iter()
                .copied()
                .filter(|&v| r.bounds.contains(v))
                .collect()
        })
        .collect();
    let rt_points = product(&rt_lists);
    // Sequential dimensions the target runs along (a tile that does not depend on one, such
    // as a reduction's init value, is read once for all of its tile ids).
    let uses = |q: usize| {
        target.dims.iter().any(|d| {
            [d.offset, d.size, d.stride, d.upper_bound].iter().any(|e| {
                e.may_use(affine::Var::dim(q as u32)) || e.may_use(affine::Var::range(q as u32))
            })
        })
    };
    let sequential: Vec<bool> = space.dims.iter().map(|d| d.owner.is_some()).collect();
    let seq_used: Vec<bool> = (0..space.dims.len())
        .map(|q| sequential[q] && uses(q))
        .collect();
    // A block scale (`s floordiv q` of a sequential dimension's range variable) is read again
    // by the next steps, and so is a convolution's input position `a * d + s` where windows
    // overlap (one input element under different taps of different outputs): repeats across
    // steps are allowed there, never within one step.
    let window_sum = |e: affine::Expr| {
        affine::linear::Linear::of(e).is_some_and(|l| {
            let kinds: Vec<affine::VarKind> = l
                .terms
                .iter()
                .filter_map(|&(atom, _)| atom.as_var().map(|v| v.kind))
                .collect();
            kinds.contains(&affine::VarKind::Dim) && kinds.contains(&affine::VarKind::Range)
        })
    };
    let rereads = m.results().iter().any(|&e| {
        matches!(e.kind(), affine::ExprKind::FloorDiv(x, _)
            if x.as_var().is_some_and(|v| v.kind == affine::VarKind::Range))
            || window_sum(e)
    });
    let (mut checked, mut spent) = (0usize, 0usize);
    let mut err: Option<String> = None;
    for_each_in_box(&size_box, |sizes| {
        let grid = |want_seq: bool| -> Vec<Interval> {
            sizes
                .iter()
                .zip(&extents)
                .zip(&sequential)
                .map(|((&s, &e), &q)| {
                    if q == want_seq {
                        Interval::new(0, (e - 1) / s)
                    } else {
                        Interval::new(0, 0)
                    }
                })
                .collect()
        };
        let par = grid(false);
        let seq: Vec<Interval> = grid(true)
            .into_iter()
            .zip(&seq_used)
            .map(|(g, &u)| if u { g } else { Interval::new(0, 0) })
            .collect();
        for rt in &rt_points {
            let Some(mrt) = map_runtimes(space, map, rt) else {
                err = Some("a runtime variable of the map is not in the space".into());
                return false;
            };
            for_each_in_box(&par, |tids| {
                let src = match source.dim_values(
                    &tids[..source.num_tids],
                    &sizes[..source.num_tids],
                    &rt[..source.num_rt],
                ) {
                    Ok(v) => v,
                    Err(e) => {
                        err = Some(format!("source at {tids:?}: {e}"));
                        return false;
                    }
                };
                // What the map reads for the source's elements.
                let mut want = BTreeSet::new();
                for x in product(&src) {
                    for_each_in_box(m.ranges(), |s| {
                        let p = Point {
                            dims: &x,
                            ranges: s,
                            runtimes: &mrt,
                        };
                        if m.contains_point(&p).unwrap_or(false) {
                            match m.evaluate(&p) {
                                Ok(v) => {
                                    want.insert(v);
                                }
                                Err(e) => err = Some(format!("map at {x:?}: {e}")),
                            }
                        }
                        spent += 1;
                        err.is_none()
                    });
                }
                // The target over every sequential tile id.
                let mut got = BTreeSet::new();
                let mut count = 0usize;
                for_each_in_box(&seq, |stids| {
                    let all: Vec<i64> = tids.iter().zip(stids).map(|(a, b)| a + b).collect();
                    match target.dim_values(
                        &all[..target.num_tids],
                        &sizes[..target.num_tids],
                        &rt[..target.num_rt],
                    ) {
                        Ok(v) => {
                            let step: BTreeSet<Vec<i64>> = product(&v).into_iter().collect();
                            let n: usize = v.iter().map(Vec::len).product();
                            if n != step.len() {
                                err = Some(format!("target at {all:?}: an element twice"));
                            }
                            count += if rereads {
                                step.difference(&got).count()
                            } else {
                                n
                            };
                            got.extend(step);
                        }
                        Err(e) => err = Some(format!("target at {all:?}: {e}")),
                    }
                    err.is_none()
                });
                checked += 1;
                // An empty source tile (masked at these tile ids) reads and writes nothing.
                if err.is_none() && src.iter().any(Vec::is_empty) && !got.is_empty() {
                    err = Some(format!(
                        "sizes {sizes:?}, runtime values {rt:?}, tile ids {tids:?}: the source tile is empty, the target holds {} elements",
                        got.len()
                    ));
                }
                // Where the source's elements all fall outside the map's domain, nothing is read, and
                // the tile may still hold elements (a scalar operand always holds its one).
                if err.is_none() && !want.is_empty() && (got != want || count != got.len()) {
                    err = Some(format!(
                        "sizes {sizes:?}, runtime values {rt:?}, tile ids {tids:?}: the tile covers {} elements ({count} with repeats), the map reads {}; tile {:?}.., reads {:?}..",
                        got.len(),
                        want.len(),
                        got.iter().take(8).collect::<Vec<_>>(),
                        want.iter().take(8).collect::<Vec<_>>()
                    ));
                }
                err.is_none() && spent < budget
            });
            if err.is_some() || spent >= budget {
                return false;
            }
        }
        err.is_none() && spent < budget
    });
    match err {
        Some(e) => Err(e),
        None => Ok(checked),
    }
}
