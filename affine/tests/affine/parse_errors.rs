//! Parse errors: exact messages, positions and carets (golden file `tests/parse/errors.test`,
//! in testkit's format: each case's expected part is `ParseError`'s `Display`, or
//! `ok: <printed map>` if the input parses; `UPDATE_EXPECT=1` rewrites them), bounded
//! recursion, and no panic on any input.

use std::path::PathBuf;

use affine::gen::{random_map, realistic_maps, MapConfig, Rng};
use affine::parse::{parse_expr, parse_map, Names, ParseError, MAX_NESTING, MAX_TREE_DEPTH};
use quickcheck::QuickCheck;
use testkit::golden;

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/parse/errors.test")
}

fn outcome(input: &str) -> String {
    match parse_map(input) {
        Ok(m) => format!("ok: {m}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn golden_errors() {
    let path = golden_path();
    assert!(golden::read(&path).cases.len() >= 40, "too few cases");
    golden::check_file(&path, |case| outcome(&case.input));
}

fn error(input: &str) -> ParseError {
    match parse_map(input) {
        Ok(m) => panic!("{input:.80} parsed as {m}"),
        Err(e) => e,
    }
}

#[test]
fn nesting_is_bounded() {
    for depth in [MAX_NESTING + 1, 256, 200_000] {
        let text = format!("(d0) -> ({}d0{})", "(".repeat(depth), ")".repeat(depth));
        let e = error(&text);
        assert_eq!(
            e.message,
            format!("expression nested too deeply (more than {MAX_NESTING} levels)")
        );
        assert_eq!((e.line, e.column), (1, 10 + MAX_NESTING));
    }
    // Just inside the limit.
    let depth = MAX_NESTING;
    let text = format!(
        "(d0) -> ({}d0{}), domain: d0 in [0, 1]",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    assert!(parse_map(&text).is_ok());
    // Unary minus and min/max nest too.
    let text = format!("(d0) -> ({}d0)", "-".repeat(100_000));
    assert!(error(&text)
        .message
        .starts_with("expression nested too deeply"));
    let text = format!(
        "(d0) -> ({}d0{})",
        "min(".repeat(100_000),
        ", 1)".repeat(100_000)
    );
    assert!(error(&text)
        .message
        .starts_with("expression nested too deeply"));
}

#[test]
fn tree_depth_is_bounded() {
    let n = Names::canonical();
    let long_sum = vec!["d0"; MAX_TREE_DEPTH as usize + 2].join(" + ");
    let e = parse_expr(&long_sum, &n).unwrap_err();
    assert_eq!(
        e.message,
        format!("expression too deep (more than {MAX_TREE_DEPTH} nested operations)")
    );
    assert_eq!(e.column, 5 * MAX_TREE_DEPTH as usize + 4, "at the operator");
    let long_product = vec!["d0"; 100_000].join(" * ");
    assert!(parse_expr(&long_product, &n).is_err());
    let ok = vec!["d0"; MAX_TREE_DEPTH as usize].join(" + ");
    assert!(parse_expr(&ok, &n).is_ok());
}

#[test]
fn render_adds_the_file_name() {
    let text = "(d0, d1)[s0] -> (d0 + s0),\ndomain:\nd0 in [0, 3],\nd1 in [0, 3]";
    let e = error(text);
    assert_eq!(
        e.render(text, Some("maps/a.txt")),
        "maps/a.txt:1:10: missing bounds for `s0`\n(d0, d1)[s0] -> (d0 + s0),\n         ^"
    );
    assert_eq!(e.render(text, None), e.to_string());
    // A line beyond the given source falls back to the line stored in the error.
    let text = "(d0) -> (d0),\ndomain:\nd0 in [0, 3] x";
    let e = error(text);
    assert_eq!(e.line, 3);
    assert_eq!(e.render("", None), e.to_string());
}

/// The error's position lies in the text (or just past the end of a line) and it renders as
/// three lines.
fn well_placed(text: &str, e: &ParseError) -> bool {
    let lines: Vec<&str> = text.split('\n').collect();
    let ok = e.line >= 1
        && e.line <= lines.len().max(1)
        && e.column >= 1
        && e.column <= lines.get(e.line - 1).map_or(0, |l| l.chars().count()) + 1
        && e.to_string().lines().count() == 3
        && !e.message.is_empty();
    if !ok {
        eprintln!("{text:?}\n{e:?}");
    }
    ok
}

const ALPHABET: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "-",
    "+",
    "*",
    "/",
    "->",
    " ",
    "\n",
    "d0",
    "d1",
    "s0",
    "rt0",
    "x",
    "0",
    "7",
    "-1",
    "9223372036854775808",
    "floordiv",
    "ceildiv",
    "mod",
    "min",
    "max",
    "in",
    "domain",
    "is_simplified",
    "true",
    "KNOWN",
    "EMPTY",
    "UNDEFINED",
    "é",
    "\t",
    "#",
];

/// Mutates printed maps (deleting, duplicating and inserting tokens): no input panics, and
/// every error points into the text.
#[test]
fn mutated_maps_never_panic() {
    fn prop(seed: u64) -> bool {
        let mut rng = Rng::new(seed);
        let base = if rng.chance(1, 3) {
            realistic_maps(seed, 1)[0].to_string()
        } else {
            random_map(&mut rng, &MapConfig::default()).to_string()
        };
        let mut chars: Vec<char> = base.chars().collect();
        for _ in 0..rng.range_i64(1, 4) {
            let at = rng.below(chars.len() as u64 + 1) as usize;
            match rng.below(3) {
                0 if at < chars.len() => {
                    let end = (at + rng.range_i64(1, 6) as usize).min(chars.len());
                    chars.drain(at..end);
                }
                1 if at < chars.len() => {
                    let c = chars[at];
                    chars.insert(at, c);
                }
                _ => {
                    let piece = rng.pick(ALPHABET).unwrap_or(" ");
                    for (i, c) in piece.chars().enumerate() {
                        chars.insert(at + i, c);
                    }
                }
            }
        }
        let text: String = chars.into_iter().collect();
        match parse_map(&text) {
            Ok(m) => parse_map(&m.to_string()).as_ref() == Ok(&m),
            Err(e) => well_placed(&text, &e),
        }
    }
    QuickCheck::new()
        .tests(2000)
        .quickcheck(prop as fn(u64) -> bool);
}

/// Token soup and arbitrary strings: no panic, errors point into the text.
#[test]
fn arbitrary_inputs_never_panic() {
    fn soup(seed: u64) -> bool {
        let mut rng = Rng::new(seed);
        let text: String = (0..rng.below(40))
            .map(|_| rng.pick(ALPHABET).unwrap_or(" "))
            .collect();
        let n = Names::canonical();
        let expr_ok = match parse_expr(&text, &n) {
            Ok(e) => parse_expr(&e.to_string(), &n) == Ok(e),
            Err(e) => well_placed(&text, &e),
        };
        expr_ok
            && match parse_map(&text) {
                Ok(m) => parse_map(&m.to_string()).as_ref() == Ok(&m),
                Err(e) => well_placed(&text, &e),
            }
    }
    fn any(text: String) -> bool {
        match parse_map(&text) {
            Ok(m) => parse_map(&m.to_string()).as_ref() == Ok(&m),
            Err(e) => well_placed(&text, &e),
        }
    }
    QuickCheck::new()
        .tests(3000)
        .quickcheck(soup as fn(u64) -> bool);
    QuickCheck::new()
        .tests(1000)
        .quickcheck(any as fn(String) -> bool);
}
