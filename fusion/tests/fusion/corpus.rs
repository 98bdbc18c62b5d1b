//! Every corpus program, as JAX lowered it, fused for both targets: the result verifies,
//! evaluates to the same outputs as the original on random inputs, holds no cycle (the
//! verifier checks), and its explain report covers every fusion and unfused edge.

use crate::support::{check_report_covers, compare, Compared};

#[test]
fn corpus_fuses_and_keeps_results() {
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut fusions = 0;
    for target in ["cpu", "h100"] {
        let device = device::load(target).unwrap();
        for p in testkit::corpus::programs() {
            let text = std::fs::read_to_string(p.before()).unwrap();
            let before = hlo::parse_module(&text).unwrap();
            let mut after = before.clone();
            let report = match fusion::fuse(&mut after, &device) {
                Ok(r) => r,
                Err(e) => {
                    failures.push(format!("{target} {}: {e}", p.name));
                    continue;
                }
            };
            fusions += report.fusions().count();
            if let Err(e) = check_report_covers(&after, &report) {
                failures.push(format!("{target} {}: {e}", p.name));
            }
            let printed = hlo::print_module(&after);
            if let Err(e) = hlo::parse_module(&printed) {
                failures.push(format!(
                    "{target} {}: printed module does not parse: {e}",
                    p.name
                ));
            }
            if target == "cpu" {
                match compare(&before, &after) {
                    Ok(Compared::Same) => compared += 1,
                    Ok(Compared::NotEvaluable(_)) => {}
                    Err(e) => failures.push(format!("{target} {}: {e}", p.name)),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared >= 40, "only {compared} programs compared");
    assert!(fusions > 100, "only {fusions} fusions");
}

/// The fused module of every corpus program (cpu target) run on the recorded inputs gives
/// XLA's recorded outputs, within the evaluator's tolerance, wherever the evaluator runs
/// the original.
#[test]
fn corpus_fused_for_the_cpu_matches_xla() {
    let cpu = device::load("cpu").unwrap();
    let mut failures = Vec::new();
    let mut matched = 0;
    for p in testkit::corpus::programs() {
        let text = std::fs::read_to_string(p.before()).unwrap();
        let mut module = hlo::parse_module(&text).unwrap();
        let Ok(args) = testkit::corpus::inputs(&module, &p.dir) else {
            continue;
        };
        let Ok(want) = testkit::corpus::outputs(&module, &p.dir) else {
            continue;
        };
        if let Err(e) = fusion::fuse(&mut module, &cpu) {
            failures.push(format!("{}: {e}", p.name));
            continue;
        }
        let Ok(got) = hlo_eval::evaluate(&module, &args) else {
            continue;
        };
        let mut leaves = Vec::new();
        testkit::corpus::flatten(got, &mut leaves);
        let same = leaves.len() == want.len()
            && leaves
                .iter()
                .zip(&want)
                .all(|(g, w)| hlo_eval::tolerance::literals_match(g, w));
        if same {
            matched += 1;
        } else {
            failures.push(format!("{}: outputs differ from XLA's", p.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(matched >= 40, "only {matched} programs matched");
}

/// The passes of [`fusion::passes`] run as a pipeline with the verifier after each, and a
/// second run changes nothing (a pass reporting no change leaves the module as it was).
#[test]
fn passes_run_in_a_verified_pipeline_and_settle() {
    use hlo::pass::{Pass, PassContext, Pipeline};
    for target in ["cpu", "h100"] {
        let device = device::load(target).unwrap();
        for p in testkit::corpus::programs().iter().take(20) {
            let text = std::fs::read_to_string(p.before()).unwrap();
            let mut module = hlo::parse_module(&text).unwrap();
            let mut pipeline = Pipeline::new("fusion");
            for pass in fusion::passes(&device) {
                pipeline.add(pass);
            }
            let mut ctx = PassContext::new();
            ctx.set_verifier(hlo::pass::verify::verify_hook());
            pipeline
                .run_in(&mut module, &mut ctx)
                .unwrap_or_else(|e| panic!("{target} {}: {e}", p.name));
            let fused = module.clone();
            let mut again = Pipeline::new("again");
            for pass in fusion::passes(&device) {
                again.add(pass);
            }
            let changed = again.run_in(&mut module, &mut PassContext::new()).unwrap();
            assert!(
                !changed,
                "{target} {}: a second run changed the module",
                p.name
            );
            assert_eq!(
                hlo::print_module(&module),
                hlo::print_module(&fused),
                "{target} {}",
                p.name
            );
        }
    }
}
