//! z3 proofs: statements with exact floor semantics, instantiation of symbolic divisors, and
//! map equality.
#![cfg(feature = "z3")]

use affine::equiv::{maps_equivalent_by_enumeration, Equivalence};
use affine::formula::{Cmp, Goal, Relation, Statement};
use affine::prove::{check_counterexample, prove, prove_instantiated, prove_maps_equal, Proof};
use affine::{Expr, IndexingMap, Interval, Var};

const T: u32 = 10_000;

fn c(v: i64) -> Expr {
    Expr::constant(v)
}

fn rel(lhs: Expr, cmp: Cmp, rhs: Expr) -> Relation {
    Relation::new(lhs, cmp, rhs)
}

fn equal(assumptions: Vec<Relation>, a: Expr, b: Expr) -> Statement {
    Statement {
        assumptions,
        goal: Goal::Equal(a, b),
    }
}

/// Asserts a counterexample and that evaluation confirms it.
fn assert_refuted(s: &Statement, p: Proof) -> Vec<(Var, i64)> {
    match p {
        Proof::Counterexample(values) => {
            assert_eq!(
                check_counterexample(s, &values),
                Some(false),
                "counterexample {values:?} not confirmed by evaluation"
            );
            values
        }
        other => panic!("expected a counterexample, got {other}"),
    }
}

#[test]
fn proves_linear_floor_identities() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    // (8*q + r) floordiv 8 == q + r floordiv 8, for every q and r.
    let s = equal(
        vec![],
        (d0 * 8 + d1).floor_div(c(8)),
        d0 + d1.floor_div(c(8)),
    );
    assert_eq!(prove(&s, T), Proof::Proven);
    // x mod 8 == x when 0 <= x < 8.
    let s = equal(
        vec![rel(d0, Cmp::Ge, c(0)), rel(d0, Cmp::Le, c(7))],
        d0.modulo(c(8)),
        d0,
    );
    assert_eq!(prove(&s, T), Proof::Proven);
    // ceildiv as a floordiv.
    let s = equal(vec![], d0.ceil_div(c(5)), (d0 + 4).floor_div(c(5)));
    assert_eq!(prove(&s, T), Proof::Proven);
    // Floor semantics with a negative divisor: x mod -3 is in (-3, 0].
    let s = Statement {
        assumptions: vec![],
        goal: Goal::Equivalent(
            vec![rel(d0.modulo(c(-3)), Cmp::Le, c(0))],
            vec![rel(d0.modulo(c(-3)), Cmp::Gt, c(-3))],
        ),
    };
    assert_eq!(prove(&s, T), Proof::Proven);
    // and (x floordiv -2) * -2 + x mod -2 == x.
    let s = equal(vec![], d0.floor_div(c(-2)) * -2 + d0.modulo(c(-2)), d0);
    assert_eq!(prove(&s, T), Proof::Proven);
    // A negated quotient folds: -((-11 d0 - d1 + 109) floordiv 11) + 9 == d0 on the domain
    // (d1 <= 10 keeps the numerator within one period of 11 above -11 d0 + 99).
    let s = equal(
        vec![
            rel(d0, Cmp::Ge, c(0)),
            rel(d0, Cmp::Le, c(9)),
            rel(d1, Cmp::Ge, c(0)),
            rel(d1, Cmp::Le, c(10)),
        ],
        -((d0 * -11 - d1 + 109).floor_div(c(11))) + 9,
        d0,
    );
    assert_eq!(prove(&s, T), Proof::Proven);
    // min/max
    let s = equal(vec![], d0.min(d1) + d0.max(d1), d0 + d1);
    assert_eq!(prove(&s, T), Proof::Proven);
}

