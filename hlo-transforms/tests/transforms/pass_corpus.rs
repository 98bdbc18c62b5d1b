//! Every pass and the default pipeline on every corpus module: no error, and the result
//! prints and parses back (the verifier hook). Prints instruction counts before and after
//! the default pipeline (`cargo test -p hlo-transforms --test transforms pass_corpus -- --nocapture`).

use hlo::pass::{Pass, PassContext};

fn corpus() -> Vec<(String, hlo::Module)> {
    testkit::corpus::programs()
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(p.before()).unwrap();
            let m = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            (p.name, m)
        })
        .collect()
}

fn count(m: &hlo::Module) -> usize {
    m.computations().map(|(_, c)| c.instruction_count()).sum()
}

fn context() -> PassContext {
    let mut ctx = PassContext::new();
    ctx.set_verifier(hlo::pass::verify::verify_hook());
    ctx
}

#[test]
fn every_pass_on_every_corpus_module() {
    let modules = corpus();
    assert!(modules.len() >= 40);
    let mut failures = Vec::new();
    for (name, m) in &modules {
        for mut pass in hlo_transforms::all_passes() {
            let mut m = m.clone();
            let mut p = hlo::pass::Pipeline::new("test");
            let pass_name = pass.name().to_string();
            p.add(std::mem::replace(
                &mut pass,
                Box::new(hlo::pass::Pipeline::new("x")),
            ));
            if let Err(e) = p.run_in(&mut m, &mut context()) {
                failures.push(format!("{name}: {pass_name}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn default_pipeline_on_every_corpus_module() {
    let mut failures = Vec::new();
    for (name, mut m) in corpus() {
        let before = count(&m);
        let mut ctx = context();
        match hlo_transforms::default_pipeline().run_in(&mut m, &mut ctx) {
            Ok(_) => println!("{name:32} {before:6} -> {:6}", count(&m)),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        // The pipeline reaches a fixed point: a second run changes nothing.
        match hlo_transforms::default_pipeline().run_in(&mut m, &mut context()) {
            Ok(false) => {}
            Ok(true) => failures.push(format!("{name}: a second run changed the module")),
            Err(e) => failures.push(format!("{name}: second run: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
