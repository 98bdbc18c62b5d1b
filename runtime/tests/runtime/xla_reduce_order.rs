//! Sums, products and scans compiled for the CPU against XLA:CPU's recorded outputs, bit for
//! bit:
//! - `bf16`/`f16` sums and products, which the emitters fold in XLA's tree order (rows
//!   through the elemental emitter, columns and several reduced dimensions through the
//!   column kernel, a fused producer, a product): `hlo-eval/tests/xla_reduce_order`, written
//!   by `tools/xla_reduce_order.py write`;
//! - cumulative sums and products (f32, bf16, f16; forward, reverse, exclusive), which the
//!   `reduce-window-rewriter` pass turns into XLA's blocks of 16:
//!   `hlo-eval/tests/xla_scan_order`, written by `tools/xla_scan_order.py write`.

use std::path::{Path, PathBuf};

use hlo::Literal;
use hlo_eval::npy::{adapt_to, read_npz};
use runtime::CompileOptions;

use super::corpus::inputs;

/// The case directories under `hlo-eval/tests/<set>`.
fn cases(set: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../hlo-eval/tests")
        .join(set);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("hlo-eval/tests/<set>")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn compiled_half_sums_match_xla_bit_for_bit() {
    compiled_cases_match_xla_bit_for_bit("xla_reduce_order");
}

#[test]
fn compiled_scans_match_xla_bit_for_bit() {
    compiled_cases_match_xla_bit_for_bit("xla_scan_order");
}

/// Every case of `set` compiled, run and compared with XLA's recorded bits.
fn compiled_cases_match_xla_bit_for_bit(set: &str) {
    let options = CompileOptions {
        cache_dir: Some(Path::new(env!("CARGO_TARGET_TMPDIR")).join("hloc-cache-xla-order")),
        ..CompileOptions::default()
    };
    let dirs = cases(set);
    assert!(dirs.len() >= 10, "cases missing");
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("before_optimizations.hlo")).expect("hlo");
        let module = hlo::parse_module(&text).expect("parse");
        let args = inputs(&module, &dir);
        let exe = runtime::compile(&module, &options).expect("compile");
        let outs = exe.run(&args).expect("run");
        let bytes = std::fs::read(dir.join("outputs.npz")).expect("outputs.npz");
        let want = read_npz(&bytes).expect("valid npz");
        for (k, got) in outs.iter().enumerate() {
            let Literal::Array(g) = got else {
                panic!("{}: out{k} is not an array", dir.display());
            };
            let (_, w) = want
                .iter()
                .find(|(n, _)| *n == format!("out{k}"))
                .expect("recorded output");
            let w = adapt_to(w.clone(), g.shape(), "want").expect("shape");
            assert_eq!(
                g.data(),
                w.data(),
                "{}: out{k} differs from XLA's bits\n{}",
                dir.display(),
                exe.plan().source
            );
        }
    }
}
