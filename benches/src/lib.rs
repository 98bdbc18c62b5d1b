//! Shared inputs for the criterion benches in `benches/benches/`.

use affine::{Expr, IndexingMap, Interval};

/// Output-to-input maps of a reshape `[a, b, c] -> [a * b, c]` followed by its inverse, as an
/// indexing analysis composes them: the pair the fusion pass asks about most.
pub fn reshape_pair(a: i64, b: i64, c: i64) -> (IndexingMap, IndexingMap) {
    let (d0, d1, d2) = (Expr::dim(0), Expr::dim(1), Expr::dim(2));
    let k = Expr::constant;
    let collapse = IndexingMap::new(
        vec![
            Interval::new(0, a - 1),
            Interval::new(0, b - 1),
            Interval::new(0, c - 1),
        ],
        vec![],
        vec![],
        vec![d0 * b + d1, d2],
        vec![],
    )
    .expect("well-formed");
    let expand = IndexingMap::new(
        vec![Interval::new(0, a * b - 1), Interval::new(0, c - 1)],
        vec![],
        vec![],
        vec![d0.floor_div(k(b)), d0.modulo(k(b)), d1],
        vec![],
    )
    .expect("well-formed");
    (collapse, expand)
}
