//! Equality saturation: the simplifier's reference examples (a division within one period,
//! a delinearization, a partial division, a negated quotient), equivalence checks, and
//! soundness on random expressions against brute-force evaluation.

use affine::egraph::{self, Limits};
use affine::{Expr, IndexingMap, Interval, Point, Var, VarKind};
use quickcheck::{Arbitrary, Gen, QuickCheck, TestResult};

fn c(v: i64) -> Expr {
    Expr::constant(v)
}

fn map(dims: &[(i64, i64)], results: Vec<Expr>) -> IndexingMap {
    IndexingMap::new(
        dims.iter().map(|&(lo, hi)| Interval::new(lo, hi)).collect(),
        vec![],
        vec![],
        results,
        vec![],
    )
    .unwrap()
}

fn simplified(m: &IndexingMap) -> String {
    egraph::simplify_map(m, &Limits::default()).to_string()
}

#[test]
fn seed_1_reduces_to_identity() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let m = map(
        &[(0, 6), (0, 14)],
        vec![d0 + d1.floor_div(c(16)), d1.modulo(c(16))],
    );
    assert_eq!(
        simplified(&m),
        "(d0, d1) -> (d0, d1), domain: d0 in [0, 6], d1 in [0, 14]"
    );
}

#[test]
fn seed_2_reduces_to_identity() {
    let (d0, d1, d2) = (Expr::dim(0), Expr::dim(1), Expr::dim(2));
    let x = d0 * 100 + d1 * 10 + d2;
    let m = map(
        &[(0, 9); 3],
        vec![
            x.floor_div(c(100)),
            x.modulo(c(100)).floor_div(c(10)),
            d2.modulo(c(10)),
        ],
    );
    assert_eq!(
        simplified(&m),
        "(d0, d1, d2) -> (d0, d1, d2), domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]"
    );
}

#[test]
fn seed_3_splits_the_multiple_out_of_the_division() {
    let (d0, d1, d2) = (Expr::dim(0), Expr::dim(1), Expr::dim(2));
    let y = d0 * 16 + d1 * 4 + d2;
    let m = map(&[(0, 9); 3], vec![y.floor_div(c(8)), y.modulo(c(8))]);
    assert_eq!(
        simplified(&m),
        "(d0, d1, d2) -> (d0 * 2 + (d1 * 4 + d2) floordiv 8, (d1 * 4 + d2) mod 8), \
         domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]"
    );
}

#[test]
fn seed_4_negated_quotient_reduces_to_d0() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let z = d0 * -11 - d1 + 109;
    let m = map(&[(0, 9), (0, 10)], vec![-(z.floor_div(c(11))) + 9]);
    assert_eq!(
        simplified(&m),
        "(d0, d1) -> (d0), domain: d0 in [0, 9], d1 in [0, 10]"
    );
}

#[test]
fn special_maps_are_returned_unchanged() {
    let l = Limits::default();
    assert!(egraph::simplify_map(&IndexingMap::known_empty(), &l).is_known_empty());
    assert!(egraph::simplify_map(&IndexingMap::undefined(), &l).is_undefined());
}

fn bounds_d0_d1(v: Var) -> Interval {
    match (v.kind, v.index) {
        (VarKind::Dim, 0) => Interval::new(0, 15),
        (VarKind::Dim, 1) => Interval::new(0, 7),
        _ => Interval::FULL,
    }
}

#[test]
fn proves_equalities_that_need_ranges() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let l = Limits::default();
    let eq = |a, b| egraph::equivalent(a, b, &bounds_d0_d1, &l);
    assert_eq!(eq((d0 * 8 + d1).floor_div(c(8)), d0), Some(true));
    assert_eq!(eq((d0 * 8 + d1).modulo(c(8)), d1), Some(true));
    assert_eq!(
        eq(d0.floor_div(c(4)) * 4 + d0.modulo(c(4)), d0),
        Some(true),
        "div-mod recombination"
    );
    assert_eq!(
        eq(d0.floor_div(c(2)).floor_div(c(4)), d0.floor_div(c(8))),
        Some(true),
        "nested floordiv"
    );
    assert_eq!(eq(d1.min(c(9)), d1), Some(true), "min decided by ranges");
    assert_eq!(eq(d1.max(c(-1)), d1), Some(true), "max decided by ranges");
    assert_eq!(eq(d0 + d1, d1 + d0), Some(true), "commutativity");
    // Equal on the box, but not by these rules (it needs a case split on d1 == 0).
    assert_ne!(eq(d1.ceil_div(c(8)), d1.min(c(1))), Some(false));
    // Two different constants on the box: provably different.
    assert_eq!(eq(d1.floor_div(c(8)), c(1)), Some(false));
    // Different but not constant: saturation cannot tell.
    assert_eq!(eq(d0, d1), None);
    // Without the range condition the rule does not fire.
    let wide = |_: Var| Interval::new(0, 100);
    assert_eq!(
        egraph::equivalent((d0 * 8 + d1).floor_div(c(8)), d0, &wide, &l),
        None
    );
}