#[test]
fn refutes_false_statements_with_checked_counterexamples() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let s = equal(
        vec![],
        (d0 + d1).floor_div(c(8)),
        d0.floor_div(c(8)) + d1.floor_div(c(8)),
    );
    let values = assert_refuted(&s, prove(&s, T));
    assert_eq!(
        values.iter().map(|v| v.0).collect::<Vec<_>>(),
        vec![Var::dim(0), Var::dim(1)]
    );
    // Euclidean and floor mod differ for negative divisors: x mod -3 >= 0 is false.
    let s = Statement {
        assumptions: vec![],
        goal: Goal::Equivalent(vec![rel(d0.modulo(c(-3)), Cmp::Ge, c(0))], vec![]),
    };
    assert_refuted(&s, prove(&s, T));
    // x mod 8 == x needs x < 8.
    let s = equal(vec![rel(d0, Cmp::Ge, c(0))], d0.modulo(c(8)), d0);
    let values = assert_refuted(&s, prove(&s, T));
    assert!(values[0].1 >= 8);
    // ceildiv is not floordiv.
    let s = equal(vec![], d0.ceil_div(c(4)), d0.floor_div(c(4)));
    assert_refuted(&s, prove(&s, T));
}

#[test]
fn symbolic_divisor_split_rule() {
    // c >= 1 => (c*q + r) floordiv c == q + r floordiv c, with c = s0, q = d0, r = d1.
    let (q, r, k) = (Expr::dim(0), Expr::dim(1), Expr::range(0));
    let s = equal(
        vec![rel(k, Cmp::Ge, c(1))],
        (k * q + r).floor_div(k),
        q + r.floor_div(k),
    );
    let direct = prove(&s, T);
    println!("direct: {direct}");
    assert!(!matches!(direct, Proof::Counterexample(_)), "{direct}");
    let inst = prove_instantiated(&s, &[(Var::range(0), -2..=16)], T);
    assert_eq!(inst, Proof::Proven);
    // The mod form.
    let s = equal(
        vec![rel(k, Cmp::Ge, c(1))],
        (k * q + r).modulo(k),
        r.modulo(k),
    );
    assert_eq!(
        prove_instantiated(&s, &[(Var::range(0), 1..=16)], T),
        Proof::Proven
    );
    // (x mod (a*b)) floordiv b == (x floordiv b) mod a: z3 times out on the symbolic form, and
    // its default arithmetic solver on some instances (the portfolio's legacy solver does not).
    let (a, b) = (Expr::range(0), Expr::range(1));
    let s = equal(
        vec![rel(a, Cmp::Ge, c(1)), rel(b, Cmp::Ge, c(1))],
        q.modulo(a * b).floor_div(b),
        q.floor_div(b).modulo(a),
    );
    assert_eq!(
        prove_instantiated(&s, &[(Var::range(0), 1..=8), (Var::range(1), 1..=8)], T),
        Proof::Proven
    );
}

#[test]
fn division_by_zero_is_outside_the_obligation() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    // (x floordiv y) * y + x mod y == x: only meaningful for y != 0, which is assumed.
    let s = equal(vec![], d0.floor_div(d1) * d1 + d0.modulo(d1), d0);
    let direct = prove(&s, T);
    println!("direct: {direct}");
    assert!(!matches!(direct, Proof::Counterexample(_)), "{direct}");
    assert_eq!(
        prove_instantiated(&s, &[(Var::dim(1), -6..=6)], T),
        Proof::Proven
    );
}

#[test]
fn instantiation_reports_the_failing_instance() {
    let (d0, s0) = (Expr::dim(0), Expr::range(0));
    // x mod k == x for 0 <= x < 5 holds for k >= 5 only.
    let s = equal(
        vec![rel(d0, Cmp::Ge, c(0)), rel(d0, Cmp::Lt, c(5))],
        d0.modulo(s0),
        d0,
    );
    let p = prove_instantiated(&s, &[(Var::range(0), 1..=10)], T);
    let values = assert_refuted(&s, p);
    assert_eq!(values.len(), 2);
    assert_eq!(values[1].0, Var::range(0));
    assert!(values[1].1 < 5, "{values:?}");
    assert_eq!(
        prove_instantiated(&s, &[(Var::range(0), 5..=12)], T),
        Proof::Proven
    );
    assert!(matches!(
        prove_instantiated(&s, &[(Var::range(0), 0..=1_000_000)], T),
        Proof::Unknown(_)
    ));
}

fn map2(b0: (i64, i64), b1: (i64, i64), results: Vec<Expr>) -> IndexingMap {
    IndexingMap::new(
        vec![Interval::new(b0.0, b0.1), Interval::new(b1.0, b1.1)],
        vec![],
        vec![],
        results,
        vec![],
    )
    .unwrap()
}

