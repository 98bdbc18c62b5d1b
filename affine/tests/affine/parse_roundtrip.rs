//! Printing then parsing is the identity: on random expressions and maps (quickcheck, seeded
//! into the deterministic generators), on the simplifier's reference examples and the per-op
//! maps of an indexing analysis, and across XLA's layouts and spellings.

use affine::gen::{random_expr, random_map, realistic_maps, ExprConfig, MapConfig, Rng};
use affine::parse::{parse_expr, parse_map, Names};
use affine::{Expr, IndexingMap, Interval, Var};
use quickcheck::QuickCheck;

fn c(v: i64) -> Expr {
    Expr::constant(v)
}

fn map(text: &str) -> IndexingMap {
    parse_map(text).unwrap_or_else(|e| panic!("{text}\n{e}"))
}

fn boxed(bounds: &[(i64, i64)], results: Vec<Expr>) -> IndexingMap {
    IndexingMap::new(
        bounds.iter().map(|&(a, b)| Interval::new(a, b)).collect(),
        vec![],
        vec![],
        results,
        vec![],
    )
    .unwrap()
}

/// Print → parse → equal, and printing the parsed map gives the same text.
fn map_round_trips(m: &IndexingMap) -> bool {
    let text = m.to_string();
    match parse_map(&text) {
        Ok(back) if back == *m && back.to_string() == text => true,
        Ok(back) => {
            eprintln!("map:    {text}\nparsed: {back}\n{m:?}\n{back:?}");
            false
        }
        Err(e) => {
            eprintln!("{}", e.render(&text, Some("printed map")));
            false
        }
    }
}

fn expr_round_trips(e: Expr) -> bool {
    let text = e.to_string();
    match parse_expr(&text, &Names::canonical()) {
        Ok(back) if back == e => true,
        Ok(back) => {
            eprintln!("expr:   {text}\nparsed: {back}");
            false
        }
        Err(err) => {
            eprintln!("{err}");
            false
        }
    }
}

/// Expression configurations: the default, deep ones, and ones whose constants overflow when
/// folded (the builders then keep the nodes unfolded, and the text must still read back).
fn expr_configs() -> Vec<ExprConfig> {
    vec![
        ExprConfig::default(),
        ExprConfig {
            dims: 3,
            ranges: 2,
            runtimes: 2,
            max_depth: 7,
            max_const: 100,
            ..ExprConfig::default()
        },
        ExprConfig {
            max_depth: 5,
            max_const: i64::MAX,
            ..ExprConfig::default()
        },
        ExprConfig {
            dims: 0,
            ranges: 0,
            runtimes: 0,
            max_depth: 5,
            max_const: i64::MAX,
            ..ExprConfig::default()
        },
    ]
}

#[test]
fn random_expressions_round_trip() {
    fn prop(seed: u64) -> bool {
        let mut rng = Rng::new(seed);
        expr_configs()
            .iter()
            .all(|cfg| (0..20).all(|_| expr_round_trips(random_expr(&mut rng, cfg))))
    }
    QuickCheck::new()
        .tests(300)
        .quickcheck(prop as fn(u64) -> bool);
}

#[test]
fn random_maps_round_trip() {
    fn prop(seed: u64) -> bool {
        let mut rng = Rng::new(seed);
        let wide = MapConfig {
            max_dims: 4,
            max_ranges: 3,
            max_runtimes: 2,
            max_constraints: 4,
            expr: ExprConfig {
                max_depth: 5,
                ..ExprConfig::default()
            },
            ..MapConfig::default()
        };
        [MapConfig::default(), wide]
            .iter()
            .all(|cfg| (0..10).all(|_| map_round_trips(&random_map(&mut rng, cfg))))
    }
    QuickCheck::new()
        .tests(200)
        .quickcheck(prop as fn(u64) -> bool);
}

#[test]
fn realistic_maps_round_trip() {
    fn prop(seed: u64) -> bool {
        realistic_maps(seed, 5).iter().all(map_round_trips)
    }
    QuickCheck::new()
        .tests(100)
        .quickcheck(prop as fn(u64) -> bool);
}

