//! The brute-force oracle: a symbolic tile is exact when, for every tile-size vector that
//! satisfies its constraints and every aligned output tile, the elements
//! the map reads for that output tile are exactly `offset + k * stride` (`k < size`) per
//! operand dimension, with the offset the map's value at the tile's origin (range variables
//! at their lower bounds) and no element counted twice. A tile cut by the edge of the map's
//! domain (a last tile, or a domain starting above 0) reads a subset of its tile: the
//! elements of its positions inside the domain (the rest belongs to masked positions). A
//! map whose domain bounds a result from above (high padding) reads, for a whole tile,
//! exactly the tile's elements inside that bound; positions outside the constraints read
//! nothing.

use std::collections::BTreeSet;

use affine::enumerate::for_each_in_box;
use affine::{IndexingMap, Interval, Point};
use tiling::SymbolicTile;

/// What a check covered.
#[derive(Debug, Default, Clone, Copy)]
pub struct Coverage {
    /// Tile-size vectors checked (constraints held).
    pub checked: usize,
    /// Tile-size vectors skipped because the constraints failed.
    pub rejected: usize,
}

/// Checks `tile` against `map` by enumeration; `Err` describes the first mismatch. Gives up
/// quietly (returns what it checked so far) past `budget` evaluated points.
pub fn check_exact(
    original: &IndexingMap,
    tile: &SymbolicTile,
    budget: usize,
) -> Result<Coverage, String> {
    // The simplified map reads the same elements at every point of the domain; outside it
    // (tile origins before a domain's start) it is what the tile's offsets are made of.
    let map = &original.simplified();
    let dims: Vec<i64> = map.dims().iter().map(|b| b.hi + 1).collect();
    let size_box: Vec<Interval> = dims.iter().map(|&d| Interval::new(1, d)).collect();
    let rt: Vec<i64> = map.runtimes().iter().map(|b| b.lo).collect();
    let lows: Vec<i64> = map.ranges().iter().map(|b| b.lo).collect();
    // High-padding constraints: (result, bounds) pairs that mask the tile's elements.
    let masks: Vec<(usize, Interval)> = map
        .constraints()
        .iter()
        .filter_map(|c| {
            let j = map.results().iter().position(|&r| r == c.expr)?;
            Some((j, c.interval))
        })
        .collect();
    let mut cov = Coverage::default();
    let mut spent = 0usize;
    let mut err = None;
    for_each_in_box(&size_box, |t| {
        match tile.constraints().holds(t) {
            Ok(true) => {}
            Ok(false) => {
                cov.rejected += 1;
                return true;
            }
            Err(e) => {
                err = Some(format!("constraints at {t:?}: {e}"));
                return false;
            }
        }
        cov.checked += 1;
        let concrete = match tile.evaluate(t, &rt) {
            Ok(c) => c,
            Err(e) => {
                err = Some(format!("evaluate at {t:?}: {e}"));
                return false;
            }
        };
        // Aligned origins: p_i * t_i < D_i.
        let grid: Vec<Interval> = dims
            .iter()
            .zip(t)
            .map(|(&d, &s)| Interval::new(0, (d - 1) / s))
            .collect();
        for_each_in_box(&grid, |p| {
            let origin: Vec<i64> = p.iter().zip(t).map(|(a, b)| a * b).collect();
            let at = Point {
                dims: &origin,
                ranges: &lows,
                runtimes: &rt,
            };
            let offsets = match map.evaluate(&at) {
                Ok(o) => o,
                Err(e) => {
                    err = Some(format!("map at {origin:?}: {e}"));
                    return false;
                }
            };
            if origin.iter().all(|&o| o == 0) && offsets != concrete.offsets {
                err = Some(format!(
                    "sizes {t:?}: offset map gives {:?}, the map's origin is {offsets:?}",
                    concrete.offsets
                ));
                return false;
            }
            let mut actual = BTreeSet::new();
            // Positions of the output tile inside the output (a last tile may be cut).
            let local: Vec<Interval> = t
                .iter()
                .zip(&origin)
                .zip(map.dims())
                .map(|((&s, &o), b)| Interval::new((b.lo - o).max(0), (s - 1).min(b.hi - o)))
                .chain(map.ranges().iter().copied())
                .collect();
            let whole = origin
                .iter()
                .zip(t)
                .zip(map.dims())
                .all(|((o, s), b)| b.lo <= *o && o + s - 1 <= b.hi);
            for_each_in_box(&local, |k| {
                let d: Vec<i64> = origin.iter().zip(k).map(|(o, k)| o + k).collect();
                let s = &k[origin.len()..];
                let at = Point {
                    dims: &d,
                    ranges: s,
                    runtimes: &rt,
                };
                if !map.constraints_satisfied(&at).unwrap_or(true) {
                    spent += 1;
                    return spent < budget;
                }
                match map.evaluate(&at) {
                    Ok(v) => {
                        actual.insert(v);
                    }
                    Err(e) => err = Some(format!("map at {d:?}: {e}")),
                }
                spent += 1;
                err.is_none() && spent < budget
            });
            if err.is_some() || spent >= budget {
                return false;
            }
            let elements = concrete
                .sizes
                .iter()
                .try_fold(1i64, |acc, &n| acc.checked_mul(n.max(0)));
            if elements.is_none_or(|n| n > budget as i64) {
                spent = budget;
                return false;
            }
            let mut expected: BTreeSet<Vec<i64>> = BTreeSet::new();
            let per_dim: Vec<Interval> = concrete
                .sizes
                .iter()
                .map(|&n| Interval::new(0, n - 1))
                .collect();
            let mut count = 0usize;
            let mut seen: BTreeSet<Vec<i64>> = BTreeSet::new();
            for_each_in_box(&per_dim, |k| {
                let v: Vec<i64> = offsets
                    .iter()
                    .zip(&concrete.strides)
                    .zip(k)
                    .map(|((o, s), k)| o + k * s)
                    .collect();
                if masks.iter().all(|&(j, b)| b.contains(v[j])) {
                    expected.insert(v.clone());
                }
                seen.insert(v);
                count += 1;
                count <= 1_000_000
            });
            let covers = if whole {
                expected == actual
            } else {
                actual.is_subset(&expected)
            };
            if !covers || count != seen.len() {
                err = Some(format!(
                    "sizes {t:?}, origin {origin:?}: tile (offsets {offsets:?}, sizes {:?}, strides {:?}) \
                     has {} elements ({} distinct), the map reads {}: {:?}",
                    concrete.sizes,
                    concrete.strides,
                    count,
                    seen.len(),
                    actual.len(),
                    actual.iter().take(12).collect::<Vec<_>>()
                ));
                return false;
            }
            spent < budget
        });
        err.is_none() && spent < budget
    });
    match err {
        Some(e) => Err(e),
        None => Ok(cov),
    }
}
