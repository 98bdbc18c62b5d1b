//! The brute-force oracle: two maps over the same variables agree on every point.

use affine::enumerate::{box_size, for_each_in_box};
use affine::{IndexingMap, Interval, Point};

/// Checks that `a` and `b` (same variable arities) have the same domain and equal results on
/// it, enumerating `a`'s bounding box (which contains `b`'s: simplification only tightens).
pub fn same_on_domain(a: &IndexingMap, b: &IndexingMap, limit: u128) -> Result<usize, String> {
    if a.is_undefined() || b.is_undefined() {
        return Err("UNDEFINED".into());
    }
    if a.is_known_empty() {
        return if b.is_known_empty() {
            Ok(0)
        } else {
            Err("input is KNOWN EMPTY, output is not".into())
        };
    }
    let (nd, nr) = (a.dims().len(), a.ranges().len());
    let bounds: Vec<Interval> = a
        .dims()
        .iter()
        .chain(a.ranges())
        .chain(a.runtimes())
        .copied()
        .collect();
    if box_size(&bounds) > limit {
        return Err(format!(
            "domain too large to enumerate ({} points)",
            box_size(&bounds)
        ));
    }
    if !b.is_known_empty()
        && (b.dims().len(), b.ranges().len(), b.runtimes().len()) != (nd, nr, a.runtimes().len())
    {
        return Err(format!("variable counts differ: {a} vs {b}"));
    }
    let mut checked = 0;
    let mut err = None;
    for_each_in_box(&bounds, |flat| {
        let p = Point {
            dims: &flat[..nd],
            ranges: &flat[nd..nd + nr],
            runtimes: &flat[nd + nr..],
        };
        let in_a = a.contains_point(&p);
        let in_b = if b.is_known_empty() {
            Ok(false)
        } else {
            b.contains_point(&p)
        };
        let verdict = match (in_a, in_b) {
            (Ok(x), Ok(y)) if x != y => Err(format!(
                "at {flat:?}: in input domain {x}, in output domain {y}"
            )),
            (Ok(true), Ok(true)) => match (a.evaluate(&p), b.evaluate(&p)) {
                (Ok(ra), Ok(rb)) if ra == rb => Ok(()),
                (ra, rb) => Err(format!("at {flat:?}: {ra:?} vs {rb:?}")),
            },
            (Ok(_), Ok(_)) => Ok(()),
            (ea, eb) => Err(format!("at {flat:?}: {ea:?} / {eb:?}")),
        };
        match verdict {
            Ok(()) => {
                checked += 1;
                true
            }
            Err(e) => {
                err = Some(e);
                false
            }
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(checked),
    }
}
