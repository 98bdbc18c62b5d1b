//! Are two indexing maps the same map? Decided here by brute-force enumeration (always
//! available); `prove::prove_maps_equal` (feature `z3`) answers the same question with z3.
//!
//! Two maps are *equal* when they describe the same function on the same set of points:
//! - they have the same numbers of dimension, range and runtime variables (variables are matched
//!   by kind and index);
//! - their domains (variable bounds and constraints) contain exactly the same points;
//! - at every point of the domain their results are the same tuple (so the numbers of results
//!   agree too, unless the domain is empty).
//!
//! Special cases, decided as follows:
//! - KNOWN EMPTY equals KNOWN EMPTY and every map whose domain has no point, whatever its
//!   variables and results (a function on no points is the empty function). Two maps with empty
//!   domains are equal for the same reason.
//! - UNDEFINED says nothing about the access it stands for: comparing it with anything (itself
//!   included) is [`Equivalence::Unknown`].
//! - Maps with different numbers of variables of some kind live in different spaces. If exactly
//!   one of them has an empty domain they are [`Equivalence::Different`] (the counterexample is a
//!   point of the other one's domain, written in its variables); if both have points they are
//!   [`Equivalence::Unknown`] with a reason starting `not comparable:`; if neither has points
//!   they are [`Equivalence::Equal`].
//!
//! The text form ([`std::fmt::Display`]) is a contract of the command line:
//! `equal`, `different at d0 = 3, s0 = 1: (3, 4) vs (3, 5)` (every variable of the point:
//! dimensions, then range variables, then runtime variables; a side whose domain does not hold
//! the point prints `(not in domain)`; a point without variables prints as `()`), and
//! `unknown: <reason>`.

use std::fmt;

use crate::enumerate::{box_size, for_each_in_box, OwnedPoint};
use crate::{IndexingMap, Interval, MapError, VarKind};

/// A point where two maps differ, with what each map gives there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counterexample {
    /// The point (values of dimensions, range variables, runtime variables).
    pub point: OwnedPoint,
    /// The first map's results there, or `None` if the point is outside its domain.
    pub lhs: Option<Vec<i64>>,
    /// The second map's results there, or `None` if the point is outside its domain.
    pub rhs: Option<Vec<i64>>,
}

/// The answer to "are these two maps equal?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Equivalence {
    /// Same domain, same results at every point of it.
    Equal,
    /// They differ at this point.
    Different(Counterexample),
    /// Could not decide; the reason says why.
    Unknown(String),
}

impl Equivalence {
    /// True for [`Equivalence::Equal`].
    pub fn is_equal(&self) -> bool {
        matches!(self, Equivalence::Equal)
    }
    /// True for [`Equivalence::Different`].
    pub fn is_different(&self) -> bool {
        matches!(self, Equivalence::Different(_))
    }
    /// True for [`Equivalence::Unknown`].
    pub fn is_unknown(&self) -> bool {
        matches!(self, Equivalence::Unknown(_))
    }
    /// The counterexample, if the maps are different.
    pub fn counterexample(&self) -> Option<&Counterexample> {
        match self {
            Equivalence::Different(c) => Some(c),
            _ => None,
        }
    }
}

/// Writes `d0 = 3, s0 = 1, rt0 = 7` (or `()` for a point without variables).
pub(crate) fn write_point(f: &mut fmt::Formatter<'_>, p: &OwnedPoint) -> fmt::Result {
    let mut first = true;
    for (kind, values) in [
        (VarKind::Dim, &p.dims),
        (VarKind::Range, &p.ranges),
        (VarKind::Runtime, &p.runtimes),
    ] {
        for (i, v) in values.iter().enumerate() {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{}{} = {}", kind.prefix(), i, v)?;
        }
    }
    if first {
        f.write_str("()")?;
    }
    Ok(())
}

