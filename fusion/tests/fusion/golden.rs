//! Text tests of fused modules: each `tests/cases/*.test` case is an input module and the
//! expected fused module (blank lines dropped) followed by `explain:` and the text report.
//! A `# target: NAME` header picks the device (default `cpu`). Every fused module must
//! verify, print and parse back, and evaluate to the same results as the input on random
//! arguments. An error prints as `error: <message>`. Bless with `UPDATE_EXPECT=1`.

use std::path::Path;

use crate::support::{check_report_covers, compare, Compared};

fn run_case(case: &testkit::golden::Case) -> String {
    let before = match hlo::parse_module(&case.input) {
        Ok(m) => m,
        Err(e) => panic!("line {}: input does not parse: {e}", case.line),
    };
    let target = case.header_value("target").unwrap_or("cpu");
    let device = device::load(target).unwrap_or_else(|e| panic!("line {}: {e}", case.line));
    let mut after = before.clone();
    let report = match fusion::fuse(&mut after, &device) {
        Ok(r) => r,
        Err(e) => return format!("error: {e}"),
    };
    let printed = hlo::print_module(&after);
    if let Err(e) = hlo::parse_module(&printed) {
        panic!(
            "line {}: the fused module does not parse back: {e}",
            case.line
        );
    }
    if let Err(e) = check_report_covers(&after, &report) {
        panic!("line {}: {e}", case.line);
    }
    match compare(&before, &after) {
        Ok(Compared::Same | Compared::NotEvaluable(_)) => {}
        Err(e) => panic!("line {}: {e}", case.line),
    }
    let mut out: Vec<&str> = printed.lines().filter(|l| !l.trim().is_empty()).collect();
    out.push("explain:");
    let text = report.to_text();
    out.extend(text.lines());
    out.join("\n")
}

#[test]
fn golden_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let files = testkit::golden::files(&dir, "test");
    assert!(!files.is_empty());
    for f in files {
        testkit::golden::check_file(&f, run_case);
    }
}
