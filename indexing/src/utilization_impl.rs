//! How many times each element of an operand is read for one full evaluation of the
//! output: exact counts by enumerating each map's domain (every dimension and range
//! variable point satisfying the constraints). Each distinct map of the operand's set counts
//! as one access per point (two identical accesses through different paths were merged by
//! deduplication and count once). A domain or operand larger than the caller's limit, or a
//! map with runtime variables, is reported as such, never estimated.

use std::collections::BTreeMap;
use std::fmt;

use affine::enumerate::{box_size, for_each_in_box};
use affine::{Interval, Point};

use crate::OperandIndexing;

/// The outcome of counting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Utilization {
    /// Exact counts.
    Exact {
        /// Elements of the operand.
        elements: u64,
        /// Total reads (points of all domains).
        reads: u64,
        /// `reads per element -> number of elements read that many times` (0 included).
        histogram: BTreeMap<u64, u64>,
    },
    /// Not counted: some domain or the operand has more points than the limit.
    TooLarge {
        /// Points that would have to be enumerated.
        points: u128,
        /// The limit.
        limit: u128,
    },
    /// Not counted: a map reads at positions given by runtime values.
    RuntimeDependent,
    /// Not counted: the operand's maps are UNDEFINED.
    Undefined(String),
}

impl fmt::Display for Utilization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Utilization::Exact {
                elements,
                reads,
                histogram,
            } => {
                let used: u64 = histogram
                    .iter()
                    .filter(|(&k, _)| k > 0)
                    .map(|(_, &v)| v)
                    .sum();
                write!(
                    f,
                    "reads {reads}, elements read {used} of {elements}, reads per element:"
                )?;
                for (k, v) in histogram {
                    write!(f, " {k}x{v}")?;
                }
                Ok(())
            }
            Utilization::TooLarge { points, limit } => write!(
                f,
                "not counted: {points} points to enumerate exceed the limit of {limit}"
            ),
            Utilization::RuntimeDependent => {
                write!(f, "not counted: positions depend on runtime values")
            }
            Utilization::Undefined(r) => write!(f, "not counted: unknown indexing: {r}"),
        }
    }
}

/// Counts reads of every element of an operand of shape `operand_dims` (row-major) through
/// the maps of `set`, enumerating at most `limit` points per map and elements.
pub fn count_reads(set: &OperandIndexing, operand_dims: &[i64], limit: u128) -> Utilization {
    if let OperandIndexing::Undefined(r) = set {
        return Utilization::Undefined(r.clone());
    }
    let elements = box_size(
        &operand_dims
            .iter()
            .map(|&n| Interval::new(0, n - 1))
            .collect::<Vec<_>>(),
    );
    if elements > limit {
        return Utilization::TooLarge {
            points: elements,
            limit,
        };
    }
    let mut counts = vec![0u64; elements as usize];
    let mut reads = 0u64;
    for m in set.maps() {
        let map = &m.map;
        if !map.runtimes().is_empty() {
            return Utilization::RuntimeDependent;
        }
        let bounds: Vec<Interval> = map.dims().iter().chain(map.ranges()).copied().collect();
        let points = box_size(&bounds);
        if points > limit {
            return Utilization::TooLarge { points, limit };
        }
        let nd = map.dims().len();
        let mut bad = false;
        for_each_in_box(&bounds, |flat| {
            let p = Point {
                dims: &flat[..nd],
                ranges: &flat[nd..],
                runtimes: &[],
            };
            if !map.constraints_satisfied(&p).unwrap_or(false) {
                return true;
            }
            let Ok(idx) = map.evaluate(&p) else {
                bad = true;
                return false;
            };
            let mut lin = 0i64;
            for (&i, &n) in idx.iter().zip(operand_dims) {
                if i < 0 || i >= n {
                    bad = true;
                    return false;
                }
                lin = lin * n + i;
            }
            counts[lin as usize] += 1;
            reads += 1;
            true
        });
        if bad {
            return Utilization::Undefined(format!("map `{map}` reads outside the operand"));
        }
    }
    let mut histogram = BTreeMap::new();
    for c in counts {
        *histogram.entry(c).or_insert(0) += 1;
    }
    Utilization::Exact {
        elements: elements as u64,
        reads,
        histogram,
    }
}