#[test]
fn simplified_maps_round_trip() {
    // The simplifier's output is what the CLI prints, so it must read back too.
    for m in realistic_maps(17, 40) {
        assert!(map_round_trips(&m.simplified()), "{m}");
    }
    let mut rng = Rng::new(99);
    for _ in 0..200 {
        let m = random_map(&mut rng, &MapConfig::default());
        assert!(map_round_trips(&m.simplified()), "{m}");
    }
}

#[test]
fn the_example_of_the_brief() {
    let text = "(d0, d1)[s0]{rt0} -> (d0 floordiv 8, d1 + s0), domain: d0 in [0, 31], \
                d1 in [0, 7], s0 in [0, 3], rt0 in [0, 9], d1 + s0 in [0, 9]";
    let (d0, d1, s0) = (Expr::dim(0), Expr::dim(1), Expr::range(0));
    let built = IndexingMap::new(
        vec![Interval::new(0, 31), Interval::new(0, 7)],
        vec![Interval::new(0, 3)],
        vec![Interval::new(0, 9)],
        vec![d0.floor_div(c(8)), d1 + s0],
        vec![(d1 + s0, Interval::new(0, 9))],
    )
    .unwrap();
    assert_eq!(map(text), built);
    assert_eq!(built.to_string(), text);
}

#[test]
fn seed_simplifier_examples_parse() {
    let (d0, d1, d2) = (Expr::dim(0), Expr::dim(1), Expr::dim(2));
    // Example 1: a floordiv and a mod that never leave one period of 16.
    assert_eq!(
        map("(d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]"),
        boxed(
            &[(0, 6), (0, 14)],
            vec![d0 + d1.floor_div(c(16)), d1.modulo(c(16))]
        )
    );
    // Example 2, a delinearization, with coefficients written before variables without
    // `*` (`100 d0` is `100 * d0`).
    let lin = d0 * 100 + d1 * 10 + d2;
    assert_eq!(
        map("(d0, d1, d2) -> ((100 d0 + 10 d1 + d2) floordiv 100, \
             ((100 d0 + 10 d1 + d2) mod 100) floordiv 10, d2 mod 10), \
             domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]"),
        boxed(
            &[(0, 9); 3],
            vec![
                lin.floor_div(c(100)),
                lin.modulo(c(100)).floor_div(c(10)),
                d2.modulo(c(10))
            ]
        )
    );
    // Example 3, a partial division, and its expected simplification, in XLA's notation.
    let lin = d0 * 16 + d1 * 4 + d2;
    assert_eq!(
        map(
            "(d0, d1, d2) -> ((d0 * 16 + d1 * 4 + d2) floordiv 8, (d0 * 16 + d1 * 4 + d2) mod 8), \
             domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]"
        ),
        boxed(&[(0, 9); 3], vec![lin.floor_div(c(8)), lin.modulo(c(8))])
    );
    assert_eq!(
        map(
            "(d0, d1, d2) -> (2 d0 + (4 d1 + d2) floordiv 8, (4 d1 + d2) mod 8), \
             domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]"
        ),
        boxed(
            &[(0, 9); 3],
            vec![
                d0 * 2 + (d1 * 4 + d2).floor_div(c(8)),
                (d1 * 4 + d2).modulo(c(8))
            ]
        )
    );
    // Example 4: the negation applies to the quotient.
    let inner = d0 * -11 - d1 + 109;
    let m = map(
        "(d0, d1) -> (-((-11 d0 - d1 + 109) floordiv 11) + 9), domain: d0 in [0, 9], d1 in [0, 10]",
    );
    assert_eq!(
        m,
        boxed(&[(0, 9), (0, 10)], vec![-inner.floor_div(c(11)) + 9])
    );
    assert_eq!(
        m.to_string(),
        "(d0, d1) -> (-((d0 * -11 - d1 + 109) floordiv 11) + 9), domain: d0 in [0, 9], d1 in [0, 10]"
    );
    assert!(map_round_trips(&m));
}

