//! Parser tests: precedence, literals, declarations, errors and their rendering.

use super::error::SNIPPET_WIDTH;
use super::*;

fn c(v: i64) -> Expr {
    Expr::constant(v)
}

#[test]
fn parses_expressions_with_precedence() {
    let n = Names::canonical();
    let (d0, d1, s0) = (Expr::dim(0), Expr::dim(1), Expr::range(0));
    assert_eq!(parse_expr("d0 * 8 + d1", &n).unwrap(), d0 * 8 + d1);
    assert_eq!(parse_expr("d0 + d1 * 8", &n).unwrap(), d0 + d1 * 8);
    assert_eq!(parse_expr("d0 - d1 - s0", &n).unwrap(), d0 - d1 - s0);
    assert_eq!(
        parse_expr("d0 floordiv 4 mod 3", &n).unwrap(),
        d0.floor_div(c(4)).modulo(c(3))
    );
    assert_eq!(
        parse_expr("d0 / 4", &n).unwrap(),
        parse_expr("d0 floordiv 4", &n).unwrap()
    );
    assert_eq!(
        parse_expr("-(d0 floordiv 11) + 9", &n).unwrap(),
        -d0.floor_div(c(11)) + 9
    );
    assert_eq!(
        parse_expr("max(min(d0, 4), d1 ceildiv 2)", &n).unwrap(),
        d0.min(c(4)).max(d1.ceil_div(c(2)))
    );
    assert_eq!(parse_expr("-11 d0 - d1", &n).unwrap(), d0 * -11 - d1);
    assert_eq!(parse_expr("-9223372036854775808", &n).unwrap(), c(i64::MIN));
    assert_eq!(parse_expr("rt3", &n).unwrap(), Expr::runtime(3));
}

#[test]
fn canonical_names_are_exact() {
    assert_eq!(canonical_var("d12"), Some(Var::dim(12)));
    assert_eq!(canonical_var("rt0"), Some(Var::runtime(0)));
    assert_eq!(canonical_var("s01"), None);
    assert_eq!(canonical_var("d"), None);
    assert_eq!(canonical_var("d99999999999"), None);
    assert_eq!(canonical_var("x0"), None);
}

#[test]
fn custom_names() {
    let n = Names::new()
        .with("tid", Var::dim(0))
        .with("k", Var::range(2));
    assert_eq!(
        parse_expr("tid * 4 + k", &n).unwrap(),
        Expr::dim(0) * 4 + Expr::range(2)
    );
    let e = parse_expr("d0", &n).unwrap_err();
    assert_eq!(e.message, "unknown variable `d0`");
}

#[test]
fn error_display_points_at_the_column() {
    let e = parse_map("(d0) -> (d7)").unwrap_err();
    assert_eq!(
        e.to_string(),
        "1:10: unknown variable `d7`\n(d0) -> (d7)\n         ^"
    );
    assert_eq!(
        e.render("(d0) -> (d7)", Some("m.txt")),
        "m.txt:1:10: unknown variable `d7`\n(d0) -> (d7)\n         ^"
    );
}

#[test]
fn zero_divisors_are_rejected_where_they_stand() {
    for (text, col) in [
        ("(d0) -> (d0 floordiv 0)", 13),
        ("(d0) -> (d0 mod (2 - 2))", 13),
        ("(d0) -> (d0 ceildiv 0)", 13),
        ("(d0) -> (d0 / 0)", 13),
    ] {
        let e = parse_map(text).unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.column),
            ("division by zero", col),
            "{text}"
        );
    }
    assert!(parse_map("(d0) -> (d0 * 0), domain: d0 in [0, 3]").is_ok());
}

#[test]
fn long_lines_are_windowed() {
    let text = format!("(d0) -> ({} + d9)", vec!["d0"; 100].join(" + "));
    let e = parse_map(&text).unwrap_err();
    let shown = e.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[1].starts_with("...") && lines[1].chars().count() <= SNIPPET_WIDTH + 6);
    let caret = lines[2].chars().count() - 1;
    assert_eq!(&lines[1][caret..caret + 2], "d9");
}
