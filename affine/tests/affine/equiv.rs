//! Map equality by enumeration: equal maps written differently, counterexamples and their
//! printed form, domain differences, special maps.

use affine::enumerate::OwnedPoint;
use affine::equiv::{maps_equivalent_by_enumeration, Counterexample, Equivalence};
use affine::{Expr, IndexingMap, Interval};

const LIMIT: u128 = 100_000;

fn c(v: i64) -> Expr {
    Expr::constant(v)
}

fn map(
    dims: &[(i64, i64)],
    ranges: &[(i64, i64)],
    runtimes: &[(i64, i64)],
    results: Vec<Expr>,
    constraints: Vec<(Expr, Interval)>,
) -> IndexingMap {
    let iv = |b: &[(i64, i64)]| b.iter().map(|&(lo, hi)| Interval::new(lo, hi)).collect();
    IndexingMap::new(iv(dims), iv(ranges), iv(runtimes), results, constraints).unwrap()
}

fn check(a: &IndexingMap, b: &IndexingMap, expect: &str) {
    let got = maps_equivalent_by_enumeration(a, b, LIMIT).to_string();
    assert_eq!(got, expect, "\n  a: {a}\n  b: {b}");
}

#[test]
fn equal_maps_written_differently() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let a = map(
        &[(0, 15), (0, 7)],
        &[],
        &[],
        vec![(d0 * 8 + d1).floor_div(c(8))],
        vec![],
    );
    let b = map(&[(0, 15), (0, 7)], &[], &[], vec![d0], vec![]);
    check(&a, &b, "equal");
    // A reshape [32] -> [4, 8]: (d0 floordiv 8, d0 mod 8) composed back is the identity.
    let a = map(
        &[(0, 31)],
        &[],
        &[],
        vec![d0.floor_div(c(8)) * 8 + d0.modulo(c(8))],
        vec![],
    );
    let b = IndexingMap::identity(&[32]);
    check(&a, &b, "equal");
    // A constraint that every point of the box satisfies changes nothing.
    let b2 = map(
        &[(0, 31)],
        &[],
        &[],
        vec![d0],
        vec![((d0 * 2).modulo(c(2)), Interval::new(0, 0))],
    );
    check(&b, &b2, "equal");
}

#[test]
fn first_difference_in_lexicographic_order() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let a = map(
        &[(0, 3), (0, 7)],
        &[],
        &[],
        vec![d0, d1.modulo(c(4))],
        vec![],
    );
    let b = map(&[(0, 3), (0, 7)], &[], &[], vec![d0, d1], vec![]);
    check(&a, &b, "different at d0 = 0, d1 = 4: (0, 0) vs (0, 4)");
    let r = maps_equivalent_by_enumeration(&a, &b, LIMIT);
    assert_eq!(
        r,
        Equivalence::Different(Counterexample {
            point: OwnedPoint {
                dims: vec![0, 4],
                ranges: vec![],
                runtimes: vec![],
            },
            lhs: Some(vec![0, 0]),
            rhs: Some(vec![0, 4]),
        })
    );
}

#[test]
fn every_kind_of_variable_is_printed() {
    let (d0, s0, rt0) = (Expr::dim(0), Expr::range(0), Expr::runtime(0));
    let a = map(&[(0, 3)], &[(0, 2)], &[(5, 6)], vec![d0 + s0, rt0], vec![]);
    let b = map(
        &[(0, 3)],
        &[(0, 2)],
        &[(5, 6)],
        vec![d0 + s0.modulo(c(2)), rt0],
        vec![],
    );
    check(
        &a,
        &b,
        "different at d0 = 0, s0 = 2, rt0 = 5: (2, 5) vs (0, 5)",
    );
}

