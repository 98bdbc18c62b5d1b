//! Sums, products and scans against XLA:CPU's recorded outputs, bit for bit; the evaluator
//! must give the same bits.
//! - `tests/xla_reduce_order` (`tools/xla_reduce_order.py write`): `bf16`/`f16` sums and
//!   products, which XLA folds as a tree of 32-element windows (`hlo-eval`'s `reduce`): rows
//!   (one and two window levels), columns, several reduced dimensions, a fused producer, a
//!   product.
//! - `tests/xla_scan_order` (`tools/xla_scan_order.py write`): cumulative sums and products
//!   (f32, bf16, f16; forward, reverse, exclusive; along the minor and a major dimension),
//!   which XLA scans in blocks of 16 (`hlo::ir::blocked_scan`).

use std::path::Path;

use testkit::corpus::{flatten, inputs, outputs};

#[test]
fn half_sums_match_xla_bit_for_bit() {
    matches_xla_bit_for_bit("tests/xla_reduce_order");
}

#[test]
fn scans_match_xla_bit_for_bit() {
    matches_xla_bit_for_bit("tests/xla_scan_order");
}

/// Every case under `cases` (relative to this crate) evaluated against its recorded outputs.
fn matches_xla_bit_for_bit(cases: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(cases);
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
