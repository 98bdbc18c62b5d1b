//! Every corpus program, before and after XLA's optimizations, evaluated on its recorded
//! inputs and compared with XLA's recorded outputs: integers and `pred` exactly, floats
//! with the one tolerance of `hlo_eval::tolerance` (see its docs for the table).
//!
//! Prints a table (program, variant, status, max abs error). Every corpus file must match.

use std::path::Path;
use testkit::corpus::{flatten, inputs, programs};

use hlo::literal::ArrayLiteral;
use hlo_eval::npy::{adapt_to, read_npz};
use hlo_eval::tolerance;

/// Evaluates one HLO file and compares; returns (ok, status text, max abs error).
fn check(dir: &Path, file: &str) -> (bool, String, f64) {
    let text = match std::fs::read_to_string(dir.join(file)) {
        Ok(t) => t,
        Err(e) => return (false, format!("read error: {e}"), 0.0),
    };
    let module = match hlo::parse_module(&text) {
        Ok(m) => m,
        Err(e) => return (false, format!("parse error: {e}"), 0.0),
    };
    let args = match inputs(&module, dir) {
        Ok(a) => a,
        Err(e) => return (false, format!("inputs: {e}"), 0.0),
    };
    let result = match hlo_eval::evaluate(&module, &args) {
        Ok(r) => r,
        Err(e) => return (false, format!("error: {e}"), 0.0),
    };
    let mut got = Vec::new();
    flatten(result, &mut got);
    let want = match std::fs::read(dir.join("outputs.npz"))
        .map_err(|e| e.to_string())
        .and_then(|b| read_npz(&b).map_err(|e| e.to_string()))
    {
        Ok(w) => w,
        Err(e) => return (false, format!("outputs: {e}"), 0.0),
    };
    if got.len() != want.len() {
        return (
            false,
            format!("{} outputs, XLA has {}", got.len(), want.len()),
            0.0,
        );
    }
    let mut max_err = 0.0f64;
    for (i, g) in got.iter().enumerate() {
        let key = format!("out{i}");
        let Some((_, w)) = want.iter().find(|(k, _)| *k == key) else {
            return (false, format!("outputs.npz lacks {key}"), max_err);
        };
        let Some(g) = g.as_array() else {
            return (false, format!("{key} is not an array"), max_err);
        };
        let w: ArrayLiteral = match adapt_to(w.clone(), g.shape(), &key) {
            Ok(w) => w,
            Err(e) => return (false, format!("{e}"), max_err),
        };
        let c = tolerance::compare(g, &w);
        max_err = max_err.max(c.max_abs_error);
        if !c.matches {
            let (idx, gv, wv) = c.first_mismatch.unwrap_or_default();
            return (
                false,
                format!("MISMATCH {key}[{idx}]: got {gv}, XLA {wv}"),
                max_err,
            );
        }
    }
    (true, "ok".into(), max_err)
}

#[test]
fn corpus_matches_xla() {
    let mut failures = Vec::new();
    let mut passed = 0;
    let mut total = 0;
    println!(
        "{:<30} {:<7} {:<6} {:>10}  detail",
        "program", "variant", "status", "max err"
    );
    for program in programs() {
        let (name, dir) = (program.name, program.dir);
        for (variant, file) in [
            ("before", "before_optimizations.hlo"),
            ("after", "after_optimizations.hlo"),
        ] {
            if !dir.join(file).exists() {
                continue;
            }
            total += 1;
            let (ok, status, err) = check(&dir, file);
            let tag = if ok { "PASS" } else { "FAIL" };
            println!("{name:<30} {variant:<7} {tag:<6} {err:>10.3e}  {status}");
            if ok {
                passed += 1;
            } else {
                failures.push(format!("{name} ({variant}): {status}"));
            }
        }
    }
    println!("{passed} of {total} corpus files match XLA");
    assert!(
        failures.is_empty(),
        "corpus files that do not match XLA:\n{}",
        failures.join("\n")
    );
}