fn write_side(f: &mut fmt::Formatter<'_>, side: &Option<Vec<i64>>) -> fmt::Result {
    match side {
        None => f.write_str("(not in domain)"),
        Some(values) => {
            f.write_str("(")?;
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{v}")?;
            }
            f.write_str(")")
        }
    }
}

impl fmt::Display for Counterexample {
    /// `d0 = 3, s0 = 1: (3, 4) vs (3, 5)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_point(f, &self.point)?;
        f.write_str(": ")?;
        write_side(f, &self.lhs)?;
        f.write_str(" vs ")?;
        write_side(f, &self.rhs)
    }
}

impl fmt::Display for Equivalence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Equivalence::Equal => f.write_str("equal"),
            Equivalence::Different(c) => write!(f, "different at {c}"),
            Equivalence::Unknown(reason) if reason.is_empty() => f.write_str("unknown"),
            Equivalence::Unknown(reason) => write!(f, "unknown: {reason}"),
        }
    }
}

/// The numbers of (dimension, range, runtime) variables of a map.
pub(crate) fn arity(map: &IndexingMap) -> [usize; 3] {
    [map.dims().len(), map.ranges().len(), map.runtimes().len()]
}

/// A reason why maps with different variable counts cannot be compared, if they have them.
pub(crate) fn arity_mismatch(a: &IndexingMap, b: &IndexingMap) -> Option<String> {
    let (x, y) = (arity(a), arity(b));
    let names = ["dimension", "range", "runtime"];
    let diffs: Vec<String> = (0..3)
        .filter(|&k| x[k] != y[k])
        .map(|k| format!("{} vs {} {} variables", x[k], y[k], names[k]))
        .collect();
    if diffs.is_empty() {
        None
    } else {
        Some(format!(
            "not comparable: the maps have {}",
            diffs.join(", ")
        ))
    }
}

/// Why comparing with UNDEFINED is unknown.
pub(crate) const UNDEFINED_REASON: &str = "an UNDEFINED map is not comparable with anything";

/// Decides whether two maps are equal (see the module documentation) by visiting every point of
/// the union of their bounding boxes, in lexicographic order (dimensions, then range variables,
/// then runtime variables, last coordinate fastest). The first point where the maps differ is
/// the counterexample.
///
/// Returns [`Equivalence::Unknown`] if the box has more than `limit` points, if either map is
/// UNDEFINED, or if evaluating a result or constraint fails (overflow, division by zero) at some
/// point and no difference was found elsewhere.
pub fn maps_equivalent_by_enumeration(
    a: &IndexingMap,
    b: &IndexingMap,
    limit: u128,
) -> Equivalence {
    if a.is_undefined() || b.is_undefined() {
        return Equivalence::Unknown(UNDEFINED_REASON.to_string());
    }
    if a.is_known_empty() && b.is_known_empty() {
        return Equivalence::Equal;
    }
    if a.is_known_empty() || b.is_known_empty() || arity_mismatch(a, b).is_some() {
        return compare_disjoint_spaces(a, b, limit);
    }
    let bounds: Vec<Interval> = [VarKind::Dim, VarKind::Range, VarKind::Runtime]
        .iter()
        .flat_map(|&k| {
            a.vars_of(k)
                .iter()
                .zip(b.vars_of(k))
                .map(|(x, y)| x.union(*y))
        })
        .collect();
    let points = box_size(&bounds);
    if points > limit {
        return Equivalence::Unknown(format!(
            "the domains' bounding box has {points} points, more than the limit of {limit}"
        ));
    }
    let [nd, nr, _] = arity(a);
    let mut first_error: Option<String> = None;
    let mut found: Option<Counterexample> = None;
    for_each_in_box(&bounds, |flat| {
        let point = OwnedPoint {
            dims: flat[..nd].to_vec(),
            ranges: flat[nd..nd + nr].to_vec(),
            runtimes: flat[nd + nr..].to_vec(),
        };
        match (side_at(a, &point), side_at(b, &point)) {
            (Ok(lhs), Ok(rhs)) => {
                if lhs != rhs {
                    found = Some(Counterexample { point, lhs, rhs });
                    return false;
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                if first_error.is_none() {
                    first_error = Some(format!("at {}: {e}", PointText(&point)));
                }
            }
        }
        true
    });
    match (found, first_error) {
        (Some(c), _) => Equivalence::Different(c),
        (None, Some(e)) => Equivalence::Unknown(e),
        (None, None) => Equivalence::Equal,
    }
}

/// The results of `map` at `point`, or `None` if the point is outside its domain.
fn side_at(map: &IndexingMap, point: &OwnedPoint) -> Result<Option<Vec<i64>>, MapError> {
    let p = point.as_point();
    if map.contains_point(&p)? {
        Ok(Some(map.evaluate(&p)?))
    } else {
        Ok(None)
    }
}

/// Displays a point as `d0 = 1, s0 = 2`.
pub(crate) struct PointText<'a>(pub(crate) &'a OwnedPoint);