#[test]
fn seed_per_op_maps_parse() {
    // The per-op maps of an indexing analysis (reduce, broadcast, transpose, reverse, scalar
    // reads and writes, pad, slice, reshape, gather), with their domains written out: the
    // printer's canonical form already.
    for text in [
        "(d0, d1, d2) -> (d1), domain: d0 in [0, 9], d1 in [0, 19], d2 in [0, 29]",
        "(d0)[s0, s1] -> (s0, d0, s1), domain: d0 in [0, 19], s0 in [0, 9], s1 in [0, 29]",
        "(d0, d1, d2, d3) -> (d0, d3, d1, d2), domain: d0 in [0, 2], d1 in [0, 5], \
         d2 in [0, 127], d3 in [0, 12287]",
        "(d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3), domain: d0 in [0, 0], d1 in [0, 16], \
         d2 in [0, 8], d3 in [0, 8]",
        "(d0)[s0] -> (s0, d0), domain: d0 in [0, 9], s0 in [0, 255]",
        "(d0) -> (), domain: d0 in [0, 9]",
        "()[s0] -> (s0), domain: s0 in [0, 9]",
        "(d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2), domain: d0 in [0, 4], d1 in [0, 2], \
         d2 in [0, 24]",
        "(d0, d1, d2) -> (d0 - 5, (d1 - 3) floordiv 7, d2 floordiv 2), domain: d0 in [5, 9], \
         d1 in [3, 19], d2 in [0, 49], d2 mod 2 in [0, 0], (d1 - 3) mod 7 in [0, 0]",
        "(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]",
        "(d0, d1, d2) -> (d0 * 2 + (d1 * 4 + d2) floordiv 8, (d1 * 4 + d2) mod 8), \
         domain: d0 in [0, 1], d1 in [0, 3], d2 in [0, 3]",
        "(d0, d1) -> ((d0 * 8 + d1) floordiv 16, ((d0 * 8 + d1) mod 16) floordiv 4, d1 mod 4), \
         domain: d0 in [0, 3], d1 in [0, 7]",
        "(d0, d1) -> (d0, d1 - 50), domain: d0 in [0, 2], d1 in [50, 79]",
        "(d0, d1, d2)[s0] -> (d0, s0, d2), domain: d0 in [0, 3], d1 in [0, 127], \
         d2 in [0, 63], s0 in [0, 255]",
    ] {
        let m = map(text);
        assert_eq!(m.to_string(), text, "already canonical");
        assert!(map_round_trips(&m));
    }
}

#[test]
fn xla_multi_line_layouts_parse_to_the_same_map() {
    let one_line = map(
        "(d0, d1)[s0] -> (d0 floordiv 8, d1 + s0), domain: d0 in [0, 31], d1 in [0, 7], \
         s0 in [0, 3], d1 + s0 in [0, 9]",
    );
    // Current XLA: `domain:` and each item on its own line, commas between items, and the
    // `is_simplified` flag.
    let xla = "(d0, d1)[s0] -> (d0 floordiv 8, d1 + s0),\n\
               domain:\n\
               d0 in [0, 31],\n\
               d1 in [0, 7],\n\
               s0 in [0, 3],\n\
               d1 + s0 in [0, 9],\n\
               is_simplified: false\n";
    assert_eq!(map(xla), one_line);
    // Older XLA: no commas, half-open intervals.
    let old = "(d0, d1)[s0] -> (d0 floordiv 8, d1 + s0)\n\
               domain:\n\
               d0 in [0, 32)\n\
               d1 in [0, 8)\n\
               s0 in [0, 4)\n\
               d1 + s0 in [0, 10)\n";
    assert_eq!(map(old), one_line);
    // Indented, CRLF line ends, spaces everywhere, a trailing comma.
    let odd = "  (  d0 ,d1 ) [ s0 ]->( d0   floordiv 8 ,\r\n   d1+s0 ) ,\r\n  domain :\r\n\
               \td0 in[0,31] ,\r\n\td1 in [ 0 , 7 ],\r\n\ts0 in [0, 3], is_simplified: true,\r\n\
               \td1 + s0 in [0, 9],\r\n";
    assert_eq!(map(odd), one_line);
}

