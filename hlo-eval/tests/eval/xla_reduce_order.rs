//! Sums and products of `bf16`/`f16` against XLA:CPU's recorded outputs, bit for bit: XLA
//! folds them as a tree of 32-element windows (`hlo-eval`'s `reduce`), the evaluator must
//! give the same bits. The modules and outputs are `tools/xla_reduce_order.py write`'s: rows
//! (one and two window levels), columns, several reduced dimensions, a fused producer, a
//! product.

use std::path::Path;

use testkit::corpus::{flatten, inputs, outputs};

#[test]
fn half_sums_match_xla_bit_for_bit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xla_reduce_order");
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/xla_reduce_order")
        .map(|e| e.expect("entry").path())
        .collect();
    names.sort();
    assert!(names.len() >= 10, "cases missing in {}", root.display());
    for dir in names {
        let text = std::fs::read_to_string(dir.join("before_optimizations.hlo")).expect("hlo");
        let module = hlo::parse_module(&text).expect("parse");
        let args = inputs(&module, &dir).expect("inputs");
        let want = outputs(&module, &dir).expect("outputs");
        let mut got = Vec::new();
        flatten(
            hlo_eval::evaluate(&module, &args).expect("evaluate"),
            &mut got,
        );
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            let (g, w) = (g.as_array().expect("array"), w.as_array().expect("array"));
            assert_eq!(
                g.data(),
                w.data(),
                "{}: the evaluator's bits differ from XLA's",
                dir.display()
            );
        }
    }
}