#[test]
fn maps_equal_and_different() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let a = map2(
        (0, 6),
        (0, 14),
        vec![d0 + d1.floor_div(c(16)), d1.modulo(c(16))],
    );
    let id = map2((0, 6), (0, 14), vec![d0, d1]);
    assert_eq!(prove_maps_equal(&a, &id, T), Equivalence::Equal);

    let a = map2(
        (0, 9),
        (0, 10),
        vec![-((d0 * -11 - d1 + 109).floor_div(c(11))) + 9],
    );
    let b = map2((0, 9), (0, 10), vec![d0]);
    assert_eq!(prove_maps_equal(&a, &b, T), Equivalence::Equal);

    // Wider d1: the floordiv no longer vanishes. The counterexample is evaluated on both sides.
    let a = map2(
        (0, 6),
        (0, 20),
        vec![d0 + d1.floor_div(c(16)), d1.modulo(c(16))],
    );
    let b = map2((0, 6), (0, 20), vec![d0, d1]);
    let r = prove_maps_equal(&a, &b, T);
    let cex = r.counterexample().expect("different").clone();
    assert!(cex.point.dims[1] >= 16, "{r}");
    let p = cex.point.as_point();
    assert_eq!(cex.lhs, Some(a.evaluate(&p).unwrap()));
    assert_eq!(cex.rhs, Some(b.evaluate(&p).unwrap()));
    assert_ne!(cex.lhs, cex.rhs);
    assert!(r.to_string().starts_with("different at d0 = "), "{r}");
    assert!(maps_equivalent_by_enumeration(&a, &b, 1000).is_different());
}

#[test]
fn egraph_simplifications_of_the_seeds_are_proven_equal() {
    use affine::egraph::{simplify_map, Limits};
    let (d0, d1, d2) = (Expr::dim(0), Expr::dim(1), Expr::dim(2));
    let x = d0 * 100 + d1 * 10 + d2;
    let y = d0 * 16 + d1 * 4 + d2;
    let boxed = |results: Vec<Expr>| {
        IndexingMap::new(
            vec![Interval::new(0, 9); 3],
            vec![],
            vec![],
            results,
            vec![],
        )
        .unwrap()
    };
    let seeds = [
        map2(
            (0, 6),
            (0, 14),
            vec![d0 + d1.floor_div(c(16)), d1.modulo(c(16))],
        ),
        boxed(vec![
            x.floor_div(c(100)),
            x.modulo(c(100)).floor_div(c(10)),
            d2.modulo(c(10)),
        ]),
        boxed(vec![y.floor_div(c(8)), y.modulo(c(8))]),
        map2(
            (0, 9),
            (0, 10),
            vec![-((d0 * -11 - d1 + 109).floor_div(c(11))) + 9],
        ),
    ];
    for m in &seeds {
        let s = simplify_map(m, &Limits::default());
        assert_ne!(&s, m, "the e-graph simplifies {m}");
        assert_eq!(prove_maps_equal(m, &s, T), Equivalence::Equal, "{m} vs {s}");
    }
}

#[test]
fn maps_with_different_domains() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let a = map2((0, 7), (0, 3), vec![d0, d1]);
    let mut b = a.clone();
    b.add_constraint(d0 + d1, Interval::new(0, 9));
    let r = prove_maps_equal(&a, &b, T);
    let cex = r.counterexample().expect("different");
    assert!(cex.point.dims[0] + cex.point.dims[1] > 9);
    assert!(cex.lhs.is_some() && cex.rhs.is_none(), "{r}");
    // A constraint that every point satisfies changes nothing.
    let mut b = a.clone();
    b.add_constraint(d0 + d1, Interval::new(0, 10));
    assert_eq!(prove_maps_equal(&a, &b, T), Equivalence::Equal);
    // An unsatisfiable constraint makes an empty map: equal to KNOWN EMPTY.
    let mut e = a.clone();
    e.add_constraint(d0 * 2 + 1, Interval::new(4, 4));
    assert!(!e.is_known_empty());
    assert_eq!(
        prove_maps_equal(&e, &IndexingMap::known_empty(), T),
        Equivalence::Equal
    );
    assert_eq!(
        maps_equivalent_by_enumeration(&e, &IndexingMap::known_empty(), 1000),
        Equivalence::Equal
    );
    let r = prove_maps_equal(&IndexingMap::known_empty(), &a, T);
    let cex = r.counterexample().expect("different");
    assert!(cex.lhs.is_none() && cex.rhs.is_some(), "{r}");
    assert!(prove_maps_equal(&a, &IndexingMap::undefined(), T).is_unknown());
    // Different numbers of dimensions, both non-empty: not comparable.
    let one = IndexingMap::identity(&[4]);
    let r = prove_maps_equal(&one, &a, T);
    assert!(r.to_string().starts_with("unknown: not comparable"), "{r}");
}