#[test]
fn domain_differences() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let a = map(&[(0, 3), (0, 3)], &[], &[], vec![d0 + d1], vec![]);
    let b = map(
        &[(0, 3), (0, 3)],
        &[],
        &[],
        vec![d0 + d1],
        vec![(d0 + d1, Interval::new(0, 4))],
    );
    check(
        &a,
        &b,
        "different at d0 = 2, d1 = 3: (5) vs (not in domain)",
    );
    check(
        &b,
        &a,
        "different at d0 = 2, d1 = 3: (not in domain) vs (5)",
    );
    // Different bounds: the union of both boxes is visited.
    let wide = map(&[(0, 4), (0, 3)], &[], &[], vec![d0 + d1], vec![]);
    check(
        &a,
        &wide,
        "different at d0 = 4, d1 = 0: (not in domain) vs (4)",
    );
    let shifted = map(&[(-1, 3), (0, 3)], &[], &[], vec![d0 + d1], vec![]);
    check(
        &a,
        &shifted,
        "different at d0 = -1, d1 = 0: (not in domain) vs (-1)",
    );
}

#[test]
fn different_numbers_of_results() {
    let d0 = Expr::dim(0);
    let a = map(&[(0, 3)], &[], &[], vec![d0], vec![]);
    let b = map(&[(0, 3)], &[], &[], vec![d0, d0], vec![]);
    check(&a, &b, "different at d0 = 0: (0) vs (0, 0)");
    let scalar_a = map(&[], &[], &[], vec![c(1)], vec![]);
    let scalar_b = map(&[], &[], &[], vec![c(2)], vec![]);
    check(&scalar_a, &scalar_b, "different at (): (1) vs (2)");
    check(&scalar_a, &scalar_a.clone(), "equal");
}

#[test]
fn special_maps() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let empty = IndexingMap::known_empty();
    let undefined = IndexingMap::undefined();
    let some = map(&[(0, 3)], &[], &[], vec![d0], vec![]);
    // A constraint no point satisfies: the domain is empty, but the map is not KNOWN EMPTY.
    let no_points = map(
        &[(0, 3), (0, 3)],
        &[],
        &[],
        vec![d0],
        vec![(d0 * 2 + d1 * 4, Interval::new(3, 3))],
    );
    assert!(!no_points.is_known_empty());
    check(&empty, &empty, "equal");
    check(&empty, &no_points, "equal");
    check(&no_points, &empty, "equal");
    check(&empty, &some, "different at d0 = 0: (not in domain) vs (0)");
    check(&some, &empty, "different at d0 = 0: (0) vs (not in domain)");
    let r = maps_equivalent_by_enumeration(&undefined, &undefined, LIMIT).to_string();
    assert!(r.starts_with("unknown: "), "{r}");
    assert!(maps_equivalent_by_enumeration(&some, &undefined, LIMIT).is_unknown());
    // Different variable spaces: empty domains are equal, otherwise not comparable.
    check(
        &some,
        &no_points,
        "different at d0 = 0: (0) vs (not in domain)",
    );
    let r = maps_equivalent_by_enumeration(&some, &IndexingMap::identity(&[4, 4]), LIMIT);
    assert_eq!(
        r.to_string(),
        "unknown: not comparable: the maps have 1 vs 2 dimension variables"
    );
}

#[test]
fn overflow_and_limits_are_unknown() {
    let d0 = Expr::dim(0);
    let big = map(&[(0, 3)], &[], &[], vec![d0 * (1i64 << 62)], vec![]);
    let r = maps_equivalent_by_enumeration(&big, &big.clone(), LIMIT).to_string();
    assert!(
        r.starts_with("unknown: at d0 = 2: arithmetic overflow"),
        "{r}"
    );
    // A definite difference elsewhere wins over the overflow.
    let other = map(&[(0, 3)], &[], &[], vec![d0 * (1i64 << 62) + 1], vec![]);
    check(&big, &other, "different at d0 = 0: (0) vs (1)");
    let huge = IndexingMap::identity(&[1000, 1000]);
    let r = maps_equivalent_by_enumeration(&huge, &huge.clone(), 1000).to_string();
    assert_eq!(
        r,
        "unknown: the domains' bounding box has 1000000 points, more than the limit of 1000"
    );
    assert_eq!(Equivalence::Unknown(String::new()).to_string(), "unknown");
}