#[test]
fn empty_bounds_decide_nothing() {
    let d0 = Expr::dim(0);
    let empty = |_: Var| Interval::EMPTY;
    let l = Limits::default();
    assert_eq!(egraph::equivalent(d0, d0 + 1, &empty, &l), None);
    let e = d0.modulo(c(4));
    assert_eq!(egraph::simplify(e, &empty, &l), e);
}

#[test]
fn rec_expr_round_trip() {
    let (d0, s0, rt0) = (Expr::dim(0), Expr::range(0), Expr::runtime(0));
    let e = (d0 * 8 + s0)
        .floor_div(c(3))
        .min(rt0.modulo(c(-2)))
        .max(d0.ceil_div(s0));
    let rec = egraph::to_rec_expr(e);
    assert_eq!(
        rec.to_string(),
        "(max (min (floordiv (+ (* d0 8) s0) 3) (mod rt0 -2)) (ceildiv d0 s0))"
    );
    assert_eq!(egraph::from_rec_expr(&rec), e);
    let parsed: egg::RecExpr<egraph::AffineLang> = rec.to_string().parse().unwrap();
    assert_eq!(egraph::from_rec_expr(&parsed), e);
}

// ---------------------------------------------------------------------------------------------
// Soundness on random expressions.

const BOX: [(i64, i64); 3] = [(0, 7), (-3, 4), (0, 2)];

fn box_bounds(v: Var) -> Interval {
    match v.kind {
        VarKind::Dim if v.index < 2 => {
            Interval::new(BOX[v.index as usize].0, BOX[v.index as usize].1)
        }
        VarKind::Range if v.index == 0 => Interval::new(BOX[2].0, BOX[2].1),
        _ => Interval::FULL,
    }
}

/// Values of `e` at every point of the box, in order; `None` where evaluation fails.
fn values(e: Expr) -> Vec<Option<i64>> {
    let mut out = Vec::new();
    for a in BOX[0].0..=BOX[0].1 {
        for b in BOX[1].0..=BOX[1].1 {
            for s in BOX[2].0..=BOX[2].1 {
                let p = Point {
                    dims: &[a, b],
                    ranges: &[s],
                    runtimes: &[],
                };
                out.push(e.eval(&p).ok());
            }
        }
    }
    out
}

#[derive(Clone, Debug)]
struct Small(Expr);

fn pick<T: Copy>(g: &mut Gen, items: &[T]) -> T {
    *g.choose(items).unwrap()
}

fn gen_expr(g: &mut Gen, depth: u32) -> Expr {
    if depth == 0 || pick(g, &[0, 1, 2]) == 0 {
        return match pick(g, &[0, 1, 2, 3]) {
            0 => Expr::dim(0),
            1 => Expr::dim(1),
            2 => Expr::range(0),
            _ => c(pick(g, &[-3, -1, 0, 1, 2, 3, 4, 5, 8, 16])),
        };
    }
    let a = gen_expr(g, depth - 1);
    match pick(g, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) {
        0 | 1 => a + gen_expr(g, depth - 1),
        2 => a * c(pick(g, &[-2, -1, 2, 3, 4, 8])),
        3 => a * gen_expr(g, depth - 1),
        4 => a.floor_div(c(pick(g, &[-3, 2, 3, 4, 8, 16]))),
        5 => a.modulo(c(pick(g, &[-4, 2, 3, 4, 8, 16]))),
        6 => a.ceil_div(c(pick(g, &[-2, 2, 3, 4, 8]))),
        7 => a.min(gen_expr(g, depth - 1)),
        8 => a.max(gen_expr(g, depth - 1)),
        _ => a.floor_div(gen_expr(g, depth - 1)),
    }
}

impl Arbitrary for Small {
    fn arbitrary(g: &mut Gen) -> Small {
        Small(gen_expr(g, 5))
    }
    fn shrink(&self) -> Box<dyn Iterator<Item = Small>> {
        let mut v = Vec::new();
        if let Some((a, b)) = self.0.children() {
            v.push(Small(a));
            v.push(Small(b));
        }
        Box::new(v.into_iter())
    }
}

fn small_limits() -> Limits {
    Limits {
        iterations: 8,
        nodes: 5_000,
        ..Limits::default()
    }
}