impl fmt::Display for PointText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_point(f, self.0)
    }
}

/// Maps that do not share a variable space (one is KNOWN EMPTY, or the variable counts differ):
/// equal iff both domains are empty; different if exactly one is; otherwise not comparable.
fn compare_disjoint_spaces(a: &IndexingMap, b: &IndexingMap, limit: u128) -> Equivalence {
    let first_a = match first_domain_point(a, limit) {
        Ok(p) => p,
        Err(e) => return Equivalence::Unknown(e),
    };
    let first_b = match first_domain_point(b, limit) {
        Ok(p) => p,
        Err(e) => return Equivalence::Unknown(e),
    };
    match (first_a, first_b) {
        (None, None) => Equivalence::Equal,
        (Some((point, values)), None) => Equivalence::Different(Counterexample {
            point,
            lhs: Some(values),
            rhs: None,
        }),
        (None, Some((point, values))) => Equivalence::Different(Counterexample {
            point,
            lhs: None,
            rhs: Some(values),
        }),
        (Some(_), Some(_)) => Equivalence::Unknown(
            arity_mismatch(a, b).unwrap_or_else(|| "not comparable".to_string()),
        ),
    }
}

/// A point and a map's results there.
type PointValues = (OwnedPoint, Vec<i64>);

/// A point of the domain (the first in lexicographic order unless evaluation failed at an
/// earlier one) with the results there, or `None` if the domain is empty; `Err` if it cannot be
/// decided.
fn first_domain_point(map: &IndexingMap, limit: u128) -> Result<Option<PointValues>, String> {
    if map.is_known_empty() {
        return Ok(None);
    }
    let bounds: Vec<Interval> = [VarKind::Dim, VarKind::Range, VarKind::Runtime]
        .iter()
        .flat_map(|&k| map.vars_of(k).iter().copied())
        .collect();
    let points = box_size(&bounds);
    if points > limit {
        return Err(format!(
            "the domain's bounding box has {points} points, more than the limit of {limit}"
        ));
    }
    let [nd, nr, _] = arity(map);
    let mut out: Result<Option<PointValues>, String> = Ok(None);
    let mut first_error: Option<String> = None;
    for_each_in_box(&bounds, |flat| {
        let point = OwnedPoint {
            dims: flat[..nd].to_vec(),
            ranges: flat[nd..nd + nr].to_vec(),
            runtimes: flat[nd + nr..].to_vec(),
        };
        match side_at(map, &point) {
            Ok(Some(values)) => {
                out = Ok(Some((point, values)));
                false
            }
            Ok(None) => true,
            Err(e) => {
                if first_error.is_none() {
                    first_error = Some(format!("at {}: {e}", PointText(&point)));
                }
                true
            }
        }
    });
    match (out, first_error) {
        (Ok(None), Some(e)) => Err(e),
        (out, _) => out,
    }
}
