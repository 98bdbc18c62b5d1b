//! `tests/golden/gemm_dots.test`: each module after [`plan::DotsToGemms`] (and
//! `gemm_dots_integer.test`: after the CPU's, which keeps integer GEMMs), verified, then its thunks (every rewritten dot a `gemm` thunk); each rewritten module
//! must evaluate as its input does on random arguments (the reference evaluator, within
//! its tolerance; integers exactly). Bless with `UPDATE_EXPECT=1`.

use std::path::Path;

use hlo::pass::Pass;
use testkit::golden;

/// The rewritten module (or why it failed), its thunks, and a line when its values
/// differ from the input's.
fn run(input: &str, pass: plan::DotsToGemms) -> Result<String, String> {
    let before = hlo::parse_module(input).map_err(|e| e.to_string())?;
    let mut m = before.clone();
    let changed = { pass }.run(&mut m).map_err(|e| e.to_string())?;
    hlo::pass::verify::verify(&m).map_err(|e| format!("{e:?}"))?;
    let p = plan::build_program(&m).map_err(|e| e.to_string())?;
    let entry = before.entry();
    let args: Vec<hlo::Literal> = (0..entry.parameters().len())
        .map(|n| {
            let id = entry.parameter(n).expect("parameter");
            hlo_eval::random::random_literal(entry.instr(id).shape(), 7, n as u64, 1 << 26)
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let want = hlo_eval::evaluate(&before, &args).map_err(|e| e.to_string())?;
    let got = hlo_eval::evaluate(&m, &args).map_err(|e| e.to_string())?;
    let values = if hlo_eval::tolerance::literals_match(&got, &want) {
        ""
    } else {
        "\nVALUES DIFFER FROM THE INPUT MODULE'S"
    };
    Ok(format!(
        "changed: {changed}\n{}\n{}{values}",
        hlo::print_module(&m).trim_end(),
        plan::thunks_text(&p).trim_end()
    ))
}

#[test]
fn dots_become_gemms() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gemm_dots.test");
    golden::check_file(&path, |case| {
        run(&case.input, plan::DotsToGemms::default()).unwrap_or_else(|e| format!("error: {e}"))
    });
}

#[test]
fn integer_dots_stay_integer_gemms_on_the_cpu() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gemm_dots_integer.test");
    let pass = plan::DotsToGemms {
        integer_gemms: true,
    };
    golden::check_file(&path, |case| {
        run(&case.input, pass).unwrap_or_else(|e| format!("error: {e}"))
    });
}
