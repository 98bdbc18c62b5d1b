//! Text tests of every pass: each `passes/<pass>/*.test` file (testkit's golden format)
//! holds cases, an input module and the module expected after running the pass, printed in
//! full. A `# passes: a,b` header runs those passes
//! instead of the directory's; `# fixed-point` repeats them until nothing changes. An
//! error prints as `error: <message>`. After every pass the module must verify and print
//! and parse back, and when the passes changed the module, the reference evaluator must
//! give the same results before and after on random inputs (integers exactly, floats
//! within `hlo_eval::tolerance`). Bless with `UPDATE_EXPECT=1`.

use testkit::golden;

use std::path::Path;

use hlo::pass::{FixedPoint, Pass, PassContext};
use hlo::{Literal, Module};
use hlo_eval::{random::random_literal, tolerance};

/// How the semantic check of the cases went.
#[derive(Default)]
struct Semantics {
    /// Changed modules whose results were compared.
    compared: usize,
    /// Changed modules the evaluator cannot run (e.g. a custom call), with the reason.
    not_evaluable: Vec<String>,
    /// Changed modules whose results differ or no longer evaluate.
    failures: Vec<String>,
}

/// Evaluates `before` and `after` on the same random arguments and records the outcome.
fn compare_results(line: usize, before: &Module, after: &Module, sem: &mut Semantics) {
    let entry = before.entry();
    let args: Result<Vec<Literal>, _> = entry
        .parameters()
        .iter()
        .enumerate()
        .map(|(n, &id)| random_literal(entry.instr(id).shape(), 1, n as u64, 1 << 22))
        .collect();
    let want = args.map_err(|e| e.to_string()).and_then(|a| {
        Ok((
            hlo_eval::evaluate(before, &a).map_err(|e| e.to_string())?,
            a,
        ))
    });
    let (want, args) = match want {
        Ok(x) => x,
        Err(e) => {
            sem.not_evaluable.push(format!("line {line}: {e}"));
            return;
        }
    };
    sem.compared += 1;
    match hlo_eval::evaluate(after, &args) {
        Ok(got) if tolerance::literals_match(&got, &want) => {}
        Ok(got) => sem
            .failures
            .push(format!("line {line}: results differ: {got:?} vs {want:?}")),
        Err(e) => sem
            .failures
            .push(format!("line {line}: the result no longer evaluates: {e}")),
    }
}

fn run_case(dir_pass: &str, case: &golden::Case, sem: &mut Semantics) -> String {
    let mut module = match hlo::parse_module(&case.input) {
        Ok(m) => m,
        Err(e) => panic!("line {}: input does not parse: {e}", case.line),
    };
    if let Err(e) = hlo::pass::verify::verify(&module) {
        panic!("line {}: input does not verify:\n{e}", case.line);
    }
    let list = case.header_value("passes").unwrap_or(dir_pass);
    let pipeline = hlo_transforms::pipeline_from_list("test", list)
        .unwrap_or_else(|e| panic!("line {}: {e}", case.line));
    let mut ctx = PassContext::new();
    ctx.set_verifier(hlo::pass::verify::verify_hook());
    let before = module.clone();
    let result = if case.has_header("fixed-point") {
        FixedPoint::new(pipeline).run_in(&mut module, &mut ctx)
    } else {
        let mut p = pipeline;
        p.run_in(&mut module, &mut ctx)
    };
    match result {
        Ok(changed) => {
            if changed {
                compare_results(case.line, &before, &module, sem);
            }
            hlo::print_module(&module)
        }
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn pass_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/passes");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("tests/passes exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty());
    let mut sem = Semantics::default();
    for dir in dirs {
        let pass = dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 directory name")
            .to_string();
        assert!(
            hlo_transforms::pass_by_name(&pass).is_some(),
            "tests/passes/{pass}: no pass of that name"
        );
        for file in golden::files(&dir, "test") {
            let shown = file.display().to_string();
            golden::check_file(&file, |case| {
                let mut local = Semantics::default();
                let out = run_case(&pass, case, &mut local);
                sem.compared += local.compared;
                let tag = |m: String| format!("{shown}: {m}");
                sem.not_evaluable
                    .extend(local.not_evaluable.into_iter().map(tag));
                sem.failures.extend(local.failures.into_iter().map(tag));
                out
            });
        }
    }
    eprintln!(
        "pass cases: {} changed modules evaluated alike before and after; {} not evaluable:\n{}",
        sem.compared,
        sem.not_evaluable.len(),
        sem.not_evaluable.join("\n")
    );
    assert!(
        sem.failures.is_empty(),
        "{} cases change results:\n{}",
        sem.failures.len(),
        sem.failures.join("\n")
    );
    assert!(sem.compared >= 75, "only {} cases compared", sem.compared);
}
