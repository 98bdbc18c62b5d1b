//! Brute-force enumeration of small domains: the always-available oracle for property tests,
//! `hloc map equiv` without z3, and cross-checks of the simplifier.

use thiserror::Error;

use crate::{IndexingMap, Interval, MapError, Point};

/// Why a domain could not be enumerated.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EnumerateError {
    /// The bounding box has more points than the caller's limit.
    #[error("the domain's bounding box has {points} points, more than the limit of {limit}")]
    TooLarge {
        /// Points in the box (saturating).
        points: u128,
        /// The limit given.
        limit: u128,
    },
    /// Evaluating a constraint failed.
    #[error(transparent)]
    Map(#[from] MapError),
}

/// A point of a map's variable space, owned.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct OwnedPoint {
    /// Dimension values.
    pub dims: Vec<i64>,
    /// Range variable values.
    pub ranges: Vec<i64>,
    /// Runtime variable values.
    pub runtimes: Vec<i64>,
}

impl OwnedPoint {
    /// Borrows as a [`Point`].
    pub fn as_point(&self) -> Point<'_> {
        Point {
            dims: &self.dims,
            ranges: &self.ranges,
            runtimes: &self.runtimes,
        }
    }
}

/// Number of points in the bounding box of the variables (ignoring constraints).
pub fn box_size(bounds: &[Interval]) -> u128 {
    bounds
        .iter()
        .fold(1u128, |acc, b| acc.saturating_mul(b.count()))
}

/// Calls `f` for every point of the bounding box `bounds` (dims, then ranges, then runtimes in
/// one flat list) in lexicographic order; stops early if `f` returns false.
pub fn for_each_in_box(bounds: &[Interval], mut f: impl FnMut(&[i64]) -> bool) {
    if bounds.iter().any(|b| b.is_empty()) {
        return;
    }
    let mut cur: Vec<i64> = bounds.iter().map(|b| b.lo).collect();
    loop {
        if !f(&cur) {
            return;
        }
        // Odometer increment, last coordinate fastest.
        let mut i = cur.len();
        loop {
            if i == 0 {
                return;
            }
            i -= 1;
            if cur[i] < bounds[i].hi {
                cur[i] += 1;
                break;
            }
            cur[i] = bounds[i].lo;
        }
    }
}

/// Every point of the map's domain (bounds and constraints), if the bounding box has at most
/// `limit` points. KNOWN EMPTY has none; UNDEFINED is an error.
pub fn domain_points(map: &IndexingMap, limit: u128) -> Result<Vec<OwnedPoint>, EnumerateError> {
    if map.is_known_empty() {
        return Ok(Vec::new());
    }
    if map.is_undefined() {
        return Err(MapError::Special("UNDEFINED").into());
    }
    let (nd, nr) = (map.dims().len(), map.ranges().len());
    let bounds: Vec<Interval> = map
        .dims()
        .iter()
        .chain(map.ranges())
        .chain(map.runtimes())
        .copied()
        .collect();
    let points = box_size(&bounds);
    if points > limit {
        return Err(EnumerateError::TooLarge { points, limit });
    }
    let mut out = Vec::new();
    let mut err = None;
    for_each_in_box(&bounds, |flat| {
        let p = OwnedPoint {
            dims: flat[..nd].to_vec(),
            ranges: flat[nd..nd + nr].to_vec(),
            runtimes: flat[nd + nr..].to_vec(),
        };
        match map.constraints_satisfied(&p.as_point()) {
            Ok(true) => out.push(p),
            Ok(false) => {}
            Err(e) => {
                err = Some(e);
                return false;
            }
        }
        true
    });
    match err {
        Some(e) => Err(e.into()),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Expr;

    #[test]
    fn enumerates_the_constrained_domain() {
        let (d0, s0) = (Expr::dim(0), Expr::range(0));
        let m = IndexingMap::new(
            vec![Interval::new(0, 3)],
            vec![Interval::new(0, 2)],
            vec![],
            vec![d0 + s0],
            vec![(d0 + s0, Interval::new(2, 3))],
        )
        .unwrap();
        let pts = domain_points(&m, 100).unwrap();
        let pairs: Vec<(i64, i64)> = pts.iter().map(|p| (p.dims[0], p.ranges[0])).collect();
        assert_eq!(pairs, vec![(0, 2), (1, 1), (1, 2), (2, 0), (2, 1), (3, 0)]);
        assert!(matches!(
            domain_points(&m, 5),
            Err(EnumerateError::TooLarge { points: 12, .. })
        ));
    }
}