#[test]
fn simplification_preserves_values_on_the_box() {
    fn prop(e: Small) -> TestResult {
        let before = values(e.0);
        let s = egraph::simplify(e.0, &box_bounds, &small_limits());
        let after = values(s);
        for (i, (x, y)) in before.iter().zip(&after).enumerate() {
            if let Some(x) = x {
                if Some(*x) != *y {
                    return TestResult::error(format!(
                        "{} simplified to {s}: point #{i} gives {x} vs {y:?}",
                        e.0
                    ));
                }
            }
        }
        if egraph::extraction_cost(s) > egraph::extraction_cost(e.0) {
            return TestResult::error(format!("{} got more expensive: {s}", e.0));
        }
        TestResult::passed()
    }
    QuickCheck::new()
        .tests(1000)
        .quickcheck(prop as fn(Small) -> TestResult);
}

#[test]
fn equivalence_answers_are_sound() {
    fn prop(a: Small, b: Small) -> TestResult {
        let (va, vb) = (values(a.0), values(b.0));
        let answer = egraph::equivalent(a.0, b.0, &box_bounds, &small_limits());
        let both: Vec<(i64, i64)> = va
            .iter()
            .zip(&vb)
            .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
            .collect();
        match answer {
            Some(true) if both.iter().any(|(x, y)| x != y) => {
                TestResult::error(format!("{} == {} claimed", a.0, b.0))
            }
            Some(false) if both.iter().any(|(x, y)| x == y) => {
                TestResult::error(format!("{} != {} claimed", a.0, b.0))
            }
            _ => TestResult::passed(),
        }
    }
    QuickCheck::new()
        .tests(200)
        .quickcheck(prop as fn(Small, Small) -> TestResult);
    // Pairs that are equal by construction must not be called different.
    fn prop_same(a: Small) -> TestResult {
        let s = egraph::simplify(a.0, &box_bounds, &small_limits());
        if egraph::equivalent(a.0, s, &box_bounds, &small_limits()) == Some(false) {
            return TestResult::error(format!(
                "{} and its simplification {s} called different",
                a.0
            ));
        }
        TestResult::passed()
    }
    QuickCheck::new()
        .tests(200)
        .quickcheck(prop_same as fn(Small) -> TestResult);
}

#[test]
fn larger_expressions_stay_within_the_limits() {
    let d: Vec<Expr> = (0..6).map(Expr::dim).collect();
    let bounds = |_: Var| Interval::new(0, 9);
    let sum = d
        .iter()
        .enumerate()
        .fold(c(0), |acc, (i, &x)| acc + x * (1i64 << (2 * i)));
    let cases = [
        sum,
        sum.floor_div(c(16)) * 16 + sum.modulo(c(16)),
        sum.modulo(c(256)).floor_div(c(4)) + sum.floor_div(c(64)).modulo(c(3)),
        sum.min(d[0] + d[1]).max(sum.ceil_div(c(7))),
    ];
    let limits = Limits {
        iterations: 12,
        nodes: 5_000,
        ..Limits::default()
    };
    for e in cases {
        let (s, report) = egraph::simplify_all(&[e], &bounds, &limits);
        assert!(!report.contradiction);
        assert!(egraph::extraction_cost(s[0]) <= egraph::extraction_cost(e));
        // Spot-check values on a grid of the box.
        for mask in 0..64u32 {
            let dims: Vec<i64> = (0..6)
                .map(|i| if mask & (1 << i) != 0 { 9 } else { i })
                .collect();
            let p = Point {
                dims: &dims,
                ..Point::default()
            };
            assert_eq!(e.eval(&p), s[0].eval(&p), "{e} => {}", s[0]);
        }
    }
    // div-mod recombination of the whole sum is found.
    let (s, _) = egraph::simplify_all(&[cases[1]], &bounds, &limits);
    assert_eq!(s[0], sum);
}

#[test]
fn simplified_random_maps_are_equal_by_enumeration() {
    use affine::equiv::{maps_equivalent_by_enumeration, Equivalence};
    use affine::gen::{random_map, MapConfig, Rng};
    let cfg = MapConfig::default();
    let (mut changed, mut equal) = (0, 0);
    for seed in 0..400 {
        let m = random_map(&mut Rng::new(seed), &cfg);
        let s = egraph::simplify_map(&m, &small_limits());
        changed += usize::from(s != m);
        match maps_equivalent_by_enumeration(&m, &s, 1 << 20) {
            Equivalence::Different(cex) => panic!("seed {seed}: {m}\n  => {s}\n  {cex}"),
            Equivalence::Equal => equal += 1,
            Equivalence::Unknown(_) => {}
        }
    }
    assert!(changed > 100, "only {changed} of 400 maps changed");
    assert!(equal > 300, "only {equal} of 400 maps decided equal");
}