#[test]
fn maps_with_a_reachable_division_by_zero_are_unknown() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let a = map2((0, 7), (0, 3), vec![d0.floor_div(d1)]);
    let b = map2((0, 7), (0, 3), vec![d0.floor_div(d1)]);
    let r = prove_maps_equal(&a, &b, T);
    assert!(
        r.to_string().starts_with("unknown: division by zero at"),
        "{r}"
    );
    // Excluded from the domain: fine.
    let a = map2((0, 7), (1, 3), vec![d0.floor_div(d1) * d1 + d0.modulo(d1)]);
    let b = map2((0, 7), (1, 3), vec![d0]);
    let r = prove_maps_equal(&a, &b, T);
    assert!(r.is_equal() || r.is_unknown(), "{r}");
    println!("symbolic divisor map: {r}");
    assert!(maps_equivalent_by_enumeration(&a, &b, 1000).is_equal());
}

#[test]
fn agrees_with_enumeration_on_small_maps() {
    let (d0, d1, s0) = (Expr::dim(0), Expr::dim(1), Expr::range(0));
    let shapes = [
        (d0 * 4 + d1).floor_div(c(4)),
        (d0 * 4 + d1).modulo(c(4)),
        (d0 + s0).ceil_div(c(3)),
        d0.min(d1 + 2).max(s0),
        (d1 - d0 * 2).modulo(c(-3)),
        (d1 - d0 * 2).floor_div(c(-3)),
        d0,
        d1,
        s0,
    ];
    for &x in &shapes {
        for &y in &shapes {
            let m = |e: Expr| {
                IndexingMap::new(
                    vec![Interval::new(0, 5), Interval::new(0, 3)],
                    vec![Interval::new(0, 2)],
                    vec![],
                    vec![e],
                    vec![],
                )
                .unwrap()
            };
            let (a, b) = (m(x), m(y));
            let z = prove_maps_equal(&a, &b, T);
            let e = maps_equivalent_by_enumeration(&a, &b, 10_000);
            assert_eq!(
                z.is_equal(),
                e.is_equal(),
                "{x} vs {y}: z3 {z}, enumeration {e}"
            );
            assert_eq!(
                z.is_different(),
                e.is_different(),
                "{x} vs {y}: z3 {z}, enumeration {e}"
            );
        }
    }
}

#[test]
fn agrees_with_enumeration_on_random_maps() {
    use affine::egraph::{simplify_map, Limits};
    use affine::gen::{random_map, MapConfig, Rng};
    let cfg = MapConfig::default();
    let mut decided = 0;
    for seed in 0..150 {
        let a = random_map(&mut Rng::new(seed), &cfg);
        if a.is_known_empty() {
            continue;
        }
        let s = simplify_map(&a, &Limits::default());
        // A variant that differs at some points (or not: both answers must agree).
        let mut v = a.clone();
        let mut results = a.results().to_vec();
        if let Some(first) = results.first_mut() {
            *first = first.modulo(c(3));
        }
        v.set_results(results).unwrap();
        for b in [&s, &v] {
            let z = prove_maps_equal(&a, b, T);
            let e = maps_equivalent_by_enumeration(&a, b, 1 << 20);
            match (&z, &e) {
                (Equivalence::Equal, Equivalence::Different(_))
                | (Equivalence::Different(_), Equivalence::Equal) => {
                    panic!("seed {seed}: z3 {z}, enumeration {e}\n  a: {a}\n  b: {b}")
                }
                (Equivalence::Unknown(_), _) | (_, Equivalence::Unknown(_)) => {}
                _ => decided += 1,
            }
        }
    }
    assert!(decided > 200, "only {decided} pairs decided by both");
}