#[test]
fn slash_is_floordiv() {
    let n = Names::canonical();
    for (a, b) in [
        ("d0 / 8", "d0 floordiv 8"),
        (
            "(d0 * 8 + d1) / 16 mod 4",
            "(d0 * 8 + d1) floordiv 16 mod 4",
        ),
        ("-d0 / 3 * 2", "-d0 floordiv 3 * 2"),
    ] {
        assert_eq!(
            parse_expr(a, &n).unwrap(),
            parse_expr(b, &n).unwrap(),
            "{a}"
        );
    }
    assert_eq!(
        map("(d0) -> (d0 / 4), domain: d0 in [0, 15]"),
        map("(d0) -> (d0 floordiv 4), domain: d0 in [0, 15]")
    );
}

#[test]
fn custom_variable_names() {
    let m = map(
        "(bl_x, th_x)[s0, tile]{rt0} -> (bl_x * 128 + th_x * 4 + tile), domain: bl_x in [0, 9], \
         th_x in [0, 31], s0 in [0, 3], tile in [0, 3], rt0 in [0, 1], th_x mod 2 in [0, 0]",
    );
    let (d0, d1, s1) = (Expr::dim(0), Expr::dim(1), Expr::range(1));
    assert_eq!(m.results(), &[d0 * 128 + d1 * 4 + s1]);
    assert_eq!(m.ranges(), &[Interval::new(0, 3); 2]);
    assert_eq!(
        m.to_string(),
        "(d0, d1)[s0, s1]{rt0} -> (d0 * 128 + d1 * 4 + s1), domain: d0 in [0, 9], d1 in [0, 31], \
         s0 in [0, 3], s1 in [0, 3], rt0 in [0, 1], d1 mod 2 in [0, 0]"
    );
    assert!(map_round_trips(&m));
    let names = Names::new().with("x", Var::dim(0)).with("k", Var::range(0));
    assert_eq!(
        parse_expr("x * 4 + k", &names).unwrap(),
        Expr::dim(0) * 4 + Expr::range(0)
    );
}

#[test]
fn special_and_degenerate_maps() {
    assert_eq!(map("KNOWN EMPTY"), IndexingMap::known_empty());
    assert_eq!(map("  UNDEFINED\n"), IndexingMap::undefined());
    let scalar = map("() -> ()");
    assert_eq!(scalar.to_string(), "() -> ()");
    assert_eq!(map("()[]{} -> (), domain:"), scalar);
    assert_eq!(map("() -> (42, -7)").results(), &[c(42), c(-7)]);
    // An empty interval is allowed and makes the map KNOWN EMPTY.
    assert_eq!(
        map("(d0) -> (d0), domain: d0 in [5, 2]"),
        IndexingMap::known_empty()
    );
    assert_eq!(
        map("(d0) -> (d0), domain: d0 in [0, 5], d0 mod 2 in [3, 3]").to_string(),
        "(d0) -> (d0), domain: d0 in [0, 5], d0 mod 2 in [3, 3]"
    );
    // Extreme literals.
    let m = map("(d0) -> (d0 + -9223372036854775808, 9223372036854775807), \
         domain: d0 in [-9223372036854775808, 9223372036854775807]");
    assert_eq!(m.dims(), &[Interval::FULL]);
    assert_eq!(m.results()[1], c(i64::MAX));
    assert!(map_round_trips(&m));
    assert_eq!(
        parse_expr("- 5 - -5", &Names::canonical()).unwrap(),
        c(0),
        "binary minus, then a negative literal"
    );
}

#[test]
fn overflowing_folds_read_back_unfolded() {
    let n = Names::canonical();
    for text in [
        "9223372036854775807 + 1",
        "-(-9223372036854775808)",
        "-9223372036854775808 floordiv -1",
        "d0 - -9223372036854775808",
        "(d0 * 4611686018427387904) * 4",
        "d0 * -9223372036854775808",
    ] {
        let e = parse_expr(text, &n).unwrap();
        assert!(expr_round_trips(e), "{text} printed as {e}");
    }
    let e = parse_expr("9223372036854775807 + 1", &n).unwrap();
    assert!(e.as_const().is_none(), "not wrapped");
}
