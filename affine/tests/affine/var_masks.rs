//! Variable sets of expressions around the width of a node's variable masks (indices past
//! the top bit share it, so queries there must fall back to exact answers or stay conservative).

use affine::{Expr, Var, VarKind};

fn dim(i: u32) -> Var {
    Var {
        kind: VarKind::Dim,
        index: i,
    }
}

#[test]
fn variables_are_exact_for_every_index() {
    for (a, b) in [(0, 5), (30, 31), (31, 32), (29, 40), (33, 70)] {
        let e = Expr::dim(b) * 3 + Expr::dim(a) + Expr::range(a);
        let vars = e.variables();
        let expected = vec![
            dim(a),
            dim(b),
            Var {
                kind: VarKind::Range,
                index: a,
            },
        ];
        assert_eq!(vars, expected, "{e}");
    }
}

#[test]
fn may_use_is_exact_below_the_top_bit_and_never_misses_a_variable() {
    let e = Expr::dim(2) + Expr::dim(45);
    assert!(e.may_use(dim(2)));
    assert!(!e.may_use(dim(3)));
    assert!(e.may_use(dim(45)));
    assert!(!Expr::dim(45).may_use(dim(2)));
    assert!(!e.may_use(Var {
        kind: VarKind::Range,
        index: 45
    }));
}
