//! Four simplifications every range-aware simplifier of index expressions must make, built
//! with the expression builders, and the reshape-chain cancellation:
//! 1. `x floordiv k` and `x mod k` where `x` never leaves one period of `k` lose the division;
//! 2. a delinearization of a linearized index (`(100 d0 + 10 d1 + d2) floordiv 100`, ...)
//!    gives back the original indices;
//! 3. a division splits off the terms whose coefficients the divisor divides
//!    (`(16 d0 + 4 d1 + d2) floordiv 8` is `2 d0 + (4 d1 + d2) floordiv 8`);
//! 4. a negated quotient folds when the numerator's range makes it exact.
//!
//! (The rule-by-rule text cases live in tests/rules/*.test.)

use affine::{Expr, IndexingMap, Interval};

fn map(dims: &[(i64, i64)], results: Vec<Expr>) -> IndexingMap {
    IndexingMap::new(
        dims.iter().map(|&(a, b)| Interval::new(a, b)).collect(),
        vec![],
        vec![],
        results,
        vec![],
    )
    .unwrap()
}

fn c(v: i64) -> Expr {
    Expr::constant(v)
}

#[test]
fn seed_1_floordiv_and_mod_within_one_period() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let mut m = map(
        &[(0, 6), (0, 14)],
        vec![d0 + d1.floor_div(c(16)), d1.modulo(c(16))],
    );
    m.simplify();
    assert_eq!(
        m.to_string(),
        "(d0, d1) -> (d0, d1), domain: d0 in [0, 6], d1 in [0, 14]"
    );
}

#[test]
fn seed_2_delinearization_of_a_linearized_index() {
    let (d0, d1, d2) = (Expr::dim(0), Expr::dim(1), Expr::dim(2));
    let lin = d0 * 100 + d1 * 10 + d2;
    let mut m = map(
        &[(0, 9), (0, 9), (0, 9)],
        vec![
            lin.floor_div(c(100)),
            lin.modulo(c(100)).floor_div(c(10)),
            d2.modulo(c(10)),
        ],
    );
    m.simplify();
    assert_eq!(m.results(), &[d0, d1, d2]);
}

#[test]
fn seed_3_partial_division() {
    let (d0, d1, d2) = (Expr::dim(0), Expr::dim(1), Expr::dim(2));
    let lin = d0 * 16 + d1 * 4 + d2;
    let mut m = map(
        &[(0, 9), (0, 9), (0, 9)],
        vec![lin.floor_div(c(8)), lin.modulo(c(8))],
    );
    m.simplify();
    assert_eq!(
        m.to_string(),
        "(d0, d1, d2) -> (d0 * 2 + (d1 * 4 + d2) floordiv 8, (d1 * 4 + d2) mod 8), \
         domain: d0 in [0, 9], d1 in [0, 9], d2 in [0, 9]"
    );
}

#[test]
fn seed_4_negated_quotient() {
    let (d0, d1) = (Expr::dim(0), Expr::dim(1));
    let inner = (d0 * -11 - d1 + 109).floor_div(c(11));
    let mut m = map(&[(0, 9), (0, 10)], vec![-inner + 9]);
    m.simplify();
    assert_eq!(m.results(), &[d0]);
}

#[test]
fn reshape_chain_cancels_to_identity() {
    // f32[10,10,10] -> f32[50,20] -> f32[10,10,10], output-to-input maps composed by hand.
    let (d0, d1, d2) = (Expr::dim(0), Expr::dim(1), Expr::dim(2));
    let linear = d0 * 100 + d1 * 10 + d2;
    let (r0, r1) = (linear.floor_div(c(20)), linear.modulo(c(20)));
    let back = r0 * 20 + r1;
    let mut m = map(
        &[(0, 9), (0, 9), (0, 9)],
        vec![
            back.floor_div(c(100)),
            back.modulo(c(100)).floor_div(c(10)),
            back.modulo(c(10)),
        ],
    );
    m.simplify();
    assert_eq!(m.results(), &[d0, d1, d2]);
}
