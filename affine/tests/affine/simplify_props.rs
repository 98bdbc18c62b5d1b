//! Property tests of the simplifier against brute force: on random maps with small domains
//! (nested div/mod/min/max, random constraints, congruences), simplification preserves the
//! value at every domain point and the domain itself, is idempotent, and composition equals
//! pointwise composition. Realistic maps (large domains) are checked at sampled points.

use crate::oracle;

use affine::enumerate::{domain_points, OwnedPoint};
use affine::gen::{random_expr, random_map, realistic_maps, ExprConfig, MapConfig, Rng};
use affine::{IndexingMap, Interval, Point};
use quickcheck::{QuickCheck, TestResult};

const CASES: u64 = 600;

fn small_map(seed: u64) -> IndexingMap {
    random_map(&mut Rng::new(seed), &MapConfig::default())
}

#[test]
fn simplify_preserves_every_point() {
    fn prop(seed: u64) -> TestResult {
        let m = small_map(seed);
        let s = m.simplified();
        match oracle::same_on_domain(&m, &s, 100_000) {
            Ok(_) => TestResult::passed(),
            Err(e) => {
                TestResult::error(format!("seed {seed}\n  input:  {m}\n  output: {s}\n  {e}"))
            }
        }
    }
    QuickCheck::new()
        .tests(CASES)
        .max_tests(CASES * 2)
        .quickcheck(prop as fn(u64) -> TestResult);
}

#[test]
fn simplify_is_idempotent() {
    fn prop(seed: u64) -> TestResult {
        let once = small_map(seed).simplified();
        let twice = once.simplified();
        if once == twice && once.to_string() == twice.to_string() {
            TestResult::passed()
        } else {
            TestResult::error(format!("seed {seed}\n  once:  {once}\n  twice: {twice}"))
        }
    }
    QuickCheck::new()
        .tests(CASES)
        .quickcheck(prop as fn(u64) -> TestResult);
}

#[test]
fn realistic_maps_keep_their_values_at_sampled_points() {
    let mut rng = Rng::new(99);
    for (i, m) in realistic_maps(3, 200).into_iter().enumerate() {
        let s = m.simplified();
        assert!(!s.is_undefined(), "map {i} became UNDEFINED");
        for _ in 0..200 {
            let sample = |b: &[Interval], rng: &mut Rng| -> Vec<i64> {
                b.iter().map(|b| rng.range_i64(b.lo, b.hi)).collect()
            };
            let p = OwnedPoint {
                dims: sample(m.dims(), &mut rng),
                ranges: sample(m.ranges(), &mut rng),
                runtimes: sample(m.runtimes(), &mut rng),
            };
            let pt = p.as_point();
            let in_m = m.contains_point(&pt).unwrap();
            let in_s = !s.is_known_empty() && s.contains_point(&pt).unwrap();
            assert_eq!(in_m, in_s, "map {i} at {p:?}: {m} vs {s}");
            if in_m {
                assert_eq!(
                    m.evaluate(&pt).unwrap(),
                    s.evaluate(&pt).unwrap(),
                    "map {i} at {p:?}: {m} vs {s}"
                );
            }
        }
    }
}

/// A map whose dimensions take the results of `first` (same count), with random results.
fn follower(rng: &mut Rng, first: &IndexingMap) -> Option<IndexingMap> {
    let n = first.results().len() as u32;
    let ranges = rng.below(2) as u32;
    let cfg = ExprConfig {
        dims: n,
        ranges,
        runtimes: 0,
        max_depth: 3,
        ..ExprConfig::default()
    };
    let results = (0..1 + rng.below(2))
        .map(|_| random_expr(rng, &cfg))
        .collect();
    let dims: Vec<Interval> = (0..n)
        .map(|_| {
            let lo = rng.range_i64(-2, 2);
            Interval::new(lo, lo + rng.range_i64(0, 6))
        })
        .collect();
    let ranges: Vec<Interval> = (0..ranges)
        .map(|_| Interval::new(0, rng.range_i64(0, 3)))
        .collect();
    IndexingMap::new(dims, ranges, vec![], results, vec![]).ok()
}

#[test]
fn compose_equals_pointwise_composition() {
    fn prop(seed: u64) -> TestResult {
        let mut rng = Rng::new(seed);
        let a = random_map(
            &mut rng,
            &MapConfig {
                max_runtimes: 0,
                ..MapConfig::default()
            },
        );
        if a.is_known_empty() || a.results().is_empty() {
            return TestResult::discard();
        }
        let Some(b) = follower(&mut rng, &a) else {
            return TestResult::discard();
        };
        let c = a.compose(&b).expect("arities fit");
        let simplified = c.simplified();
        // Every point of C's box: in C's domain iff in A's domain and A's image in B's domain.
        let na = a.ranges().len();
        // The box of C's variables, built from A and B (C itself may be KNOWN EMPTY).
        let ranges: Vec<Interval> = a.ranges().iter().chain(b.ranges()).copied().collect();
        let space = IndexingMap::new(a.dims().to_vec(), ranges, vec![], vec![], vec![]).unwrap();
        let Ok(points) = domain_points(&space, 50_000) else {
            return TestResult::discard();
        };
        for p in points {
            let pa = Point {
                dims: &p.dims,
                ranges: &p.ranges[..na],
                runtimes: &[],
            };
            let expected = match a.contains_point(&pa) {
                Ok(true) => match a.evaluate(&pa) {
                    Ok(y) => {
                        let pb = Point {
                            dims: &y,
                            ranges: &p.ranges[na..],
                            runtimes: &[],
                        };
                        match b.contains_point(&pb) {
                            Ok(true) => b.evaluate(&pb).ok(),
                            _ => None,
                        }
                    }
                    Err(_) => return TestResult::discard(),
                },
                _ => None,
            };
            for (name, m) in [("composed", &c), ("simplified", &simplified)] {
                let got = if m.is_known_empty() {
                    None
                } else {
                    match m.contains_point(&p.as_point()) {
                        Ok(true) => m.evaluate(&p.as_point()).ok(),
                        _ => None,
                    }
                };
                if got != expected {
                    return TestResult::error(format!(
                        "seed {seed} at {p:?}: {name} gives {got:?}, expected {expected:?}\n  A: {a}\n  B: {b}\n  C: {m}"
                    ));
                }
            }
        }
        TestResult::passed()
    }
    QuickCheck::new()
        .tests(300)
        .max_tests(3000)
        .quickcheck(prop as fn(u64) -> TestResult);
}
